"""The failures a sweep learns from, on the controller: read from this sweep's failure.json files
and from the store's verdicts of earlier sweeps, and what they rule out (sweep/store/failures.py has
the rule and why it holds).

A failure that teaches (out of memory, a rejected flag) is a verdict: its point is not started
again, and the points it rules out are not started at all. Each is also kept in the store,
`<results>/.store/verdicts/<edge>.json`, under the point's edge identity: the measurement
identity (sweep/store/store.py) less the point's own parameters (the hardware class, the build, the
model and drafter, the role's base configuration: everything but budget, topk, window and the
algorithm, which the rule compares itself). The next sweep under the same edge starts none of
them either. `-e fresh=true` forgets what earlier invocations and sweeps learnt (this
invocation's own failures still count).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.records import write_atomic
from sweep import layout
from sweep.config.points import Point
from sweep.store import failures, store
from sweep.store.failures import Failure, RuledOut

VERDICTS = "verdicts"


@dataclass(frozen=True)
class Lessons:
    """What the plan learnt: the failures that teach (this sweep's and the store's), the points
    that failed for such a cause here (not retried), and the points ruled out."""

    taught: tuple[Failure, ...] = ()
    failed: frozenset[str] = frozenset()
    ruled: Mapping[str, RuledOut] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {pid: r.to_dict() for pid, r in self.ruled.items()}


def _verdict_file(root: Path, edge: str) -> Path:
    return root / store.STORE / VERDICTS / f"{edge}.json"


def recall(root: Path, edge: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(_verdict_file(root, edge).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []


def remember(root: Path, edge: str, entry: dict[str, Any]) -> None:
    """Adds a verdict under `edge` (one per point and cause; never drops another's)."""
    with store.lock(root):
        path = _verdict_file(root, edge)
        path.parent.mkdir(parents=True, exist_ok=True)
        key = (entry.get("point"), entry.get("cause"))
        kept = [e for e in recall(root, edge) if (e.get("point"), e.get("cause")) != key]
        kept.append({**entry, "recorded": time.time()})
        write_atomic(path, json.dumps(kept, indent=1) + "\n")


def failure_of(point: Point, record: Mapping[str, Any]) -> Failure | None:
    """The failure a failure.json records, when its cause teaches."""
    cause = record.get("cause")
    if cause not in failures.TEACHING:
        return None
    flags = tuple(str(f) for f in record.get("flags") or ())
    return Failure(point, str(cause), str(record.get("host_class") or ""), flags)


def _from_store(entry: Mapping[str, Any], points: Mapping[str, Point]) -> Failure | None:
    server = entry.get("server") or {}
    try:
        env = tuple(sorted((str(k), str(v)) for k, v in (server.get("env") or {}).items()))
        p = Point(
            str(server["algorithm"]),
            int(server["budget"]),
            int(server["topk"]),
            int(server["window"]),
            env,
        )
    except (KeyError, TypeError, ValueError):
        return None
    # the sweep's own point of that server (its class pin included), where it has one
    p = next((q for q in points.values() if q.server() == p.server()), p)
    return failure_of(p, entry)


def learn(
    sweep_dir: Path,
    points: Sequence[Point],
    identities: Mapping[str, Mapping[str, Any]],
    classes: Collection[str],
    fresh: bool,
    started: float,
    until: float | None = None,
) -> Lessons:
    """The lessons for `points` in `sweep_dir`: its failures that teach (with `fresh`, only
    those of this invocation, from `started` on) and the store's verdicts under the points'
    edges (none with `fresh`). `classes`: the hardware classes of the sweep's hosts; a failure on
    one class rules points out only when every host is of that class ("" : unknown, any).
    `until`: only the failures that ended before it (a search's: it learns from this
    invocation's as they come, for_search)."""
    by_id = {p.point_id: p for p in points}
    taught: list[Failure] = []
    failed: set[str] = set()
    for p in points:
        record = layout.read_json(sweep_dir / p.point_id / layout.FAILURE_FILE)
        if record is None or layout.point_status(sweep_dir, p.point_id) != "failed":
            continue
        if fresh and not layout.failed_since(sweep_dir, p.point_id, started):
            continue
        if until is not None and layout.failed_since(sweep_dir, p.point_id, until):
            continue
        f = failure_of(p, record)
        if f is not None:
            taught.append(f)
            failed.add(p.point_id)
    if not fresh:
        root = sweep_dir.parent
        edges = {str(i["edge"]) for i in identities.values() if i.get("edge")}
        for edge in sorted(edges):
            for entry in recall(root, edge):
                # this sweep's own verdicts are its failure.json files, read above under the
                # same `fresh` and `until`: from the store they would come back unfiltered,
                # and a search would replan its rounds as if it had known them from the start
                if entry.get("sweep") == sweep_dir.name:
                    continue
                f = _from_store(entry, by_id)
                if f is not None and f.point.point_id not in failed:
                    taught.append(f)
    usable = [f for f in taught if _applies(f, classes)]
    ruled = failures.ruled_out(points, usable, _flags_of(identities))
    # a point that failed for good in an earlier sweep is not started here either
    for f in usable:
        pid = f.point.point_id
        if pid in by_id and pid not in failed:
            ruled.setdefault(pid, RuledOut(pid, f))
    return Lessons(tuple(usable), frozenset(failed), ruled)


def _applies(f: Failure, classes: Collection[str]) -> bool:
    """A failure on one hardware class teaches only where every host is of that class (an
    unknown class, "", on either side: it does)."""
    distinct = {c for c in classes if c}
    return not f.where or not distinct or distinct == {f.where}


def _flags_of(
    identities: Mapping[str, Mapping[str, Any]],
) -> Callable[[Point], list[str] | None]:
    """The flag names the role renders for a point (None: its host published no identity)."""

    def flags_of(p: Point) -> list[str] | None:
        launch = (identities.get(p.point_id) or {}).get("launch") or {}
        flags = launch.get("flags")
        return None if flags is None else [str(f[0]) for f in flags if f]

    return flags_of


def for_search(
    sweep_dir: Path,
    points: Sequence[Point],
    identities: Mapping[str, Mapping[str, Any]],
    classes: Collection[str],
    fresh: bool,
    started: float,
) -> tuple[frozenset[str], Callable[[str], frozenset[str]]]:
    """A search's exclusions (sweep/search/model_search.py replay): the points ruled out or failed
    for good before this invocation, and the rule by which a failure of this invocation rules out
    the points after it."""
    before = learn(sweep_dir, points, identities, classes, fresh, started, until=started)
    by_id = {p.point_id: p for p in points}
    flags_of = _flags_of(identities)

    def rules(pid: str) -> frozenset[str]:
        record = layout.read_json(sweep_dir / pid / layout.FAILURE_FILE) or {}
        f = failure_of(by_id[pid], record) if pid in by_id else None
        if f is None or not _applies(f, classes):
            return frozenset()
        return frozenset(failures.ruled_out(points, [f], flags_of))

    return frozenset(before.ruled) | before.failed, rules


def remember_failure(sweep_dir: Path, info: Mapping[str, Any]) -> None:
    """After a failed point is recorded: a failure that teaches is kept in the store under the
    point's edge, for the sweeps after this one."""
    from sweep.store.record import measured_identity

    point = info["point"]
    record = layout.read_json(sweep_dir / str(point["id"]) / layout.FAILURE_FILE) or {}
    if record.get("cause") not in failures.TEACHING:
        return
    edge = (measured_identity(point, info.get("host_class")) or {}).get("edge")
    if not edge:
        return  # the host published no identity: nothing to key the verdict by
    entry = {
        "point": point["id"],
        "server": point.get("server"),
        "cause": record["cause"],
        "flags": list(record.get("flags") or ()),
        "host_class": info.get("host_class") or record.get("host_class") or "",
        "sweep": sweep_dir.name,
    }
    remember(sweep_dir.parent, str(edge), entry)
