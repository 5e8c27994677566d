"""What a failed start says about the points not started yet, and what a sweep learns from its
failures and from the store's verdicts of earlier sweeps.

A start fails for one of five causes (failure.json `cause`, read from the journal by
module_utils/sglang_failure_cause.py): out of memory, a rejected flag, a crash (an exception),
a readiness timeout, or the host lost. Two of them say something about other points:

- Out of memory. The memory a speculative server takes beside the target's weights and KV pool
  grows with the draft budget (tokens in the tree of every request in the batch), the topk (the
  tree's width: more candidates per position), the drafter's sliding window (its KV cache) and
  the largest batch the server captures CUDA graphs for (a role setting, part of the identity).
  None of them ever shrinks it, so a point that ran out of memory rules out every point of the
  same algorithm and environment that is at least as large on every one of those axes, on the
  same hardware class, build and model (one sweep's hosts of one class; across sweeps, one
  store identity less the point's own flags: sweep/store/store.py). Where memory is flat along an
  axis (a build whose drafter keeps a fixed cache whatever the window) the rule still holds: the
  larger point takes the same memory and fails the same way. It breaks where memory FALLS as an
  axis rises (a build that switches to a cheaper layout past some window or width) and where an
  out-of-memory failure is not the configuration's (another process holding the card's memory):
  then a point that would run is ruled out. `-e fresh=true` forgets the verdicts of earlier
  sweeps.
- A rejected flag. The build refused a flag the role rendered: every point that renders that
  flag is refused too, whatever its size.

A crash, a readiness timeout or a lost host says nothing about another point: the point is tried
once more on another host where there is one, then recorded failed (sweep/cli/plan.py). A start
that ran says how close it came to the edge: sweep/search/memory.py.

A failure that teaches (out of memory, a rejected flag) is a verdict: its point is not started
again, and the points it rules out are not started at all. Each is also kept in the store
(sweep/store/record.py remember_failure), `<results>/.store/verdicts/<edge>.json`, under the
point's edge identity: the measurement identity (sweep/store/store.py) less the point's own
parameters (the hardware class, the build, the model and drafter, the role's base configuration:
everything but budget, topk, window and the algorithm, which the rule compares itself). The next
sweep under the same edge starts none of them either. `-e fresh=true` forgets what earlier
invocations and sweeps learnt (this invocation's own failures still count).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

from bench.records import write_atomic
from sweep import layout
from sweep.config.points import Point
from sweep.store import store

CLASSIFIER = Path(__file__).resolve().parents[2] / "module_utils" / "sglang_failure_cause.py"


@functools.cache
def classifier() -> ModuleType:
    """module_utils/sglang_failure_cause.py, the project's one classifier and the causes' words
    (it runs on the host inside sglang_ready too), loaded by path: no ansible import in it."""
    spec = importlib.util.spec_from_file_location("sglang_failure_cause", CLASSIFIER)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


OUT_OF_MEMORY: str = classifier().OUT_OF_MEMORY
REJECTED_FLAG: str = classifier().REJECTED_FLAG
CRASH: str = classifier().CRASH
READINESS_TIMEOUT: str = classifier().READINESS_TIMEOUT
HOST_LOST: str = classifier().HOST_LOST
CAUSES: tuple[str, ...] = classifier().CAUSES
# the causes that say something about other points: never retried, they rule points out
TEACHING = (OUT_OF_MEMORY, REJECTED_FLAG)
# not a failed start: the server served, and the bench refused the sweep's own parameters before
# any load (its exit 2, 4 or 5), as it would at every point: the sweep stops (sweep_failed.yml)
BENCH_REFUSED = "bench refused"
MEMORY_AXES = ("budget", "topk", "window")


@dataclass(frozen=True)
class Failure:
    """A failed start: the point, its cause (one of CAUSES), the hardware class it failed on
    ("" when unknown) and, for a rejected flag, the flags the build refused."""

    point: Point
    cause: str
    where: str = ""
    flags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.cause not in CAUSES:
            raise ValueError(f"cause={self.cause!r}: must be one of {', '.join(CAUSES)}")


@dataclass(frozen=True)
class RuledOut:
    """A point not started because of `failure`."""

    point_id: str
    failure: Failure

    def line(self) -> str:
        """The report's words for it."""
        f = self.failure
        on = f" on class {f.where}" if f.where else ""
        if f.cause == OUT_OF_MEMORY:
            return f"not run: at least as large as {f.point.point_id}, which ran out of memory{on}"
        refused = ", ".join(f.flags) or "a flag"
        return f"not run: renders {refused}, which {f.point.point_id} had refused{on}"

    def to_dict(self) -> dict[str, object]:
        f = self.failure
        return {
            "point": self.point_id,
            "by": f.point.point_id,
            "cause": f.cause,
            "where": f.where,
            "flags": list(f.flags),
            "why": self.line(),
        }


def at_least_as_large(p: Point, failed: Point) -> bool:
    """Whether `p` takes at least the memory `failed` took: the same algorithm, environment and
    class pin, and no smaller on any memory axis. A baseline (no speculation) is never."""
    if p.is_baseline or failed.is_baseline:
        return False
    if (p.algorithm, p.env, p.pin) != (failed.algorithm, failed.env, failed.pin):
        return False
    return all(getattr(p, a) >= getattr(failed, a) for a in MEMORY_AXES)


def rules_out(
    failure: Failure, p: Point, flags_of: Callable[[Point], Collection[str] | None] | None = None
) -> bool:
    """Whether `failure` rules out `p` (never the failed point itself). A rejected flag rules out
    the points whose rendered flags (`flags_of`: None where unknown) hold one it refused."""
    if p.point_id == failure.point.point_id:
        return False
    if failure.cause == OUT_OF_MEMORY:
        return at_least_as_large(p, failure.point)
    if failure.cause == REJECTED_FLAG and failure.flags and flags_of is not None:
        rendered = flags_of(p)
        return rendered is not None and any(f in rendered for f in failure.flags)
    return False


def ruled_out(
    points: Iterable[Point],
    failures: Sequence[Failure],
    flags_of: Callable[[Point], Collection[str] | None] | None = None,
) -> dict[str, RuledOut]:
    """point id -> the first failure (in the order given) that rules the point out. A point
    that failed itself is not in it."""
    failed = {f.point.point_id for f in failures}
    out: dict[str, RuledOut] = {}
    for p in points:
        if p.point_id in failed:
            continue
        for f in failures:
            if rules_out(f, p, flags_of):
                out[p.point_id] = RuledOut(p.point_id, f)
                break
    return out


def dominated(points: Iterable[Point]) -> Callable[[str], frozenset[str]]:
    """For a search whose every failure is out of memory (the benchmark's edge surfaces): the
    points a failure at a point id rules out."""
    by_id = {p.point_id: p for p in points}

    def rule(pid: str) -> frozenset[str]:
        f = Failure(by_id[pid], OUT_OF_MEMORY)
        return frozenset(q for q, p in by_id.items() if rules_out(f, p))

    return rule


def retry_elsewhere(cause: str | None, attempts: int, other_hosts: int) -> bool:
    """Whether a point that failed `attempts` times in this invocation, the last with `cause`,
    is tried once more: not for a cause that teaches (it would fail again), only once, and only
    where another host can take it."""
    return cause not in TEACHING and attempts < 2 and other_hosts > 0


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
        key = (entry.get("point"), entry.get("cause"))
        kept = [e for e in recall(root, edge) if (e.get("point"), e.get("cause")) != key]
        kept.append({**entry, "recorded": time.time()})
        write_atomic(path, json.dumps(kept, indent=1) + "\n")


def failure_of(point: Point, record: Mapping[str, Any]) -> Failure | None:
    """The failure a failure.json records, when its cause teaches."""
    cause = record.get("cause")
    if cause not in TEACHING:
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
    records: layout.Records,
    points: Sequence[Point],
    identities: Mapping[str, Mapping[str, Any]],
    classes: Collection[str],
    fresh: bool,
    started: float,
    until: float | None = None,
) -> Lessons:
    """The lessons for `points` in `sweep_dir` (`records`: their directories, layout.recorded):
    its failures that teach (with `fresh`, only those of this invocation, from `started` on) and
    the store's verdicts under the points' edges (none with `fresh`). `classes`: the hardware
    classes of the sweep's hosts; a failure on one class rules points out only when every host
    is of that class ("" : unknown, any).
    `until`: only the failures that ended before it (a search's: it learns from this
    invocation's as they come, for_search)."""
    by_id = {p.point_id: p for p in points}
    taught: list[Failure] = []
    failed: set[str] = set()
    for p in points:
        r = records[p.point_id]
        if r.status != "failed" or (fresh and r.failed_at < started):
            continue
        if until is not None and r.failed_at >= until:
            continue
        f = failure_of(p, r.failure)
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
    ruled = ruled_out(points, usable, _flags_of(identities))
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


class ForSearch(NamedTuple):
    """What failures tell a search (sweep/search/model_search.py replay): the points ruled out or
    failed for good before this invocation; the rule by which a failure of this invocation rules
    out the points after it; and the points' sizes in memory (dominated: a round runs smallest
    first, and an edge a failure shows is probed from below)."""

    excluded: frozenset[str]
    rules: Callable[[str], frozenset[str]]
    sizes: Callable[[str], frozenset[str]]


def for_search(
    sweep_dir: Path,
    records: layout.Records,
    points: Sequence[Point],
    identities: Mapping[str, Mapping[str, Any]],
    classes: Collection[str],
    fresh: bool,
    started: float,
) -> ForSearch:
    """A search's lessons (ForSearch) for `points`, as learn reads them."""
    before = learn(sweep_dir, records, points, identities, classes, fresh, started, until=started)
    by_id = {p.point_id: p for p in points}
    flags_of = _flags_of(identities)

    def rules(pid: str) -> frozenset[str]:
        f = failure_of(by_id[pid], records[pid].failure) if pid in by_id else None
        if f is None or not _applies(f, classes):
            return frozenset()
        return frozenset(ruled_out(points, [f], flags_of))

    return ForSearch(frozenset(before.ruled) | before.failed, rules, dominated(points))
