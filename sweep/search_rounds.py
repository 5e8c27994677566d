"""`sweep.yml -e search=halving|descent|model`: a search (successive halving, sweep/search.py's
rules, coordinate descent, sweep/descent.py's, or the model search, sweep/model_search.py's)
replayed from what the level's sweeps on disk recorded whenever the online planner
(sweep/planner.py) is asked for a run. Descent and the model search have one level, the last.

- Levels: the last level is the sweep's own bench matrix, recorded in the sweep's directory like
  a grid sweep's points (the report, `winner` and deploy.yml read it as they read any sweep).
  A screening level runs the same cells with output lengths halved once per level below the last
  (at least MIN_OUTPUT_LEN tokens), recorded in its own sibling sweep `<sweep>.screen<level>`
  (so a later sweep reuses a screening run as it reuses any point, sweep/store.py).
- A run's value for the search, one per repetition: the geometric mean over the level's cells of
  the report's objective (throughput, TPOT p50 or goodput, sweep/objectives.py), scale-free
  across concurrencies. A point whose record gives no value counts as failed.
- The baseline is not searched: it runs once, at the last level, after the finalists; with
  halving, first in the round before the last (its finalists may all be benched on, leaving no
  last round; first, so that the configuration running after that round is its last screened).
- Run-on (halving): in the round before the last level each screened point may be benched in full
  right away, on the server still running it (search.runs_on decides, on the controller, from the
  screening runs recorded so far: run_on, asked by the planner when the host that screened it asks
  for its next run); a finalist benched that way is not started again. The round's queue items
  carry what that needs (`run_on`: the last level's sweep and the point's identity there).
- Resuming: a complete run counts whenever it was measured; a failed one only when it failed in
  this invocation (`sweep plan` stamps its start), so a rerun retries it as a grid rerun retries a
  failed point. After a stop_on_failure stop nothing more runs.
- Warm starts (the model search): a point measured before under the same identity (sweep/store.py;
  copied into the sweep, `reused_from`) is known to the search from its first round and costs no
  restart (warm_starts).
- `search.json` in the sweep's directory: the strategy, the rounds so far (search.describe), the
  failed runs, and, once the search is over, restarts and time against the full grid
  (search.account, from the recorded load and bench times); for the model search also its
  verdict: settled or not, the largest gain an unmeasured point may have, the points it would
  measure next.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import more_repetitions
from bench import objective as definitions
from bench.more_repetitions import MAX_REPETITIONS, MoreRule
from bench.records import load_records, write_json
from sweep import descent, failures, grid_axes, layout, memory, model_search, objectives, search
from sweep.descent import Descent
from sweep.model_search import ModelSearch
from sweep.objectives import Objective
from sweep.params import SweepInputError, as_bool
from sweep.record import RECORDS

SEARCH_FILE = "search.json"
# the command line's settings of a search (none of them means anything to search=grid)
SEARCH_KEYS = ("halving_eta", "halving_levels", "halving_run_on", "max_restarts", "max_repetitions")
MIN_OUTPUT_LEN = 16
MAX_LEVELS = 3  # a screening level halves the outputs; three levels is already one eighth


class SearchInputError(SweepInputError):
    pass


def _int(name: str, raw: Any, low: int, high: int | None = None) -> int:
    ok = isinstance(raw, int) and not isinstance(raw, bool)
    if isinstance(raw, str) and raw.strip().isdigit():
        raw, ok = int(raw.strip()), True
    if not ok or raw < low or (high is not None and raw > high):
        bound = f"{low}..{high}" if high is not None else f">= {low}"
        raise SearchInputError(f"{name}={raw}: must be an integer {bound}")
    return int(raw)


def given_setting(cli: dict[str, Any], key: str) -> Any:
    """A command-line value as given; None when absent or blank (the playbook passes "")."""
    raw = cli.get(key)
    return None if raw is None or (isinstance(raw, str) and not raw.strip()) else raw


def strategy(
    cli: dict[str, Any], objective: Objective, name: str = "halving", hosts: int = 1
) -> search.Strategy:
    """The search's settings from the command line: for halving, halving_eta (keep 1/eta per
    round, default 3), halving_levels (2 or 3, default 2: one screening level) and
    halving_run_on (default false); for every search, max_restarts (no limit); for the model
    search, max_repetitions (bench/more_repetitions.py MAX_REPETITIONS). The model search's
    rounds have a point a host (`hosts`, the sweep's)."""

    def given(key: str) -> Any:
        return given_setting(cli, key)

    if name != "model" and given("max_repetitions") is not None:
        raise SearchInputError(
            f"max_repetitions={given('max_repetitions')}: only with search=model"
        )
    budget_raw = given("max_restarts")
    budget = None if budget_raw is None else _int("max_restarts", budget_raw, 1)
    if name in ("descent", "model"):
        for key in ("halving_eta", "halving_levels", "halving_run_on"):
            if given(key) is not None:
                raise SearchInputError(f"{key}={given(key)}: only with search=halving")
        if name == "model":
            reps_raw = given("max_repetitions")
            reps = MAX_REPETITIONS if reps_raw is None else _int("max_repetitions", reps_raw, 1)
            return ModelSearch(
                budget, objective.higher_is_better, batch=max(hosts, 1), max_repetitions=reps
            )
        return Descent(budget, objective.higher_is_better)
    eta_raw = given("halving_eta")
    try:
        eta = 3.0 if eta_raw is None else float(eta_raw)
    except (TypeError, ValueError):
        raise SearchInputError(f"halving_eta={eta_raw}: not a number") from None
    levels_raw = given("halving_levels")
    levels = 2 if levels_raw is None else _int("halving_levels", levels_raw, 2, MAX_LEVELS)
    try:
        run_on = as_bool("halving_run_on", given("halving_run_on"), search.Halving.run_on)
    except ValueError as e:
        raise SearchInputError(str(e)) from None
    try:
        return search.Halving(eta, levels, budget, objective.higher_is_better, run_on)
    except ValueError as e:
        raise SearchInputError(str(e).replace("eta=", "halving_eta=", 1)) from None


def replay(
    points: Sequence[Any],
    measured: list[search.Measurement],
    strat: search.Strategy,
    warm: Sequence[search.Measurement] = (),
    excluded: Collection[str] = (),
    rules: Callable[[str], Iterable[str]] | None = None,
    memory: Callable[[str], float | None] | None = None,
) -> search.State[Any]:
    """The search's state; descent and the model search place the points on the grid's axes
    first (a point left out, a twin, is a hole in the grid); `warm`: the model search's warm
    starts; `excluded`, `rules`: what failures rule out (the model search's; sweep/verdicts.py);
    `memory`: the share of its memory a point's run used (memory_of), which the model search
    fits."""
    if isinstance(strat, (Descent, ModelSearch)):
        coords = {p.point_id: (p.algorithm, p.budget, p.topk, p.window, p.env) for p in points}
        grid = grid_axes.Grid.of(coords)
        if isinstance(strat, ModelSearch):
            # the points' sizes in memory: a round runs smallest first, and an edge a failure
            # shows is probed from below (as benchmarks/search_surfaces.py measures it)
            sizes = failures.dominated(points)
            return model_search.replay(
                points, grid, measured, strat, warm, excluded, rules, sizes, memory
            )
        return descent.replay(points, grid, measured, strat)
    assert isinstance(strat, search.Halving)
    return search.replay(points, measured, strat)


def memory_of(sweep_dir: Path) -> Callable[[str], float | None]:
    """A point's memory share (sweep/memory.py memory_share_of) from the journal its run left in
    the sweep (read once a point: the planner replays at every host's ask)."""
    cache: dict[str, float | None] = {}

    def share(pid: str) -> float | None:
        if pid not in cache:
            cache[pid] = memory.memory_share_of(sweep_dir / pid / "journal.log")
        return cache[pid]

    return share


def level_bench(bench: dict[str, Any], level: int, levels: int) -> dict[str, Any]:
    """The bench parameters of a level: the sweep's own at the last, shorter outputs below."""
    if level == levels - 1:
        return bench
    factor = 2 ** (levels - 1 - level)
    shorter = sorted({max(MIN_OUTPUT_LEN, int(n) // factor) for n in bench["output_len"]})
    return {**bench, "output_len": shorter}


def level_name(name: str, level: int, levels: int) -> str:
    return name if level == levels - 1 else f"{name}.screen{level}"


def level_dir(sweep_dir: Path, level: int, levels: int) -> Path:
    return sweep_dir.with_name(level_name(sweep_dir.name, level, levels))


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
    sweep_dir: Path,
    strat: search.Strategy,
    objective: Objective,
    since: float,
) -> list[search.Measurement]:
    """What the level sweeps recorded for `points`: complete runs, and runs failed since `since`."""
    out = []
    for level in range(strat.levels):
        d = level_dir(sweep_dir, level, strat.levels)
        for p in points:
            status = layout.point_status(d, p.point_id)
            if status == "complete":
                out.append(
                    search.Measurement(p.point_id, level, run_values(d / p.point_id, objective))
                )
            elif status == "failed" and layout.failed_since(d, p.point_id, since):
                out.append(search.Measurement(p.point_id, level, ()))
    return out


def more_rule(
    strat: search.Strategy,
    known: Sequence[search.Measurement],
    objective: Objective,
    repetitions: int,
) -> MoreRule | None:
    """The rule a model search's next runs are benched under (bench/more_repetitions.py): the
    best mean among the points `known` (measured, in a round not complete yet too, and warm
    starts: the search's answer if it ended now), its geometric mean and repetitions, the pooled
    noise of them all, and the search's tie margin. Before any point has values the rule has no
    best (the run is the best so far: it goes on while the noise says it needs to). None for
    another search, or when max_repetitions is at or below the bench's `repetitions` (no more to
    add)."""
    if not isinstance(strat, ModelSearch) or strat.max_repetitions <= repetitions:
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


def warm_starts(
    points: Sequence[Any], sweep_dir: Path, objective: Objective, found: dict[str, Path]
) -> list[search.Measurement]:
    """The model search's warm starts: each point copied into the sweep from an earlier
    measurement under the same identity (complete, `reused_from`), and each point `found` in the
    store (sweep/store.py lookup, point id -> its directory) not copied yet; those with values."""
    out = []
    for p in points:
        pid = p.point_id
        if layout.point_status(sweep_dir, pid) == "complete":
            meta = layout.read_json(sweep_dir / pid / layout.POINT_FILE) or {}
            source = sweep_dir / pid if meta.get("reused_from") else None
        else:
            source = found.get(pid)
        values = run_values(source, objective) if source is not None else ()
        if values:
            out.append(search.Measurement(pid, 0, values))
    return out


def _timings(d: Path, point_id: str) -> dict[str, Any]:
    return (layout.read_json(d / point_id / layout.POINT_FILE) or {}).get("timings") or {}


def accounting(
    state: search.State[Any], sweep_dir: Path, repetitions: int = 1
) -> search.Accounting | None:
    """Restarts and seconds of the search against the full grid, from the recorded load times
    (of the runs that restarted) and the median bench time of each level; None before any run
    at the last level. The model search's runs count their own bench time (more repetitions,
    or one when the first put the point clearly out: bench/more_repetitions.py), and the grid's
    is the median seconds a repetition took, times the bench's own `repetitions`."""
    levels = state.strategy.levels
    loads: dict[str, float] = {}
    bench: list[list[float]] = [[] for _ in range(levels)]
    actual: dict[str, float] = {}
    failed: dict[str, float] = {}
    for rnd in state.rounds:
        for p in rnd.failed:  # its seconds to failure: the load it spent, on a real host
            record = layout.read_json(
                level_dir(sweep_dir, rnd.level, levels) / p.point_id / layout.FAILURE_FILE
            )
            wall = ((record or {}).get("timings") or {}).get("wall_s")
            failed[p.point_id] = float(wall) if isinstance(wall, (int, float)) else 0.0
        for run in rnd.runs:  # a full bench taken on is at the last level, in its round
            if run.point.point_id in failed:
                continue
            t = _timings(level_dir(sweep_dir, run.level, levels), run.point.point_id)
            if t.get("restarted") and isinstance(t.get("load_s"), (int, float)):
                loads.setdefault(run.point.point_id, float(t["load_s"]))
            if isinstance(t.get("bench_s"), (int, float)):
                bench[run.level].append(float(t["bench_s"]))
                actual[run.point.point_id] = float(t["bench_s"])
    if not bench[-1] or not loads:
        return None
    per_level = [statistics.median(b) if b else 0.0 for b in bench]
    if not isinstance(state, model_search.ModelState):
        return search.account(state, loads, per_level, failed=failed)
    n = {pid: state.by_id[pid].n for pid in actual if pid in state.by_id}
    per_rep = [actual[pid] / n[pid] for pid in n if n[pid] > 0]
    if per_rep:
        per_level[-1] = statistics.median(per_rep) * max(repetitions, 1)
    return search.account(state, loads, per_level, actual, failed, tuple(state.ruled_out))


def search_info(
    sweep_dir: Path,
    strat: search.Strategy,
    started: float,
    state: search.State[Any],
    stopped: bool,
    objective: Objective,
    repetitions: int = 1,
) -> dict[str, Any]:
    """search.json's content; `repetitions`: the bench's own (a model search's runs go on past
    them while max_repetitions is above)."""
    failed = [f"{p.point_id}@L{rnd.level}" for rnd in state.rounds for p in rnd.failed]
    settings: dict[str, Any] = {}
    if isinstance(strat, search.Halving):
        settings = {"eta": strat.eta, "run_on": strat.run_on}
    elif isinstance(strat, ModelSearch):
        settings = {
            "margin": strat.margin,
            "confidence": strat.confidence,
            "batch": strat.batch,
            # None: no run goes on past the bench's own repetitions
            "max_repetitions": (
                strat.max_repetitions if strat.max_repetitions > repetitions else None
            ),
        }
    warm = [p.point_id for p in state.warm] if isinstance(state, model_search.ModelState) else []
    last = strat.last_level
    info: dict[str, Any] = {
        "search": strat.name,
        "strategy": {
            **settings,
            "levels": strat.levels,
            "max_restarts": strat.max_restarts,
            "higher_is_better": strat.higher_is_better,
        },
        "started": started,
        "done": state.done or stopped,
        "stopped": stopped,
        "rounds": (
            describe_model(state)
            if isinstance(state, model_search.ModelState)
            else search.describe(state)
        ),
        "restarts": state.restarts,
        "grid_restarts": len(state.points),
        "failed": failed,
        "best": state.best.point_id if state.best is not None else None,
        # what run_on needs to decide as the search would: the points in order, the objective
        "points": [p.point_id for p in state.points],
        "objective": {
            "name": objective.name,
            "slo_ttft_ms": objective.slo_ttft_ms,
            "slo_tpot_ms": objective.slo_tpot_ms,
        },
        # the points measured (or to be) at the last level, the full benches taken on and the
        # warm starts included
        "full": list(
            dict.fromkeys(
                [
                    *warm,
                    *(
                        r.point.point_id
                        for rnd in state.rounds
                        for r in rnd.runs
                        if r.level == last
                    ),
                ]
            )
        ),
    }
    if isinstance(state, model_search.ModelState):
        info["warm"] = warm
        v = state.verdict
        if v is not None:
            info["verdict"] = {
                "settled": v.settled,
                "gain": v.gain,
                "margin": v.margin,
                "next": list(v.next),
                "reason": v.reason,
            }
    if state.done:
        acc = accounting(state, sweep_dir, repetitions)
        if acc is not None:
            info["cost"] = {
                "line": acc.line(),
                "search": {
                    "restarts": acc.spent.restarts,
                    "seconds": acc.spent.seconds,
                    "failed": acc.spent.failed,
                },
                "grid": {
                    "restarts": acc.grid.restarts,
                    "seconds": acc.grid.seconds,
                    "failed": acc.grid.failed,
                },
            }
    return info


def write_search_file(path: Path, info: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, info)


def stopped(sweep_dir: Path, levels: int, since: float) -> bool:
    """A stop_on_failure stop in this invocation: a level's marker written since it started."""
    for lv in range(levels):
        marker = level_dir(sweep_dir, lv, levels) / layout.STOP
        try:
            if marker.stat().st_mtime >= since:
                return True
        except OSError:
            continue
    return False


@dataclass(frozen=True)
class _Id:
    point_id: str


def full_benches(info: dict[str, Any] | None) -> set[str] | None:
    """The points a search that is over measured (or meant to) at the last level, from its
    search.json; None while it runs, or for a sweep that is not a search."""
    if not info or not info.get("done") or not isinstance(info.get("full"), list):
        return None
    return {str(pid) for pid in info["full"]}


def run_on(sweep_dir: Path, point_id: str) -> dict[str, Any]:
    """Whether the point just screened is benched in full now (search.runs_on, with what the
    level sweeps recorded, as the next planning call would see it): {"run": bool, "why": ...}.
    `sweep_dir` is the search's own (the last level's) directory, where search.json is."""
    info = layout.read_json(sweep_dir / SEARCH_FILE) or {}
    st = info.get("strategy") or {}
    if info.get("search") != "halving" or not info.get("points"):
        raise SearchInputError(f"{sweep_dir}: no halving search recorded there ({SEARCH_FILE})")
    if layout.point_status(sweep_dir, point_id) == "complete":
        return {"run": False, "why": "measured in full already"}
    strat = search.Halving(
        float(st["eta"]),
        int(st["levels"]),
        st.get("max_restarts"),
        bool(st["higher_is_better"]),
        bool(st.get("run_on", search.Halving.run_on)),
    )
    obj = info.get("objective") or {}
    objective = objectives.make(
        str(obj.get("name")), obj.get("slo_ttft_ms"), obj.get("slo_tpot_ms")
    )
    points = [_Id(str(pid)) for pid in info["points"]]
    measured = measurements(points, sweep_dir, strat, objective, float(info.get("started") or 0.0))
    if search.runs_on(points, measured, strat, point_id):
        return {"run": True, "why": "among the best screened so far"}
    return {"run": False, "why": "behind the best screened so far"}


def describe_model(state: model_search.ModelState[Any]) -> list[str]:
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
