"""`sweep.yml -e search=model`: the model search (sweep/search/model_search.py's rules) replayed
from what the sweep recorded whenever the online planner (sweep/cli/planner.py) is asked for a run.

- Every run is the sweep's own bench matrix, recorded in the sweep's directory like a grid
  sweep's points (the report, `winner` and deploy.yml read it as they read any sweep).
- A run's value for the search, one per repetition: the geometric mean over the cells of the
  report's objective (throughput, TPOT p50 or goodput, sweep/config/objectives.py), scale-free
  across concurrencies. A point whose record gives no value counts as failed.
- The baseline is not searched: it runs once, after the search's runs.
- Resuming: a complete run counts whenever it was measured; a failed one only when it failed in
  this invocation (`sweep plan` stamps its start), so a rerun retries it as a grid rerun retries a
  failed point. After a stop (stop_on_failure, or a bench that refused) nothing more runs.
- Warm starts: a point measured before under the same identity (sweep/store/store.py; copied into
  the sweep, `reused_from`) is known to the search from its first round and costs no restart
  (measurements).
- `search.json` in the sweep's directory: the strategy, the rounds so far (describe_model), the
  failed runs, and, once the search is over, restarts and time against the full grid
  (search_state.account, from the recorded load and bench times); its verdict: settled or not,
  the largest gain an unmeasured point may have, the points it would measure next.
- search=halving and search=descent were retired (docs/search.md): a sweep that names one, or a
  setting only they had, is refused by name before anything runs (sweep/config/params.py
  search_settings, with the model search's own settings); the sweeps they recorded still report
  (sweep/report/report.py, sweep/report/render.py).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench import more_repetitions
from bench import objective as definitions
from bench.more_repetitions import MoreRule
from bench.records import load_records
from sweep import layout
from sweep.config.objectives import Objective
from sweep.search import grid_axes, memory, model_search
from sweep.search.model_search import ModelSearch, ModelState
from sweep.search.search_state import Accounting, Measurement, account
from sweep.store import failures
from sweep.store.record import RECORDS


def replay(
    points: Sequence[Any],
    measured: list[Measurement],
    strat: ModelSearch,
    warm: Sequence[Measurement],
    lessons: failures.ForSearch,
    sweep_dir: Path,
) -> ModelState[Any]:
    """The search's state, the points placed on the grid's axes first (a point left out, a twin,
    is a hole in the grid); `warm`: the warm starts; `lessons`: what failures rule out and the
    points' sizes in memory (sweep/store/failures.py for_search); `sweep_dir`: where the runs'
    journals tell the share of its memory a point's run used (memory_of), which the model search
    fits."""
    coords = {p.point_id: (p.algorithm, p.budget, p.topk, p.window, p.env) for p in points}
    grid = grid_axes.Grid.of(coords)
    excluded, rules, sizes = lessons
    share = memory_of(sweep_dir)
    return model_search.replay(points, grid, measured, strat, warm, excluded, rules, sizes, share)


def memory_of(sweep_dir: Path) -> Callable[[str], float | None]:
    """A point's memory share (sweep/search/memory.py memory_share_of) from the journal its run left
    in the sweep (read once a point: the planner replays at every host's ask)."""

    @functools.cache
    def share(pid: str) -> float | None:
        return memory.memory_share_of(sweep_dir / pid / "journal.log")

    return share


def run_values(point_dir: Path, objective: Objective) -> tuple[float, ...]:
    """One value per repetition (bench.objective.run_values: the geometric mean over the run's
    cells); () when the record has none."""
    try:
        records = load_records(point_dir / RECORDS)
    except (OSError, ValueError):
        return ()
    return definitions.run_values(
        objective.name, point_dir / RECORDS, records, objective.slo_ttft_ms, objective.slo_tpot_ms
    )


def measurements(
    points: Sequence[Any],
    records: layout.Records,
    objective: Objective,
    since: float,
    found: dict[str, Path],
) -> tuple[list[Measurement], list[Measurement]]:
    """What the search knows of `points` (`records`: their directories, layout.recorded), each
    directory read once: its own runs (complete, and runs failed since `since`), and its warm
    starts with values: each point copied into the sweep from an earlier measurement under the
    same identity (complete, `reused_from`), and each point `found` in the store
    (sweep/store/store.py lookup, point id -> its directory) not copied yet."""
    measured, warm = [], []
    for p in points:
        r = records[p.point_id]
        if r.status == "complete":
            values = run_values(r.dir, objective)
            measured.append(Measurement(p.point_id, 0, values))
            known = values if r.point.get("reused_from") else ()
        else:
            if r.status == "failed" and r.failed_at >= since:
                measured.append(Measurement(p.point_id, 0, ()))
            source = found.get(p.point_id)
            known = run_values(source, objective) if source is not None else ()
        if known:
            warm.append(Measurement(p.point_id, 0, known))
    return measured, warm


def more_rule(
    strat: ModelSearch,
    known: Sequence[Measurement],
    objective: Objective,
    repetitions: int,
) -> MoreRule | None:
    """The rule a model search's next runs are benched under (bench/more_repetitions.py): the
    best mean among the points `known` (measured, in a round not complete yet too, and warm
    starts: the search's answer if it ended now), its geometric mean and repetitions, the pooled
    noise of them all, and the search's tie margin. Before any point has values the rule has no
    best (the run is the best so far: it goes on while the noise says it needs to). None when
    max_repetitions is at or below the bench's `repetitions` (no more to add)."""
    if strat.max_repetitions <= repetitions:
        return None
    values = {m.point_id: m.values for m in known if m.values}
    sign = 1.0 if strat.higher_is_better else -1.0
    best = max(values.values(), key=lambda v: sign * statistics.fmean(v)) if values else None
    if best is not None and min(best) <= 0:
        return None
    ss, df = more_repetitions.pool(values.values())
    return MoreRule(
        objective.name,
        None if best is None else math.exp(statistics.fmean(math.log(v) for v in best)),
        0 if best is None else len(best),
        ss,
        df,
        strat.max_repetitions,
        objective.slo_ttft_ms,
        objective.slo_tpot_ms,
        margin=strat.margin,
    )


def accounting(
    state: ModelState[Any], records: layout.Records, repetitions: int = 1
) -> Accounting | None:
    """Restarts and seconds of the search against the full grid, from the recorded load times
    (of the runs that restarted) and bench times; None before any run has both. A run counts its
    own bench time (more repetitions, or one when the first put the point clearly out:
    bench/more_repetitions.py), and the grid's is the median seconds a repetition took, times
    the bench's own `repetitions`."""
    loads: dict[str, float] = {}
    actual: dict[str, float] = {}
    failed: dict[str, float] = {}
    for rnd in state.rounds:
        for p in rnd.failed:  # its seconds to failure: the load it spent, on a real host
            wall = (records[p.point_id].failure.get("timings") or {}).get("wall_s")
            failed[p.point_id] = float(wall) if isinstance(wall, (int, float)) else 0.0
        for run in rnd.runs:
            if run.point.point_id in failed:
                continue
            t = records[run.point.point_id].point.get("timings") or {}
            if t.get("restarted") and isinstance(t.get("load_s"), (int, float)):
                loads.setdefault(run.point.point_id, float(t["load_s"]))
            if isinstance(t.get("bench_s"), (int, float)):
                actual[run.point.point_id] = float(t["bench_s"])
    if not actual or not loads:
        return None
    bench = statistics.median(actual.values())
    n = {pid: state.by_id[pid].n for pid in actual if pid in state.by_id}
    per_rep = [actual[pid] / n[pid] for pid in n if n[pid] > 0]
    if per_rep:
        bench = statistics.median(per_rep) * max(repetitions, 1)
    return account(state, loads, bench, actual, failed, tuple(state.ruled_out))


def search_info(
    records: layout.Records,
    strat: ModelSearch,
    started: float,
    state: ModelState[Any],
    stopped: bool,
    objective: Objective,
    repetitions: int = 1,
) -> dict[str, Any]:
    """search.json's content; `repetitions`: the bench's own (the runs go on past them while
    max_repetitions is above)."""
    failed = [f"{p.point_id}@L{rnd.level}" for rnd in state.rounds for p in rnd.failed]
    warm = [p.point_id for p in state.warm]
    info: dict[str, Any] = {
        "search": strat.name,
        "strategy": {
            "margin": strat.margin,
            "confidence": strat.confidence,
            "batch": strat.batch,
            # None: no run goes on past the bench's own repetitions
            "max_repetitions": (
                strat.max_repetitions if strat.max_repetitions > repetitions else None
            ),
            "max_restarts": strat.max_restarts,
            "higher_is_better": strat.higher_is_better,
        },
        "started": started,
        "done": state.done or stopped,
        "stopped": stopped,
        "rounds": describe_model(state),
        # each round's points (the report draws them on the grid: sweep/report/search_plot.py)
        "round_points": [[r.point.point_id for r in rnd.runs] for rnd in state.rounds],
        "restarts": state.restarts,
        "grid_restarts": len(state.points),
        "failed": failed,
        "best": state.best.point_id if state.best is not None else None,
        # the points searched, in order (the planner bounds an invocation's runs by them), and
        # the objective they were ranked by
        "points": [p.point_id for p in state.points],
        "objective": {
            "name": objective.name,
            "slo_ttft_ms": objective.slo_ttft_ms,
            "slo_tpot_ms": objective.slo_tpot_ms,
        },
        # the points measured (or to be), the warm starts included: what the report expects
        "full": list(
            dict.fromkeys([*warm, *(r.point.point_id for rnd in state.rounds for r in rnd.runs)])
        ),
        "warm": warm,
    }
    v = state.verdict
    if v is not None:
        info["verdict"] = {**dataclasses.asdict(v), "next": list(v.next)}
    acc = accounting(state, records, repetitions) if state.done else None
    if acc is not None:
        info["cost"] = {
            "line": acc.line(),
            "search": dataclasses.asdict(acc.spent),
            "grid": dataclasses.asdict(acc.grid),
        }
    return info


def stopped(sweep_dir: Path, since: float) -> bool:
    """A stop in this invocation (stop_on_failure, or a bench that refused the sweep's parameters):
    the sweep's marker written since it started."""
    try:
        return (sweep_dir / layout.STOP).stat().st_mtime >= since
    except OSError:
        return False


def full_benches(info: dict[str, Any] | None) -> set[str] | None:
    """The points a search that is over measured (or meant to) with the sweep's own bench, from
    its search.json (a retired halving's finalists: its screening runs are in sibling sweeps);
    None while it runs, or for a sweep that is not a search."""
    if not info or not info.get("done") or not isinstance(info.get("full"), list):
        return None
    return {str(pid) for pid in info["full"]}


def describe_model(state: ModelState[Any]) -> list[str]:
    """The report's lines: the warm starts, one line per round, the points left out and why,
    the verdict with the points it would measure next, then the outcome."""
    lines = []
    if state.warm:
        ids = ", ".join(p.point_id for p in state.warm)
        lines.append(f"warm start (measured before under the same identity, no restart): {ids}")
    for rnd in state.rounds:
        if not rnd.runs:
            continue
        ids = ", ".join(r.point.point_id for r in rnd.runs)
        line = f"round {rnd.index} level 0: {ids} ({sum(r.restart for r in rnd.runs)} restarts)"
        if rnd.ranking:
            line += f"; best so far {rnd.ranking[0].point_id}"
        if rnd.failed:
            line += f"; failed {', '.join(p.point_id for p in rnd.failed)}"
        lines.append(line)
    verdict = state.verdict
    if state.done and verdict is not None:
        measured = set(state.by_id) | {p.point_id for rnd in state.rounds for p in rnd.failed}
        if state.ruled_out:
            by: dict[str, list[str]] = {}
            for pid, src in state.ruled_out.items():
                by.setdefault(src, []).append(pid)
            for src, outs in by.items():
                what = f"by the failure of {src}" if src else "by failures before the search"
                lines.append(f"ruled out ({what}), never run: {', '.join(outs)}")
        if state.over_memory:
            fits = ", ".join(f"{pid} ({v:.2f})" for pid, v in state.over_memory.items())
            lines.append(
                "not started (the memory the runs used, fitted, puts it over the limit: its "
                f"share): {fits}"
            )
        never = [
            p.point_id
            for p in state.points
            if p.point_id not in measured
            and p.point_id not in state.ruled_out
            and p.point_id not in state.over_memory
        ]
        if never:
            why = (
                f"by the model none beats the best by more than {verdict.margin:.1%}"
                if verdict.settled
                else "the restart budget ran out"
            )
            lines.append(f"not measured ({why}): {', '.join(never)}")
        line = verdict.reason
        if verdict.next:
            line += f"; next to measure: {', '.join(verdict.next)}"
        lines.append(line)
    best = state.best
    lines.append(
        "pending" if not state.done else f"best: {best.point_id if best else 'none (all failed)'}"
    )
    return lines
