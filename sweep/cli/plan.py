"""The sweep plan: which server configurations are still to run, in which order, read from the
inputs (sweep/cli/inputs.py) and what is recorded on disk (complete points, earlier measurements
under the same identity in sweep/store/store.py, a search's runs so far). It is a function of those
and of the invocation's start (`started`: a run failed since then is not retried in it), so the
online planner (sweep/cli/planner.py) recomputes it whenever a host asks for its next run."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from sweep import layout
from sweep.cli.inputs import Inputs, read_inputs
from sweep.config import load, workload
from sweep.config.params import SweepInputError
from sweep.config.points import Point, pin_baselines, same_servers
from sweep.store import claims, failures, store


@dataclass
class Plan:
    name: str
    sweep_dir: Path
    bench: dict[str, Any]
    points: list[Point]
    status: dict[str, str]
    hosts: list[str]
    stop_on_failure: bool
    run_started: float = field(default_factory=time.time)
    # point id -> identity (with its digest), for the points whose host published one
    identities: dict[str, dict[str, Any]] = field(default_factory=dict)
    # point id -> an earlier complete measurement under the same identity (store.earlier)
    reuse: dict[str, Path] = field(default_factory=dict)
    # final: a grid with nothing pending, or a search that is over (its baselines may be left)
    final: bool = False
    stopped: bool = False  # a stop (stop_on_failure, a bench that refused): nothing more runs
    # search=model: its state (sweep/search/search_rounds.py search_info), kept in search.json
    search: dict[str, Any] | None = None
    classes: dict[str, str] = field(default_factory=dict)
    # the user's dataset, sampled: written under <results>/.workloads/ for the hosts to get
    dataset: workload.Dataset | None = None
    # point id -> (the point that starts the same server, why): not run, recorded as its copy
    same: dict[str, tuple[str, str]] = field(default_factory=dict)
    # a model search's runs: bench with more repetitions while the point may be the best (the
    # rule, bench/more_repetitions.py, as --more-repetitions takes it)
    more: str | None = None
    # failures that teach (out of memory, a rejected flag) and the points they rule out
    lessons: failures.Lessons = field(default_factory=failures.Lessons)

    @property
    def pending(self) -> list[Point]:
        done = ("complete", "reused", "same", "ruled_out")
        return [
            p
            for p in self.points
            if self.status[p.point_id] not in done and p.point_id not in self.lessons.failed
        ]

    def summary(self) -> str:
        complete = sum(1 for s in self.status.values() if s == "complete")
        retries = sum(
            1 for pid, s in self.status.items() if s == "failed" and pid not in self.lessons.failed
        )
        reused = f", {len(self.reuse)} reused from earlier sweeps" if self.reuse else ""
        if self.same:
            reused += (
                f", {len(self.same)} the same server as another ("
                + "; ".join(f"{p} = {rep}: {why}" for p, (rep, why) in self.same.items())
                + ")"
            )
        if self.lessons.ruled or self.lessons.failed:
            reused += (
                f", {len(self.lessons.failed)} failed for good (out of memory or a rejected "
                f"flag), {len(self.lessons.ruled)} ruled out by such failures"
            )
        busy = min(len(self.hosts), len(self.pending))
        if not self.pending:
            counted = (
                f"all {len(self.points)} points complete"
                if complete + len(self.same) + len(self.reuse) == len(self.points)
                else f"{len(self.points)} points, {complete} complete"
            )
            return f"sweep {self.name}: {counted}{reused}, nothing to run"
        return (
            f"sweep {self.name}: {len(self.points)} points, {complete} complete{reused}, "
            f"{len(self.pending)} to run ({retries} retried after failure) on {busy} host(s)"
        )

    def to_dict(self) -> dict[str, Any]:
        def point(p: Point) -> dict[str, Any]:
            out = {
                "id": p.point_id,
                "server": p.server(),
                "baseline": p.is_baseline,
                "status": self.status[p.point_id],
                "identity": self.identities.get(p.point_id),
            }
            if p.pin:
                out["hosts"] = [h for h in self.hosts if self.classes.get(h) == p.pin]
            if p.point_id in self.reuse:
                out["reused_from"] = store.origin(self.reuse[p.point_id])
            if p.point_id in self.same:
                rep, why = self.same[p.point_id]
                out["same_as"] = {"point": rep, "why": why}
            return out

        # a search that is over has only its baselines left to run (they run after the finalists)
        over = self.final and self.search is not None
        queue = [point(p) for p in self.pending if (p.is_baseline or not over) and not self.stopped]
        if self.more is not None:
            for item in queue:
                if not item["baseline"]:
                    item["more_args"] = ["--more-repetitions", self.more]
        return {
            "sweep": self.sweep_dict(),
            "points": [point(p) for p in self.points],
            # the runs still to hand out, in order (sweep/cli/planner.py claims them one by one)
            "queue": queue,
            "final": self.final,
            "search": self.search,
            "hosts": self.hosts,
            "summary": self.summary(),
        }

    def sweep_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "dir": str(self.sweep_dir),
            "bench": self.bench,
            "bench_args": load.bench_args(self.bench),
            "stop_on_failure": self.stop_on_failure,
            "run_started": self.run_started,
            "total": len(self.points),
        }
        if self.dataset is not None:
            out["dataset_file"] = str(workload.sample_file(self.sweep_dir.parent, self.dataset))
        return out


def make_plan(inp: dict[str, Any]) -> Plan:
    """The plan now: of a grid, its points not complete; of the model search, its pending runs
    (sweep/search/search_rounds.py). `started` (epoch seconds, default now) is the invocation's
    start."""
    given = read_inputs(inp)
    if not given.hosts:
        raise SweepInputError("no hosts to run the sweep on (is the host group empty?)")
    # after the name, which is the points' as given: the pins are the host set's
    points = pin_baselines(given.points, given.hosts, given.classes)
    same = same_servers(points, given.block_size)
    # read once, for the search's steps and the sweep's plan after it
    records = layout.recorded(given.sweep_dir, [p.point_id for p in points])
    identities = store.point_identities(points, given.capabilities, given.bench, given.by_class)
    # measured before under the same identity, in the sweep or the store: reused, or warm starts
    todo = {pid: i for pid, i in identities.items() if records[pid].status != "complete"}
    found = {} if given.fresh else store.earlier(given.sweep_dir, todo)
    known: Known = (records, same, identities, found)
    # the model search chooses the points to plan now; the grid plans them all
    chosen = _search_choice(given, points, known) if given.search != "grid" else None
    plan = _sweep_plan(given, chosen.points if chosen else points, known)
    plan.final = not plan.pending if chosen is None else chosen.final
    if chosen is not None:
        plan.stopped, plan.more, plan.search = chosen.stopped, chosen.more, chosen.info
    plan.dataset = given.dataset
    return plan


# what make_plan read of every point: its directory, its twin (same_servers), its identity, an
# earlier measurement under that identity (store.earlier)
Known = tuple[
    layout.Records, dict[str, tuple[str, str]], dict[str, dict[str, Any]], dict[str, Path]
]


def _sweep_plan(inp: Inputs, points: list[Point], known: Known) -> Plan:
    """The plan of `points` in the sweep's directory with its bench parameters."""
    records, same, every, found = known
    ids = {p.point_id for p in points}
    same = {pid: twin for pid, twin in same.items() if pid in ids}
    identities = {p.point_id: every[p.point_id] for p in points if p.point_id in every}
    status: dict[str, str] = {p.point_id: records[p.point_id].status for p in points}
    for pid in same:
        if status[pid] != "complete":
            status[pid] = "same"
    lessons = failures.learn(
        inp.sweep_dir, records, points, identities, inp.host_classes, inp.fresh, inp.started
    )
    for pid in lessons.ruled:
        if status[pid] not in ("complete", "same"):
            status[pid] = "ruled_out"
    done = ("complete", "same", "ruled_out")
    reuse = {p: d for p, d in found.items() if p in identities and status[p] not in done}
    status.update(dict.fromkeys(reuse, "reused"))
    return Plan(
        inp.name,
        inp.sweep_dir,
        inp.bench,
        points,
        status,
        inp.hosts,
        inp.stop_on_failure,
        run_started=inp.started,
        identities=identities,
        reuse=reuse,
        classes=inp.classes,
        same=same,
        lessons=lessons,
    )


class Choice(NamedTuple):
    """The model search's choice: the points to plan, over or stopped, its rule and its state."""

    points: list[Point]
    final: bool
    stopped: bool
    more: str | None
    info: dict[str, Any]


def _search_choice(inp: Inputs, points: list[Point], known: Known) -> Choice:
    """The model search now: its pending runs, with the baseline and the warm starts to adopt;
    when it is over (or stopped), every point it measured, final."""
    from sweep.search import search_rounds

    strat, objective = inp.strategy, inp.ranked
    assert strat is not None  # read_inputs made it: search=model
    sweep_dir, bench = inp.sweep_dir, inp.bench
    records, twins, every, earlier = known
    # a point that starts the same server as another is not an axis of the search: it is not
    # searched, and gets its twin's measurement when that one is final
    searched = [p for p in points if not p.is_baseline and p.point_id not in twins]
    baseline = [p for p in points if p.is_baseline]
    if not searched:
        raise SweepInputError(f"search={strat.name}: no point to search (only the baseline)")
    since = inp.started
    identities = {p.point_id: every[p.point_id] for p in searched if p.point_id in every}
    # warm starts: the points measured before under the same identity, in the sweep or the store
    found = {pid: d for pid, d in earlier.items() if pid in identities}
    lessons = failures.for_search(
        sweep_dir, records, searched, identities, inp.host_classes, inp.fresh, since
    )
    measured, warm = search_rounds.measurements(searched, records, objective, since, found)
    try:
        state = search_rounds.replay(searched, measured, strat, warm, lessons, sweep_dir)
    except ValueError as e:
        raise SweepInputError(f"search={strat.name}: {e}") from None
    stopped = search_rounds.stopped(sweep_dir, since)
    info = search_rounds.search_info(
        records, strat, since, state, stopped, objective, bench["repetitions"]
    )
    # warm starts not copied into the sweep yet: planned with the round, so found and copied
    adopt = [p for p in searched if p.point_id in {m.point_id for m in warm}]
    if state.pending and not stopped:
        rule = search_rounds.more_rule(strat, [*measured, *warm], objective, bench["repetitions"])
        more = rule.to_json() if rule is not None else None
        return Choice([r.point for r in state.pending] + baseline + adopt, False, False, more, info)
    finals = [r.point for rnd in state.rounds for r in rnd.runs]
    finals += [p for p in adopt if p not in finals]
    final_ids = {p.point_id for p in finals}
    finals += [p for p in points if twins.get(p.point_id, ("",))[0] in final_ids]
    return Choice(finals + baseline, True, stopped, None, info)


def record_run(plan: Plan) -> None:
    """sweep.json: written before any point runs; keeps every point ever planned. Points measured
    before under the same identity are copied in (store.adopt) and count as complete."""
    layout.clear_staging(plan.sweep_dir)
    claims.clear(plan.sweep_dir)
    for pid, source in plan.reuse.items():
        store.adopt(source, plan.sweep_dir, pid, plan.identities[pid]["digest"])
    previous = layout.read_sweep(plan.sweep_dir) or {}
    known = list(previous.get("points") or [])
    for p in plan.points:
        if p.point_id not in [k["id"] for k in known]:
            known.append({"id": p.point_id, "server": p.server(), "baseline": p.is_baseline})
    runs = list(previous.get("runs") or [])
    runs.append(
        {
            "started": plan.run_started,
            "points": [p.point_id for p in plan.points],
            "to_run": [p.point_id for p in plan.pending],
            "hosts": plan.hosts,
        }
    )
    layout.write_sweep(
        plan.sweep_dir,
        {
            "name": plan.name,
            "created": previous.get("created", plan.run_started),
            "bench": plan.bench,
            "points": known,
            "runs": runs,
            **({"ruled_out": previous["ruled_out"]} if previous.get("ruled_out") else {}),
        },
    )


def record_ruled(plan: Plan) -> None:
    """sweep.json's `ruled_out`: every point a failure ruled out in any invocation, and why (the
    report lists them); nothing is dropped but a point measured since."""
    sweep = layout.read_sweep(plan.sweep_dir)
    if sweep is None:
        return
    ruled = dict(sweep.get("ruled_out") or {})
    ruled.update(plan.lessons.to_dict())
    ruled = {pid: r for pid, r in ruled.items() if plan.status.get(pid) != "complete"}
    if ruled != (sweep.get("ruled_out") or {}):
        layout.write_sweep(plan.sweep_dir, {**sweep, "ruled_out": ruled})


def settle_same(plan: Plan) -> list[str]:
    """Records each point that starts the same server as another once that other one is
    complete: its measurement, copied (nothing earlier is moved or deleted), point.json naming it
    (`same_as`). Returns the points recorded now."""
    done = []
    for pid, (twin, why) in plan.same.items():
        recorded = layout.recorded(plan.sweep_dir, [twin, pid])
        if recorded[twin].status != "complete" or recorded[pid].status == "complete":
            continue
        point = next(p for p in plan.points if p.point_id == pid)
        ident = plan.identities.get(pid)
        store.copy_point(
            plan.sweep_dir / twin,
            plan.sweep_dir,
            pid,
            {"same_as": {"point": twin, "why": why}, "server": point.server()},
            ident["digest"] if ident else None,
        )
        done.append(pid)
    return done
