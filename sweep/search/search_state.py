"""A search's rounds over the grid's points: what it measured, what it runs next, and what that
costs against the grid. Pure logic, no I/O; the rule that picks the points is the model search's
(sweep/search/model_search.py), the driver that reads the sweep's records
sweep/search/search_rounds.py.

- A point costs a server restart (minutes of model loading on a real host) every time its
  configuration is started; a restart is a configuration change, the first start included.
- A measurement is one objective value per repetition (e.g. output tokens/s; empty: the run
  failed). Its bench level is always 0, the sweep's own bench: the screening levels went with
  search=halving (docs/search.md), and the field stays as the records have it (search.json's
  failed runs "<point>@L0", its rounds "round N level 0: ...").
- A round is the runs of one step, in run order: the configuration already running first (it
  needs no restart), then the order given (`schedule`). `max_restarts` is a hard budget: a round
  takes its candidates in priority order while a restart is left (the running one is free) and
  stops at the first that does not fit; every point left out is in the round with the reason.
- The state is a function of (points, strategy, recorded measurements) only, so a driver that
  reads results back from files resumes anywhere.
- `account` puts the search's restarts and seconds beside the full grid's (every point started
  once and benched in full).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Generic, Protocol, TypeVar

from sweep.results.stats import estimate


class Strategy(Protocol):
    """What a search's state needs of its strategy (sweep/search/model_search.py ModelSearch)."""

    name: ClassVar[str]

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
class Measurement:
    """One run's objective values, one per repetition; empty: the run failed."""

    point_id: str
    level: int
    values: tuple[float, ...]


@dataclass(frozen=True)
class Stats:
    """Mean of a run's values and its 95% confidence interval [low, high]."""

    mean: float
    low: float
    high: float
    n: int


@dataclass(frozen=True)
class Run(Generic[P]):
    point: P
    level: int
    restart: bool  # the server has to be (re)started for this run


@dataclass(frozen=True)
class Skipped(Generic[P]):
    point: P
    level: int
    reason: str


@dataclass(frozen=True)
class Round(Generic[P]):
    """One step's runs in order; once measured, the ranking of every point measured so far."""

    index: int
    level: int
    runs: tuple[Run[P], ...]
    skipped: tuple[Skipped[P], ...] = ()
    stats: Mapping[str, Stats] = field(default_factory=dict)
    ranking: tuple[P, ...] = ()  # measured points, best first (failed runs left out)
    failed: tuple[P, ...] = ()
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


# ---------------------------------------------------------------- statistics


def stats(values: Sequence[float]) -> Stats:
    """Mean and 95% CI of the mean (sweep.results.stats.estimate: mean +- t(0.975, n-1) s /
    sqrt(n)); one value: [v, v]."""
    est = estimate(values)
    if est is None:
        raise ValueError("stats of no values")
    if est.ci_low is None or est.ci_high is None:
        return Stats(est.mean, est.mean, est.mean, est.n)
    return Stats(est.mean, est.ci_low, est.ci_high, est.n)


def rank(points: Iterable[P], by_id: Mapping[str, Stats], higher_is_better: bool) -> list[P]:
    """Best mean first; ties keep the given order."""
    sign = -1.0 if higher_is_better else 1.0
    return sorted(points, key=lambda p: sign * by_id[p.point_id].mean)


# ---------------------------------------------------------------- scheduling


def schedule(
    candidates: Sequence[P],
    order: Mapping[str, int],
    level: int,
    running: str | None,
    restarts_left: float,
    reason: str,
) -> tuple[tuple[Run[P], ...], tuple[Skipped[P], ...]]:
    """Runs of one round: `candidates` in priority order, cut at the first that needs a restart
    the budget has not got (the rest skipped for `reason`); then the running configuration first
    and the rest in `order`."""
    chosen: list[P] = []
    for i, p in enumerate(candidates):
        if p.point_id != running:
            if restarts_left < 1:
                cut = tuple(Skipped(q, level, reason) for q in candidates[i:])
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


def check_points(points: Sequence[P]) -> dict[str, int]:
    """Each point's place in the order given; ValueError for none or for a point given twice."""
    if not points:
        raise ValueError("points=[]: nothing to search")
    order: dict[str, int] = {}
    for i, p in enumerate(points):
        if p.point_id in order:
            raise ValueError(f"points: {p.point_id} appears twice")
        order[p.point_id] = i
    return order


# ---------------------------------------------------------------- accounting


@dataclass(frozen=True)
class Cost:
    restarts: int
    seconds: float
    failed: int = 0  # of the restarts, the starts that failed


@dataclass(frozen=True)
class Accounting:
    spent: Cost  # what the search cost
    grid: Cost
    name: str = "model"

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
    bench_seconds: float,
    actual: Mapping[str, float] | None = None,
    failed: Mapping[str, float] | None = None,
    ruled_out: Collection[str] = (),
) -> Accounting:
    """Restarts and seconds of the search's runs (pending ones included) against the full grid
    (every point started once and benched). `load_seconds`: per point_id (or one figure for
    all); `bench_seconds`: one point's bench; `actual`: a run's own bench seconds, where they
    differ (the model search's runs with more repetitions, or one); `failed`: the seconds to
    failure of each run that failed (no bench: the grid would fail there too); `ruled_out`:
    points a failure ruled out, which the grid would start and see fail (each for the median
    seconds to failure)."""
    load = _load_of(load_seconds)
    runs = [r for rnd in state.rounds for r in rnd.runs]
    own = actual or {}

    def bench(r: Run[P]) -> float:
        return float(own.get(r.point.point_id, bench_seconds))

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
        return load(pid) + bench_seconds

    failed_runs = sum(1 for r in runs if r.restart and r.point.point_id in fails)
    grid_failed = sum(1 for p in state.points if p.point_id in fails or p.point_id in ruled_out)
    return Accounting(
        Cost(state.restarts, sum(spent(r) for r in runs), failed_runs),
        Cost(len(state.points), sum(grid_cost(p.point_id) for p in state.points), grid_failed),
        state.strategy.name,
    )
