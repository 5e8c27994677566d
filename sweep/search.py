"""Successive halving over sweep points: which points to bench, at which level, in which order.

Pure logic, no I/O. A point costs a server restart (minutes of model loading on a real host) every
time its configuration is started; halving spends the long bench only on the points that a short
one could not rule out.

Bench levels are abstract integers: level 0 is the screening bench (e.g. one cell, few requests),
level `levels - 1` the full matrix; the driver maps a level to bench parameters. A measurement is
one objective value per repetition (e.g. output tokens/s); values are only ever compared within
one level, so levels may measure on different scales.

The rule, one round per level:

- Round 0 runs every point at level 0, in the order given (plan.py's sort_key order).
- A round's measured points are ranked by the mean of their values (best first; lower is better
  with `higher_is_better=False`). A run with no values failed and is out. With m points ranked,
  k = ceil(m / eta); the top k survive, and so does every other point the k-th best does not
  beat, so that noise does not eliminate a contender: with two or more values on both sides, a
  difference a two-sided 5% t-test does not find significant (paired by repetition when both
  have as many values: repetition i of every point measures the same prompts, so their spread
  cancels; Welch's otherwise); with one value, an overlapping 95% interval (Student t; one
  value: the value itself).
- The survivors run at the next level; a lone survivor goes straight to the last level (there is
  nothing left to compare it with). The round at the last level is the final one.
- Run-on (`run_on=True`; off by default), in the round before the last level: right after a
  point's run, while its configuration is still running, it is also run at the last level when
  its mean is among the k best (k = ceil(runs in the round / eta)) of the round's points
  measured so far (`runs_on`). The last round then runs only the survivors not run on, and
  ranks everything run at the last level. The first k points of the round always run on;
  later ones only when they lead. Off: every survivor not running starts again in the last
  round.
- The best point is the top of the ranking of the deepest round that measured anything.
- Order within a round: the configuration already running (the last run of the previous round)
  first, it needs no restart; then the order given. Restarts are configuration changes, the
  first start included.
- `max_restarts` is a hard budget: a round takes its candidates best-ranked first (round 0: in
  the order given) while a restart is left (the running one is free) and stops at the first
  that does not fit, so what runs is always a rank prefix and the deeper comparison stays fair.
  Every point left out is in the result with the reason.

The runs are one sequence on one server (one host). The test is only as good as the
repetitions: repetition i of two points must measure the same workload for the pairing to hold
(the bench seeds a repetition's prompts by its cell, not by the server, so they do); unpaired,
the prompts' own variance is common to every point and nearly everything survives
(benchmarks/README.md, halving_vs_grid).

Every point is started at least once (round 0), so halving never needs fewer restarts than the
grid's one per point, and each survivor that is not the running configuration starts again.
Run-on takes those starts back (the k best finalists were among the leaders when they were
screened; with two levels only a finalist kept as a statistical tie with the k-th starts again)
and pays with the full bench of every point that led when it was screened and was beaten later:
the first k always, and on a surface that rises along the run order nearly every point (the
emulator's 12-point grid: all 12). So it is off by default: halving is for hosts where the full
bench costs more than a start, and there run-on spends what halving saves. What halving saves is
bench time (`account` puts restarts and time side by side with the grid's); sweep/descent.py is
the search that saves restarts.

The state is a function of (points, strategy, recorded measurements) only: `replay` rebuilds it
from the measurements a driver recorded (in any order, duplicates: the last one counts), so a
loop that runs one ansible play per round and reads results back from files resumes anywhere:

    state = replay(points, measurements, strategy)
    while not state.done:
        run state.pending (point, level) in that order (a run-on only when `runs_on` says so,
        asked once the point's run before it is recorded); record Measurement(point_id, level,
        values)
        state = replay(points, measurements, strategy)
    state.best

`search(points, measure, strategy)` is that loop with an in-memory callback.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from sweep.stats import compare_repetitions, estimate


class Strategy(Protocol):
    """What a search's state needs of its strategy (Halving here, sweep/descent.py's Descent)."""

    name: ClassVar[str]

    @property
    def levels(self) -> int: ...

    @property
    def last_level(self) -> int: ...

    @property
    def max_restarts(self) -> int | None: ...

    @property
    def higher_is_better(self) -> bool: ...


class Candidate(Protocol):
    """What the search needs of a point: a stable id (points.Point has one)."""

    @property
    def point_id(self) -> str: ...


P = TypeVar("P", bound=Candidate)


@dataclass(frozen=True)
class Halving:
    """The strategy: keep 1/eta of each round (plus CI ties), `levels` bench levels (the last
    is the full matrix), at most `max_restarts` server starts (None: no limit)."""

    eta: float = 3.0
    levels: int = 3
    max_restarts: int | None = None
    higher_is_better: bool = True
    run_on: bool = False  # bench a leader at the last level right after its screening (runs_on)
    name: ClassVar[str] = "halving"

    def __post_init__(self) -> None:
        if isinstance(self.eta, bool) or not self.eta > 1:
            raise ValueError(f"eta={self.eta}: must be > 1 (keep 1/eta of each round)")
        if isinstance(self.levels, bool) or not isinstance(self.levels, int) or self.levels < 1:
            raise ValueError(f"levels={self.levels}: must be an integer >= 1")
        budget = self.max_restarts
        if budget is not None and (
            isinstance(budget, bool) or not isinstance(budget, int) or budget < 1
        ):
            raise ValueError(f"max_restarts={budget}: must be an integer >= 1 (or None)")

    @property
    def last_level(self) -> int:
        return self.levels - 1


@dataclass(frozen=True)
class Measurement:
    """One run's objective values, one per repetition; empty: the run failed."""

    point_id: str
    level: int
    values: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"point": self.point_id, "level": self.level, "values": list(self.values)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Measurement:
        values = tuple(float(v) for v in d.get("values") or ())
        if not all(math.isfinite(v) for v in values):
            raise ValueError(f"measurement of {d.get('point')}: values must be finite: {values}")
        return cls(str(d["point"]), int(d["level"]), values)


@dataclass(frozen=True)
class Stats:
    """Mean of a run's values and its 95% confidence interval [low, high]."""

    mean: float
    low: float
    high: float
    n: int

    def overlaps(self, other: Stats) -> bool:
        return self.low <= other.high and other.low <= self.high


@dataclass(frozen=True)
class Run(Generic[P]):
    point: P
    level: int
    restart: bool  # the server has to be (re)started for this run
    # the last level's bench right after the point's screening, on the server already running it
    run_on: bool = False


@dataclass(frozen=True)
class Skipped(Generic[P]):
    point: P
    level: int
    reason: str


@dataclass(frozen=True)
class Round(Generic[P]):
    """One level's runs in order; once measured, its ranking and who survived it."""

    index: int
    level: int
    runs: tuple[Run[P], ...]
    skipped: tuple[Skipped[P], ...] = ()
    stats: Mapping[str, Stats] = field(default_factory=dict)
    ranking: tuple[P, ...] = ()  # measured points, best first (failed runs left out)
    failed: tuple[P, ...] = ()
    kept: tuple[P, ...] = ()  # survivors, best first (empty for the final round)
    complete: bool = False


@dataclass(frozen=True)
class State(Generic[P]):
    """Everything the recorded measurements say: rounds so far, the runs still to do."""

    strategy: Strategy
    points: tuple[P, ...]
    rounds: tuple[Round[P], ...]
    pending: tuple[Run[P], ...]

    @property
    def done(self) -> bool:
        return not self.pending

    @property
    def restarts(self) -> int:
        """Restarts of every planned run, pending ones included."""
        return sum(r.restart for rnd in self.rounds for r in rnd.runs)

    @property
    def skipped(self) -> tuple[Skipped[P], ...]:
        return tuple(s for rnd in self.rounds for s in rnd.skipped)

    @property
    def best(self) -> P | None:
        """Top of the deepest measured ranking; None while pending or when every run failed."""
        if not self.done:
            return None
        ranked = [rnd for rnd in self.rounds if rnd.ranking]
        return ranked[-1].ranking[0] if ranked else None

    def best_stats(self) -> Stats | None:
        best = self.best
        ranked = [rnd for rnd in self.rounds if rnd.ranking]
        return ranked[-1].stats[best.point_id] if best is not None and ranked else None

    def next_runs(self) -> list[tuple[P, int]]:
        return [(r.point, r.level) for r in self.pending]


# ---------------------------------------------------------------- statistics


def stats(values: Sequence[float]) -> Stats:
    """Mean and 95% CI of the mean (sweep.stats.estimate: mean +- t(0.975, n-1) s / sqrt(n));
    one value: [v, v]."""
    est = estimate(values)
    if est is None:
        raise ValueError("stats of no values")
    if est.ci_low is None or est.ci_high is None:
        return Stats(est.mean, est.mean, est.mean, est.n)
    return Stats(est.mean, est.ci_low, est.ci_high, est.n)


def select(
    ranking: Sequence[P],
    by_id: Mapping[str, Stats],
    eta: float,
    values: Mapping[str, Sequence[float]] | None = None,
) -> tuple[P, ...]:
    """Survivors, best first: the top ceil(m / eta) of the m ranked points, plus every other
    point the k-th best does not beat: with two or more `values` (repetitions) on both sides,
    a difference the t-test of sweep.stats.compare_repetitions (paired when the repetitions
    pair up) does not find significant; otherwise overlapping CIs (one value: equal values)."""
    if not ranking:
        return ()
    k = max(1, math.ceil(len(ranking) / eta))
    ref = ranking[k - 1].point_id

    def contender(p: P) -> bool:
        a, b = (values or {}).get(ref) or (), (values or {}).get(p.point_id) or ()
        if len(a) >= 2 and len(b) >= 2:
            return not compare_repetitions(a, b, pairs=len(a) == len(b)).significant
        return by_id[p.point_id].overlaps(by_id[ref])

    rest = [p for p in ranking[k:] if contender(p)]
    return (*ranking[:k], *rest)


def rank(points: Iterable[P], by_id: Mapping[str, Stats], higher_is_better: bool) -> list[P]:
    """Best mean first; ties keep the given order."""
    sign = -1.0 if higher_is_better else 1.0
    return sorted(points, key=lambda p: sign * by_id[p.point_id].mean)


# ---------------------------------------------------------------- scheduling


def _schedule(
    candidates: Sequence[P],
    order: Mapping[str, int],
    level: int,
    running: str | None,
    restarts_left: float,
    reason: str | None = None,
) -> tuple[tuple[Run[P], ...], tuple[Skipped[P], ...]]:
    """Runs of one round: `candidates` in priority order (best-ranked first), cut at the first
    that needs a restart the budget has not got; then the running configuration first and the
    rest in the given point order."""
    chosen: list[P] = []
    for i, p in enumerate(candidates):
        if p.point_id != running:
            if restarts_left < 1:
                why = reason or (
                    "restart budget spent" if level else "restart budget: never screened"
                )
                cut = tuple(Skipped(q, level, why) for q in candidates[i:])
                return _ordered(chosen, order, level, running), cut
            restarts_left -= 1
        chosen.append(p)
    return _ordered(chosen, order, level, running), ()


def _ordered(
    chosen: list[P], order: Mapping[str, int], level: int, running: str | None
) -> tuple[Run[P], ...]:
    seq = sorted(chosen, key=lambda p: (p.point_id != running, order[p.point_id]))
    runs: list[Run[P]] = []
    current = running
    for p in seq:
        runs.append(Run(p, level, restart=p.point_id != current))
        current = p.point_id
    return tuple(runs)


def _check_points(points: Sequence[P]) -> dict[str, int]:
    if not points:
        raise ValueError("points=[]: nothing to search")
    order: dict[str, int] = {}
    for i, p in enumerate(points):
        if p.point_id in order:
            raise ValueError(f"points: {p.point_id} appears twice")
        order[p.point_id] = i
    return order


# ---------------------------------------------------------------- the state


def replay(points: Sequence[P], measurements: Iterable[Measurement], strategy: Halving) -> State[P]:
    """The search state the recorded measurements give (see the module docstring)."""
    order = _check_points(points)
    recorded = {(m.point_id, m.level): m for m in measurements}
    budget = math.inf if strategy.max_restarts is None else strategy.max_restarts
    rounds: list[Round[P]] = []
    candidates: tuple[P, ...] = tuple(points)
    level, running, used = 0, None, 0
    last = strategy.last_level
    ran_on: tuple[Run[P], ...] = ()  # the previous round's full benches, taken while screening
    while True:
        ran = {r.point.point_id for r in ran_on}
        todo = tuple(p for p in candidates if p.point_id not in ran)
        runs, skipped = _schedule(todo, order, level, running, budget - used)
        if level == last - 1 and strategy.run_on:
            runs = _with_run_on(runs, recorded, strategy)
        pending = tuple(r for r in runs if (r.point.point_id, r.level) not in recorded)
        base = Round(len(rounds), level, runs, skipped)
        if pending or not (runs or ran_on):
            rounds.append(base)
            return State(strategy, tuple(points), tuple(rounds), pending)
        rnd = _measured(base, recorded, strategy, level == last, ran_on)
        rounds.append(rnd)
        used += sum(r.restart for r in runs)
        running = runs[-1].point.point_id if runs else running
        if not rnd.kept:
            return State(strategy, tuple(points), tuple(rounds), ())
        candidates = rnd.kept
        ran_on = tuple(r for r in runs if r.run_on)
        level = last if len(rnd.kept) == 1 else level + 1


def _with_run_on(
    runs: tuple[Run[P], ...], recorded: Mapping[tuple[str, int], Measurement], strategy: Halving
) -> tuple[Run[P], ...]:
    """The round before the last level, with a run-on after each screening run that may still
    be followed by one (the screening not recorded yet: `runs_on` decides once it is) or was
    (it leads, and its last level is recorded). A point screened whose full bench was not taken
    right then goes to the last round like any survivor; so does its record there."""
    last = strategy.last_level
    out: list[Run[P]] = []
    for r in runs:
        out.append(r)
        pid = r.point.point_id
        if (pid, r.level) not in recorded or (
            (pid, last) in recorded and _leads(runs, recorded, strategy, pid)
        ):
            out.append(Run(r.point, last, restart=False, run_on=True))
    return tuple(out)


def _leads(
    screening: Sequence[Run[P]],
    recorded: Mapping[tuple[str, int], Measurement],
    strategy: Halving,
    point_id: str,
) -> bool:
    """Whether `point_id`'s mean is among the k best (k = ceil(runs / eta)) of the runs
    recorded up to it, in run order (failed runs are out)."""
    so_far: dict[str, Stats] = {}
    for r in screening:
        m = recorded.get((r.point.point_id, r.level))
        if m is not None and m.values:
            so_far[r.point.point_id] = stats(m.values)
        if r.point.point_id == point_id:
            break
    if point_id not in so_far:
        return False
    k = max(1, math.ceil(len(screening) / strategy.eta))
    ranking = rank(
        [r.point for r in screening if r.point.point_id in so_far],
        so_far,
        strategy.higher_is_better,
    )
    return any(p.point_id == point_id for p in ranking[:k])


def runs_on(
    points: Sequence[P], measurements: Iterable[Measurement], strategy: Halving, point_id: str
) -> bool:
    """Whether `point_id`, just screened at the level before the last, gets the last level's
    bench now, while its configuration is still running: when its mean is among the k best
    (k = ceil(runs in the round / eta), as `select`'s) of the round's points screened so far, in
    run order. A point among the k best of the round is among the k best of every prefix, so
    the top k finalists are never started twice; a finalist kept only because the k-th best
    does not beat it significantly starts again in the last round. What it costs is the full
    bench of points that lead early and are beaten later: the first k always run on."""
    if not strategy.run_on:
        return False
    recorded = {(m.point_id, m.level): m for m in measurements}
    state = replay(points, recorded.values(), strategy)
    for rnd in state.rounds:
        screening = [r for r in rnd.runs if not r.run_on]
        if rnd.level == strategy.last_level - 1 and any(
            r.point.point_id == point_id for r in screening
        ):
            return _leads(screening, recorded, strategy, point_id)
    return False


def _measured(
    rnd: Round[P],
    recorded: Mapping[tuple[str, int], Measurement],
    strategy: Halving,
    final: bool,
    ran_on: Sequence[Run[P]] = (),
) -> Round[P]:
    """The round's ranking at its level; the last round's includes the full benches the round
    before took while screening (`ran_on`)."""
    by_id: dict[str, Stats] = {}
    failed: list[P] = []
    ranked = [r for r in (*ran_on, *rnd.runs) if r.level == rnd.level]
    for r in ranked:
        values = recorded[(r.point.point_id, rnd.level)].values
        if values:
            by_id[r.point.point_id] = stats(values)
        else:
            failed.append(r.point)
    measured = (r.point for r in ranked if r.point.point_id in by_id)
    ranking = rank(measured, by_id, strategy.higher_is_better)
    per_run = {r.point.point_id: recorded[(r.point.point_id, rnd.level)].values for r in ranked}
    kept = () if final else select(ranking, by_id, strategy.eta, per_run)
    return Round(
        index=rnd.index,
        level=rnd.level,
        runs=rnd.runs,
        skipped=rnd.skipped,
        stats=by_id,
        ranking=tuple(ranking),
        failed=tuple(failed),
        kept=kept,
        complete=True,
    )


def next_round(
    points: Sequence[P], measurements: Iterable[Measurement], strategy: Halving
) -> list[tuple[P, int]]:
    """The (point, level) runs still to do, in run order; [] when the search is over."""
    return replay(points, measurements, strategy).next_runs()


def search(
    points: Sequence[P],
    measure: Callable[[P, int], Sequence[float]],
    strategy: Halving,
    measurements: Iterable[Measurement] = (),
) -> tuple[State[P], list[Measurement]]:
    """Runs the whole search with `measure(point, level) -> values` (one per repetition; []:
    failed), continuing from `measurements`. Returns the final state and every measurement."""
    recorded = list(measurements)
    state = replay(points, recorded, strategy)
    while not state.done:
        for run in state.pending:
            if run.run_on and not runs_on(points, recorded, strategy, run.point.point_id):
                continue
            values = tuple(float(v) for v in measure(run.point, run.level))
            recorded.append(Measurement(run.point.point_id, run.level, values))
        state = replay(points, recorded, strategy)
    return state, recorded


# ---------------------------------------------------------------- accounting


@dataclass(frozen=True)
class Cost:
    restarts: int
    seconds: float
    failed: int = 0  # of the restarts, the starts that failed


@dataclass(frozen=True)
class Accounting:
    spent: Cost  # what the search cost, whichever search it was
    grid: Cost
    name: str = "halving"

    def line(self) -> str:
        h, g = self.spent, self.grid
        share = f" ({h.seconds / g.seconds:.0%} of the grid's time)" if g.seconds > 0 else ""
        return (
            f"{self.name}: {h.restarts} restarts ({h.failed} failed), {_hours(h.seconds)}"
            f"{share}; the full grid would be {g.restarts} restarts ({g.failed} failed), "
            f"{_hours(g.seconds)}"
        )


def _hours(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 3600 else f"{seconds:.0f} s = {seconds / 3600:.1f} h"


def _load_of(load_seconds: Mapping[str, float] | float) -> Callable[[str], float]:
    """Per-point load seconds; a point with none measured costs the median of the others."""
    if not isinstance(load_seconds, Mapping):
        return lambda _id: float(load_seconds)
    fallback = statistics.median(load_seconds.values()) if load_seconds else None

    def load(point_id: str) -> float:
        if point_id in load_seconds:
            return float(load_seconds[point_id])
        if fallback is None:
            raise ValueError(f"load_seconds: none given for {point_id}")
        return float(fallback)

    return load


def account(
    state: State[P],
    load_seconds: Mapping[str, float] | float,
    bench_seconds: Sequence[float],
    actual: Mapping[str, float] | None = None,
    failed: Mapping[str, float] | None = None,
    ruled_out: Collection[str] = (),
) -> Accounting:
    """Restarts and seconds of the halving's runs (pending ones included) against the full grid
    (every point started once and benched at the last level). `load_seconds`: per point_id (or
    one figure for all); `bench_seconds[level]`: one point's bench at that level; `actual`: a
    last-level run's own bench seconds, where they differ from the level's (the model search's
    runs with more repetitions); `failed`: the seconds to failure of each run that failed (no
    bench: the grid would fail there too); `ruled_out`: points a failure ruled out, which the
    grid would start and see fail (each for the median seconds to failure)."""
    if len(bench_seconds) != state.strategy.levels:
        raise ValueError(
            f"bench_seconds={list(bench_seconds)}: need one figure per level "
            f"({state.strategy.levels})"
        )
    load = _load_of(load_seconds)
    runs = [r for rnd in state.rounds for r in rnd.runs]
    last = state.strategy.levels - 1
    own = actual or {}

    def bench(r: Run[P]) -> float:
        if r.level == last and r.point.point_id in own:
            return float(own[r.point.point_id])
        return bench_seconds[r.level]

    fails = dict(failed or {})
    to_fail = statistics.median(fails.values()) if fails else 0.0

    def spent(r: Run[P]) -> float:
        if r.point.point_id in fails:
            return fails[r.point.point_id] if r.restart else 0.0
        return (load(r.point.point_id) if r.restart else 0.0) + bench(r)

    def grid_cost(pid: str) -> float:
        if pid in fails:
            return fails[pid]
        if pid in ruled_out:
            return to_fail
        return load(pid) + bench_seconds[-1]

    failed_runs = sum(1 for r in runs if r.restart and r.point.point_id in fails)
    grid_failed = sum(1 for p in state.points if p.point_id in fails or p.point_id in ruled_out)
    return Accounting(
        Cost(state.restarts, sum(spent(r) for r in runs), failed_runs),
        Cost(len(state.points), sum(grid_cost(p.point_id) for p in state.points), grid_failed),
        state.strategy.name,
    )


def describe(state: State[P]) -> list[str]:
    """One line per round, then the points left out and why, then the outcome."""
    lines = []
    waiting = {(r.point.point_id, r.level) for r in state.pending}
    for rnd in state.rounds:
        # a full bench taken on (recorded, not waiting for its screening) shows as "+full"
        on = {r.point.point_id for r in rnd.runs if r.run_on} - {
            pid for pid, lv in waiting if lv != rnd.level
        }
        ids = (
            ", ".join(
                r.point.point_id + (" +full" if r.point.point_id in on else "")
                for r in rnd.runs
                if not r.run_on
            )
            or "-"
        )
        restarts = sum(r.restart for r in rnd.runs)
        line = f"round {rnd.index} level {rnd.level}: {ids} ({restarts} restarts)"
        if rnd.kept:
            line += f"; kept {', '.join(p.point_id for p in rnd.kept)}"
        elif rnd.ranking and state.strategy.name == "descent":
            line += f"; best so far {rnd.ranking[0].point_id}"
        if rnd.failed:
            line += f"; failed {', '.join(p.point_id for p in rnd.failed)}"
        lines.append(line)
    lines += [f"not run at level {s.level}: {s.point.point_id} ({s.reason})" for s in state.skipped]
    if state.done:  # halving starts every point; descent names those no step reached
        ran = {r.point.point_id for rnd in state.rounds for r in rnd.runs}
        cut = {s.point.point_id for s in state.skipped}
        never = [p.point_id for p in state.points if p.point_id not in ran | cut]
        if never:
            lines.append(f"not measured (no step from the best leads there): {', '.join(never)}")
    best = state.best
    lines.append(
        "pending" if not state.done else f"best: {best.point_id if best else 'none (all failed)'}"
    )
    return lines
