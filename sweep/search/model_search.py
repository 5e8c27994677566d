"""The model search over the grid (`search=model`): it starts fewer servers than the grid, and its
answer is the grid's or it says that it may not be. Pure logic, no I/O.

A search that stops where no single step from the best is better ends short of the best on a
ridge (parameters that interact) or below a second, higher peak. This search keeps a model of the
objective over the whole grid and stops only when, by that model and the noise its repetitions
show, no point it has not measured can beat its answer by more than the tie margin. The grid and
its points: sweep/search/grid_axes.py Grid (ordered axes, an axis of one value is none); each axis
is scaled to [0, 1] by rank. The rule, one round at a time, every run at the full bench:

- Round 0 measures a space-filling design of `initial` (7) points: the one nearest the grid's
  centre, then each time the one farthest from those chosen (the first in point order among
  equals). It goes on like that while fewer than two points have succeeded.
- The answer is the best mean measured (warm starts included), the grid's own rule.
- The model (sweep/search/gaussian_process.py), refitted after every round to the mean log objective
  of every point measured: a Gaussian process with an unknown constant mean and a Matern 5/2
  correlation with a length scale per axis, of the axes or of the grid turned along a diagonal
  of two of them (a ridge: `diagonals`); each mean's noise is the pooled variance of one
  repetition over every point measured, divided by its repetitions (the measured noise). Its
  settings are not fitted but taken over a fixed grid, weighted by their likelihood: the same
  data always give the same figures, with no optimiser to fail.
- For each point not measured, the bound of its gain over the answer: f(point) - f(answer) (f the
  log objective), mean + `confidence` (2) sd by the weighted model, or by any single likely
  setting (log likelihood within `likely`, 3, of the best's) if that is higher. A surface the
  data leave open (a narrow peak between points measured) keeps its points open.
- While the largest bound is above the tie margin (`margin`, 2 %), the next round measures that
  point, and with `batch` above 1 (the sweep's hosts: sweep/cli/plan.py) up to batch - 1 more, each
  the point with the largest bound once the ones picked are taken as measured at the model's
  mean (a "believer" batch: their uncertainty gone, what they may show not guessed), so that
  every host has a run and the round spreads over what is open. Otherwise the search is
  settled: no unmeasured point can beat the answer by more than the margin, by the model; the
  verdict gives the largest bound and the NEXT_SHOWN points it would measure next. A grid
  measured in full is settled too.
- Unless a region is left that no point was measured near: while an unmeasured point farther
  than `cover` (0.4 of the axes' extent, Euclidean) from every point tried is not ruled out by
  the model (its bound above -`ruled_out`, -5 %), the next round measures the one with the
  largest bound (with `batch` above 1, each next one the largest of those still that far once
  the ones picked count as tried). The model's length scales are weighed by the data, which
  lie elsewhere: a narrow peak in a region with no point measured is where it is confidently
  wrong (two-peak surfaces whose higher peak it put 5 to 56 % below the answer), and a bound
  that low there is no evidence.
- Nor while a neighbour of the best (one step along one axis) is unmeasured that the model does
  not put more than the margin below it (its bound above -2 %): the model cannot see a peak
  narrower than a step of the grid, and the best measured may sit on its shoulder (two-peak
  surfaces whose best was the answer's neighbour a budget step away, 2.8 and 2.9 % above it,
  its bound 1.5 and -1.3 %). Checked before the regions left; on several hosts a round takes
  up to one a host, the largest bound first.
- More repetitions (`max_repetitions`, 32): a run is benched on past the bench's own repetitions,
  on the server already running it (no restart), while its point can still change the answer
  (it may beat the best mean measured so far by more than the margin, at 2 sd of the
  difference; the first measured is the best so far) and the noise its repetitions show needs
  more to tell the tie margin; and a run whose first repetition is clearly out (more than 4 sd
  beyond the margin below the best, the noise known from 6 degrees of freedom or more) stops
  there (bench/more_repetitions.py; the bench decides, sweep/cli/plan.py hands it the rule). The
  model weighs each mean by its repetitions, so the points near the best are known better and
  fewer neighbours stay open.
- A failed run is out (not measured again by this search in this invocation), and so is every
  point it rules out (`rules`: sweep/store/failures.py, a point at least as large as one that ran
  out of memory) and every point ruled out before the search (`excluded`: failures of earlier runs
  and sweeps). No round, the first included, picks a point ruled out.
- Sizes (`sizes`: sweep/store/failures.py dominated, the points at least as large in memory as a
  point): a round runs smallest first (the fewest points below it first), so that a failure
  rules out the round's larger runs before they start; the first round's design picks from the
  smaller half of the grid (no point larger than half the grid: the largest corners are the
  likeliest to fail) and a point a failure ruled out counts against it as the failure does
  (nothing takes its place); and once a failure has shown an edge, a pick not known to run (no
  point at least as large has run) gives way to the candidate below it, not known to run
  either, whose failure would rule out the most open candidates (its bound above the margin):
  the edge is probed from below (`_probe`).
- Memory (`memory`: the share of its memory a run used, sweep/search/memory.py): a point the fit of
  the runs' shares puts over the limit is not picked either (`over_memory`, named by the
  report); a prediction, not a verdict: nothing is recorded.
- `max_restarts` is a hard cut: when it is spent before the search is settled, the verdict says
  it is not settled, with the largest bound and the points it would measure next. A bound below
  what the first round needs is refused (ValueError) before anything runs, and so is a grid of
  one point.
- Warm starts: measurements made before the search (under the same identity: sweep/store/store.py)
  are known from round 0 on, are never run and cost no restart; round 0's design is smaller by them.
- Twins (points that start the same server, sweep/config/points.py same_servers) are not passed to
  the search (sweep/cli/plan.py): a twin is a hole in the grid, not a point, so a plateau the build
  makes is not an axis.

`replay(points, grid, measurements, strategy, warm)` rebuilds the state from recorded
measurements, so a driver that runs one play per round resumes anywhere; runs recorded that its
rounds do not pick (a rerun on another count of hosts: other batches) join as a round of their
own before it waits or ends, so no measurement is dropped.

Why this method, from benchmarks/search_surfaces.py (72-point grid, 30 surfaces of each class,
2 % and 5 % noise on three repetitions; the table in benchmarks/README.md). A per-parameter model
cannot hold an interaction, and a quadratic response surface cannot hold two peaks; a Gaussian
process is the simplest model that holds an interaction and several peaks and says how unsure it
is between the points measured. Over seeds 1 to 5 (1,200 searches a setting) its answer was
within 2 % of the grid's on 29 or 30 of 30 surfaces of every class at both noises, with a median
of 24 to 43 % of the grid's restarts.
What each part buys there (the likely settings' bound, 2 sd, 7 points in round 0, the
answer as the best mean): benchmarks/README.md.
The figures of each later refinement (more repetitions, axes by rank, regions left, the best's
neighbours, diagonals, the edge and the clearly-out rule, with the seeds held out) are in
benchmarks/README.md, section "The model search on generated surfaces".
A fit on the 72-point grid takes 45 to 320 ms of controller CPU (2,048 settings; the axes alone:
13 to 85 ms).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from bench.more_repetitions import MARGIN, MAX_REPETITIONS
from sweep.search import gaussian_process
from sweep.search.grid_axes import Grid
from sweep.search.memory import over_limit
from sweep.search.search_state import (
    Measurement,
    P,
    Round,
    Run,
    Skipped,
    State,
    Stats,
    check_points,
    rank,
    schedule,
    stats,
)

BUDGET_REASON = "restart budget spent: not measured"
NEXT_SHOWN = 3  # the points named as the next to measure
# with `sizes`, the first round's design picks from the points at least as large as at most this
# share of the grid (the smaller half: the largest corners are the likeliest to fail)
SMALL = 0.5
NOISE_FLOOR = 0.002**2  # a mean's noise variance is never taken below this


@dataclass(frozen=True)
class ModelSearch:
    """The strategy. `margin`: the tie margin (0.02: an unmeasured point that may beat the best by
    2 % or less is a tie); `confidence`: how many of the model's standard deviations the bound on
    an unmeasured point's gain spans; `initial`: the points of the first round (a space-filling
    design); `likely`: a hyperparameter setting whose log likelihood is within this of the best
    one's bounds the gain on its own too; `max_restarts`: at most so many server starts (None: no
    limit); `batch`: the points a round after the first measures at most (one a host:
    sweep/cli/plan.py gives the hosts' count, so that no host waits while the others run);
    `max_repetitions`: a run goes on with more repetitions while its point may still be the best, up
    to this many in all (bench/more_repetitions.py; the bench decides, the sweep hands it the rule:
    at or below the bench's repetitions, none); `cover`, `ruled_out`: the search is not settled
    while an unmeasured point farther than `cover` (of the axes' extent, Euclidean) from every point
    tried is not ruled out by the model (its bound above -`ruled_out`): a region no point has been
    measured near is one the model only guesses at; `neighbours`: nor while a neighbour of the
    best (one step along one axis) that the model does not put more than `margin` below it is
    unmeasured: a peak narrower than a step is one the model cannot see; `diagonals`: the model
    may also run its length scales along a diagonal of two axes (sweep/search/gaussian_process.py
    _metrics: a ridge)."""

    max_restarts: int | None = None
    higher_is_better: bool = True
    margin: float = MARGIN
    confidence: float = 2.0
    initial: int = 7
    likely: float = 3.0
    batch: int = 1
    max_repetitions: int = MAX_REPETITIONS
    cover: float = 0.4
    ruled_out: float = 0.05
    neighbours: bool = True
    diagonals: bool = True
    name: ClassVar[str] = "model"

    def __post_init__(self) -> None:
        budget = self.max_restarts
        if budget is not None and (
            isinstance(budget, bool) or not isinstance(budget, int) or budget < 1
        ):
            raise ValueError(f"max_restarts={budget}: must be an integer >= 1 (or None)")
        if isinstance(self.margin, bool) or not 0 <= self.margin < 1:
            raise ValueError(f"margin={self.margin}: must be a fraction in [0, 1) (0.02: 2 %)")
        if isinstance(self.confidence, bool) or not 0 < self.confidence <= 10:
            raise ValueError(f"confidence={self.confidence}: must be in (0, 10] (sds)")
        if isinstance(self.initial, bool) or not isinstance(self.initial, int) or self.initial < 2:
            raise ValueError(f"initial={self.initial}: must be an integer >= 2")
        if isinstance(self.likely, bool) or not 0 <= self.likely <= 20:
            raise ValueError(f"likely={self.likely}: must be in [0, 20] (log likelihood)")
        if isinstance(self.batch, bool) or not isinstance(self.batch, int) or self.batch < 1:
            raise ValueError(f"batch={self.batch}: must be an integer >= 1")
        reps = self.max_repetitions
        if isinstance(reps, bool) or not isinstance(reps, int) or reps < 1:
            raise ValueError(f"max_repetitions={reps}: must be an integer >= 1")
        if isinstance(self.cover, bool) or not 0 < self.cover <= 2:
            raise ValueError(f"cover={self.cover}: must be in (0, 2] (of an axis's extent)")
        if isinstance(self.ruled_out, bool) or not 0 <= self.ruled_out < 1:
            raise ValueError(f"ruled_out={self.ruled_out}: must be a fraction in [0, 1)")
        for flag in ("neighbours", "diagonals"):
            if not isinstance(getattr(self, flag), bool):
                raise ValueError(f"{flag}={getattr(self, flag)!r}: must be true or false")


@dataclass(frozen=True)
class Verdict:
    """What the search can say about the points it has not measured.

    settled: the search is over and no unmeasured point can beat the best by more than the
    margin, by the model; False while runs are pending and when max_restarts cut it.
    gain: the largest relative gain over the best an unmeasured point may have, by the model's
    bound (0.031: 3.1 %); None when the model could not be fitted (fewer than two points
    measured) or no point is left unmeasured (0.0 then).
    next: the points the search would measure next, most promising first.
    """

    settled: bool
    gain: float | None
    margin: float
    next: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class ModelState(State[P]):
    """search_state.State plus the verdict, the points measured before the search (warm
    starts), and the ranking of every point measured (warm starts included) by its mean, which
    `best` reads: the search's answer is the best mean measured, the grid's rule."""

    verdict: Verdict | None = None
    warm: tuple[P, ...] = ()
    ranking: tuple[P, ...] = ()
    by_id: Mapping[str, Stats] = field(default_factory=dict)
    # point id -> the failed point that ruled it out ("" : ruled out before the search)
    ruled_out: Mapping[str, str] = field(default_factory=dict)
    # point id -> the share of its memory limit the fit of the runs' shares puts it at (over 1:
    # not started; sweep/search/memory.py over_limit)
    over_memory: Mapping[str, float] = field(default_factory=dict)

    @property
    def best(self) -> P | None:
        """The best mean measured (warm starts included); None while pending or when nothing
        succeeded."""
        return self.ranking[0] if self.done and self.ranking else None

    def best_stats(self) -> Stats | None:
        best = self.best
        return self.by_id[best.point_id] if best is not None else None


# ---------------------------------------------------------------- the data


@dataclass(frozen=True)
class _Space:
    """The grid, the points in point order, and each point's position with every axis scaled
    to [0, 1] from its first value to its last (by rank: the grid's values are chosen steps)."""

    grid: Grid
    order: Mapping[str, int]
    every: tuple[str, ...]
    coords: tuple[tuple[float, ...], ...]  # in the order of `every`

    @classmethod
    def of(cls, grid: Grid, order: Mapping[str, int]) -> _Space:
        every = tuple(sorted(grid.index, key=order.__getitem__))
        coords = tuple(
            tuple(i / (len(axis) - 1) for i, axis in zip(grid.index[pid], grid.axes, strict=True))
            for pid in every
        )
        return cls(grid, order, every, coords)


def _logs(values: Mapping[str, Sequence[float]], higher_is_better: bool) -> dict[str, list[float]]:
    """The objective in logs (relative differences; negated when lower is better); values at or
    below 0 count as a thousandth of the largest one measured."""
    top = max((abs(v) for vs in values.values() for v in vs), default=1.0) or 1.0
    sign = 1.0 if higher_is_better else -1.0
    return {pid: [sign * math.log(max(v, top * 1e-3)) for v in vs] for pid, vs in values.items()}


def _noise(logs: Mapping[str, Sequence[float]]) -> float:
    """The pooled variance of one repetition (logs), from every point with two or more; none
    such: 0 (the model's misfit then stands for it)."""
    ss, df = 0.0, 0
    for vs in logs.values():
        if len(vs) >= 2:
            m = math.fsum(vs) / len(vs)
            ss += math.fsum((v - m) ** 2 for v in vs)
            df += len(vs) - 1
    return ss / df if df else 0.0


def _fit_data(
    space: _Space, values: Mapping[str, Sequence[float]], higher_is_better: bool
) -> tuple[tuple[str, ...], tuple[tuple[float, ...], ...], tuple[float, ...], tuple[float, ...]]:
    """The model's data, in point order (the figures do not depend on the order the measurements
    came in): the points measured, their positions, mean logs and the noise variance of each."""
    logs = _logs(values, higher_is_better)
    var1 = _noise(logs)
    place = {pid: i for i, pid in enumerate(space.every)}
    ids = tuple(sorted(logs, key=space.order.__getitem__))
    x = tuple(space.coords[place[pid]] for pid in ids)
    y = tuple(math.fsum(logs[pid]) / len(logs[pid]) for pid in ids)
    noise = tuple(max(var1 / len(logs[pid]), NOISE_FLOOR) for pid in ids)
    return ids, x, y, noise


def _model_data(
    space: _Space,
    values: Mapping[str, Sequence[float]],
    strategy: ModelSearch,
    believed: Mapping[str, float],
) -> tuple[tuple[tuple[float, ...], ...], tuple[float, ...], tuple[float, ...]]:
    """_fit_data's positions, means and noise, plus the points `believed`: picked for this round
    and taken as measured at the model's mean (log units), with a full bench's noise."""
    _, x, y, noise = _fit_data(space, values, strategy.higher_is_better)
    if believed:
        place = {pid: i for i, pid in enumerate(space.every)}
        x += tuple(space.coords[place[pid]] for pid in believed)
        y += tuple(believed.values())
        noise += (min(noise),) * len(believed)
    return x, y, noise


def _gains(
    space: _Space,
    values: Mapping[str, Sequence[float]],
    best: str,
    strategy: ModelSearch,
    believed: Mapping[str, float] | None = None,
) -> tuple[dict[str, float], dict[str, float]]:
    """Every point's bound on its gain over `best` and the model's mean of its log objective,
    by the model fitted to every point measured (and `believed`, see _model_data)."""
    x, y, noise = _model_data(space, values, strategy, believed or {})
    ref = space.every.index(best)
    bound, means = gaussian_process.bounds(
        x, y, noise, space.coords, ref, strategy.confidence, strategy.likely, strategy.diagonals
    )
    return dict(zip(space.every, bound, strict=True)), dict(zip(space.every, means, strict=True))


def smoothed(
    grid: Grid,
    order: Mapping[str, int],
    values: Mapping[str, Sequence[float]],
    higher_is_better: bool = True,
) -> dict[str, float]:
    """The model's estimate of every measured point's log objective (higher is better), relative
    to the first in point order: the mixture's mean, which pools each point's repetitions with its
    neighbours'. Not what the search answers (its answer is the best mean, the grid's rule);
    benchmarks/search_surfaces.py --smooth measures what choosing by it would give."""
    space = _Space.of(grid, order)
    ids, x, y, noise = _fit_data(space, values, higher_is_better)
    if len(ids) < 2:
        return dict.fromkeys(ids, 0.0)
    _, means = gaussian_process.bounds(x, y, noise, space.coords, 0, 0.0)
    every = dict(zip(space.every, means, strict=True))
    return {pid: every[pid] - every[ids[0]] for pid in ids}


# ---------------------------------------------------------------- one step


@dataclass(frozen=True)
class _Step:
    picks: tuple[str, ...]  # the next round's points ((): the search is over)
    gain: float | None  # the largest bound on an unmeasured point's gain (0.03: 3 %)
    ahead: tuple[str, ...]  # the points it would measure next, most promising first
    why: str


def _design(space: _Space, tried: Iterable[str], free: Sequence[str], count: int) -> list[str]:
    """Space-filling picks: the point nearest the grid's centre when nothing was tried, then each
    time the point farthest from every point tried or picked (the first in point order among
    equals)."""
    place = {pid: i for i, pid in enumerate(space.every)}
    taken = [space.coords[place[pid]] for pid in sorted(tried, key=space.order.__getitem__)]
    left = list(free)
    picks: list[str] = []
    while left and len(picks) < count:

        def score(pid: str) -> tuple[float, int]:
            c = space.coords[place[pid]]
            if not taken:
                return (round(sum((v - 0.5) ** 2 for v in c), 12), space.order[pid])
            near = min(sum((a - b) ** 2 for a, b in zip(c, t, strict=True)) for t in taken)
            return (-round(near, 12), space.order[pid])

        pick = min(left, key=score)
        picks.append(pick)
        taken.append(space.coords[place[pick]])
        left.remove(pick)
    return picks


def _step(
    space: _Space,
    values: Mapping[str, Sequence[float]],
    failed: Iterable[str],
    best: str | None,
    strategy: ModelSearch,
    ruled: Collection[str] = (),
    larger: Callable[[str], Collection[str]] | None = None,
    spent: int = 0,
    small: Collection[str] | None = None,
) -> _Step:
    """What the data say: the next round's points, or that the search is over and why. `ruled`:
    points ruled out (never picked, and no evidence of anything); `larger`: replay's `sizes`
    once a failure has shown an edge, see _probe; `spent`: points this search's failures ruled
    out, which count against the first round's design as the failures do (a failure in the
    first round prunes it, and nothing takes the place of what it prunes); `small`: the points
    the first round's design picks from (replay: with sizes, the smaller half of the grid)."""
    tried = {*values, *failed}
    free = [pid for pid in space.every if pid not in tried and pid not in ruled]
    if not free:
        return _Step((), 0.0, (), "settled: every point is measured")
    if best is None or len(tried) + spent < strategy.initial or len(values) < 2:
        count = max(strategy.initial - len(tried) - spent, 1)
        pool = [pid for pid in free if small is None or pid in small] or free
        picks = tuple(_design(space, tried, pool, count))
        return _Step(picks, None, picks, "first round: too few points measured to model")
    bound, _ = _gains(space, values, best, strategy)
    ranked = sorted(free, key=lambda pid: (-round(bound[pid], 12), space.order[pid]))
    ahead = tuple(ranked[:NEXT_SHOWN])
    gain = math.expm1(bound[ranked[0]])
    if gain > strategy.margin:
        why = f"an unmeasured point may beat the best by up to {gain:.1%} by the model"
        open_ = [pid for pid in ranked if math.expm1(bound[pid]) > strategy.margin]
        first = _probe(ranked[0], open_, values, bound, space, larger)
        return _Step(_batch(space, values, best, strategy, first, free), gain, ahead, why)
    # the model says settled; two rules of where it cannot be trusted may say not yet
    rules: tuple[tuple[Callable[[], tuple[str, ...]], str], ...] = (
        (
            lambda: _near_best(space, best, free, bound, strategy) if strategy.neighbours else (),
            f"a neighbour of the best (one step along one axis) it does not put more than "
            f"{strategy.margin:.1%} below it is not measured",
        ),
        (
            lambda: _uncovered(space, tried, free, bound, strategy),
            f"a point it does not rule out (within {strategy.ruled_out:.0%} of it) lies farther "
            f"than {strategy.cover:g} from every point measured",
        ),
    )
    for left, but in rules:
        picks = left()
        if picks:
            first = _probe(picks[0], picks, values, bound, space, larger)
            picks = (first, *(pid for pid in picks if pid != first))
            why = (
                f"no unmeasured point may beat the best by more than {strategy.margin:.1%} by "
                f"the model, but {but}"
            )
            return _Step(picks[: strategy.batch], gain, picks[:NEXT_SHOWN], why)
    why = (
        f"settled: no unmeasured point can beat the best by more than {strategy.margin:.1%} "
        f"by the model (the largest possible gain {max(gain, 0.0):.1%}, at "
        f"{strategy.confidence:g} sd)"
    )
    return _Step((), gain, ahead, why)


def _probe(
    pick: str,
    candidates: Sequence[str],
    values: Collection[str],
    bound: Mapping[str, float],
    space: _Space,
    larger: Callable[[str], Collection[str]] | None,
) -> str:
    """Where a failure has shown an edge (`larger(p)`: the points a failure of p rules out), the
    run that tells most about `pick` for the fewest failed starts. A pick no larger than a point
    that ran (one `larger` of it ran) runs too: it stays. Otherwise, of the `candidates` that are
    no larger than it and not known to run either (it among them), the one whose failure would
    rule out the most candidates, the largest bound first among equals: a failure there spares
    the failures of every candidate above it, and a success is a step along the edge."""
    if larger is None or any(pid in values for pid in larger(pick)):
        return pick

    def below(c: str) -> bool:
        return c == pick or pick in larger(c)

    left = [c for c in candidates if below(c) and not any(pid in values for pid in larger(c))]
    if not left:
        return pick
    cover = {c: sum(d in larger(c) for d in candidates) for c in left}
    return min(left, key=lambda c: (-cover[c], -round(bound[c], 12), space.order[c]))


def _near_best(
    space: _Space,
    best: str,
    free: Sequence[str],
    bound: Mapping[str, float],
    strategy: ModelSearch,
) -> tuple[str, ...]:
    """The best's unmeasured neighbours (one step along one axis) whose bound is above
    -`margin`, the largest bound first (the first in point order among equals)."""
    left = set(free)
    floor = math.log1p(-strategy.margin)
    near = [pid for pid in space.grid.neighbours(best) if pid in left and bound[pid] > floor]
    return tuple(sorted(near, key=lambda pid: (-round(bound[pid], 12), space.order[pid])))


def _uncovered(
    space: _Space,
    tried: Iterable[str],
    free: Sequence[str],
    bound: Mapping[str, float],
    strategy: ModelSearch,
) -> tuple[str, ...]:
    """The unmeasured points the model only guesses at: farther than `cover` from every point
    tried and not ruled out (bound above -`ruled_out`), the largest bound first; each next one
    taken as if the ones before it were tried, so that a round of several spreads over the
    regions left (the first in point order among equals)."""
    place = {pid: i for i, pid in enumerate(space.every)}
    taken = [space.coords[place[pid]] for pid in tried]
    floor = math.log1p(-strategy.ruled_out)
    left = [pid for pid in free if bound[pid] > floor]
    picks: list[str] = []
    while True:
        far = [
            pid
            for pid in left
            if pid not in picks
            and min(math.dist(space.coords[place[pid]], t) for t in taken) > strategy.cover + 1e-9
        ]
        if not far:
            return tuple(picks)
        pick = min(far, key=lambda pid: (-round(bound[pid], 12), space.order[pid]))
        picks.append(pick)
        taken.append(space.coords[place[pick]])


def _batch(
    space: _Space,
    values: Mapping[str, Sequence[float]],
    best: str,
    strategy: ModelSearch,
    first: str,
    free: Sequence[str],
) -> tuple[str, ...]:
    """A round of up to `batch` points, `first` first. Each next one is the point with the
    largest bound once the ones picked are taken as measured at the model's mean (their
    uncertainty gone, what they may show not guessed): so the round spreads over the regions
    left open instead of crowding around one. A point whose bound is then within the margin is
    not picked: a round may be smaller than the batch."""
    picks = [first]
    believed: dict[str, float] = {}
    bound, level = _gains(space, values, best, strategy)  # the fit _step made: cached
    while len(picks) < strategy.batch:
        last = picks[-1]
        believed[last] = level[last]
        bound, level = _gains(space, values, best, strategy, believed)
        left = [
            pid for pid in free if pid not in believed and math.expm1(bound[pid]) > strategy.margin
        ]
        if not left:
            break
        picks.append(min(left, key=lambda pid: (-round(bound[pid], 12), space.order[pid])))
    return tuple(picks)


# ---------------------------------------------------------------- the state


def replay(
    points: Sequence[P],
    grid: Grid,
    measurements: Iterable[Measurement],
    strategy: ModelSearch,
    warm: Iterable[Measurement] = (),
    excluded: Collection[str] = (),
    rules: Callable[[str], Iterable[str]] | None = None,
    sizes: Callable[[str], Iterable[str]] | None = None,
    memory: Callable[[str], float | None] | None = None,
) -> ModelState[P]:
    """The search state the recorded measurements give (see the module docstring). `warm`:
    measurements taken before the search (another sweep's, under the same identity): known from
    the first round on, never scheduled, no restart; a failed one (no values) is not known.
    `excluded`: points ruled out before the search; `rules(point id)`: the points a failure of
    that point rules out (sweep/store/failures.py), out from the round after it on. `sizes(point
    id)`: the points at least as large as it in memory (sweep/store/failures.py dominated: what an
    out-of-memory failure of it would rule out): a round runs smallest first, and once a
    failure has shown an edge the search probes it from below (_probe).
    ValueError for a grid of one point and for a max_restarts below the first round's."""
    order = check_points(points)
    if len(points) < 2:
        raise ValueError(
            f"only one point to search ({points[0].point_id}): a search needs two or more "
            "(search=grid measures it)"
        )
    if set(grid.index) != set(order):
        raise ValueError("grid: its points are not the points searched")
    by_id = {p.point_id: p for p in points}
    space = _Space.of(grid, order)
    values: dict[str, tuple[float, ...]] = {
        m.point_id: m.values for m in warm if m.level == 0 and m.values and m.point_id in order
    }
    warm_pts = tuple(by_id[pid] for pid in sorted(values, key=order.__getitem__))
    recorded = {m.point_id: m for m in measurements if m.level == 0 and m.point_id in order}
    budget = math.inf if strategy.max_restarts is None else strategy.max_restarts
    failed: set[str] = set()
    ruled: dict[str, str] = dict.fromkeys((pid for pid in excluded if pid in order), "")
    rounds: list[Round[P]] = []
    running: str | None = None
    used = 0
    known: dict[str, Stats] = {}
    memo: dict[str, frozenset[str]] = {}
    over: dict[str, float] = {}

    def larger(pid: str) -> frozenset[str]:
        """sizes(pid), once a point (memoised: the planner replays at every call)."""
        if pid not in memo:
            memo[pid] = frozenset(sizes(pid)) if sizes is not None else frozenset()
        return memo[pid]

    # with sizes, a round runs smallest first (the fewest points below it, then point order),
    # so that a failure rules out the round's larger runs before they start
    sched = order
    small: frozenset[str] | None = None
    if sizes is not None:
        below = dict.fromkeys(order, 0)
        for pid in order:
            for q in larger(pid):
                if q in below:
                    below[q] += 1
        ranks = sorted(order, key=lambda pid: (below[pid], order[pid]))
        sched = {pid: i for i, pid in enumerate(ranks)}
        small = frozenset(pid for pid in order if below[pid] <= SMALL * len(order))

    def ranking() -> tuple[P, ...]:
        for pid, v in values.items():
            if pid not in known:
                known[pid] = stats(v)
        ids = sorted(values, key=order.__getitem__)
        return tuple(rank((by_id[i] for i in ids), known, strategy.higher_is_better))

    def state(pending: tuple[Run[P], ...], verdict: Verdict) -> ModelState[P]:
        ranked = ranking()
        stats_now = {p.point_id: known[p.point_id] for p in ranked}
        return ModelState(
            strategy,
            tuple(points),
            tuple(rounds),
            pending,
            verdict,
            warm_pts,
            ranked,
            stats_now,
            {pid: by for pid, by in ruled.items() if pid not in failed and pid not in values},
            over,
        )

    def consume(runs: tuple[Run[P], ...]) -> None:
        nonlocal used, running
        fails = []
        for r in runs:
            pid = r.point.point_id
            if recorded[pid].values:
                values[pid] = recorded[pid].values
                ruled.pop(pid, None)  # ran before the failure that rules it out was known
            else:
                failed.add(pid)
                fails.append(r.point)
                for out in rules(pid) if rules is not None else ():
                    if out in order and out not in values and out not in failed:
                        ruled.setdefault(out, pid)
        used += sum(r.restart for r in runs)
        running = runs[-1].point.point_id
        ranked = ranking()
        measured = {p.point_id: known[p.point_id] for p in ranked}
        rounds.append(
            Round(len(rounds), 0, runs, (), measured, ranked, tuple(fails), complete=True)
        )

    while True:
        ranked = ranking()
        best = ranked[0].point_id if ranked else None
        edge = larger if sizes is not None and failed else None
        spent = sum(bool(src) for src in ruled.values())  # ruled out by this search's failures
        # the points the runs' memory puts over the limit are not started either
        over = over_limit(grid, values, memory, {*ruled, *failed}) if memory else {}
        unstarted = {**dict.fromkeys(over, ""), **ruled}
        step = _step(space, values, failed, best, strategy, unstarted, edge, spent, small)
        # runs recorded that this replay did not pick (an invocation with another count of hosts
        # picked rounds of another size): measured all the same, so they join as a round of
        # their own before the search waits or ends, and no measurement is dropped
        # a run of this round that failed already rules out the round's runs not started yet
        # (one host runs a round smallest first, in point order)
        early: dict[str, str] = {}
        for pid in step.picks:
            if rules is not None and pid in recorded and not recorded[pid].values:
                for out in rules(pid):
                    if out in step.picks and out not in recorded:
                        early.setdefault(out, pid)
        orphans = [
            by_id[pid]
            for pid in sorted(recorded, key=order.__getitem__)
            if pid not in values and pid not in failed and pid not in step.picks
        ]
        # (a pick its round's failure rules out is not waited for: the round is recorded)
        waits = any(pid not in recorded and pid not in early for pid in step.picks)
        if orphans and (not step.picks or waits):
            consume(schedule(orphans, sched, 0, running, math.inf, BUDGET_REASON)[0])
            continue
        if not step.picks:
            return state((), Verdict(True, step.gain, strategy.margin, step.ahead, step.why))
        if not rounds and len(step.picks) > budget:
            raise ValueError(
                f"max_restarts={strategy.max_restarts}: the first round needs "
                f"{len(step.picks)} restarts (a design of {strategy.initial} points"
                + (f", {len(values)} of them measured before" if values else "")
                + f"); give at least {len(step.picks)}"
            )
        if used >= budget:
            cut = tuple(Skipped(by_id[pid], 0, BUDGET_REASON) for pid in step.ahead)
            rounds.append(Round(len(rounds), 0, (), cut, complete=True))
            gain = "" if step.gain is None else f" by up to {step.gain:.1%}"
            why = f"not settled: max_restarts={strategy.max_restarts} spent; " + (
                step.why  # a neighbour or a region left: no gain above the margin by the model
                if step.gain is not None and step.gain <= strategy.margin
                else f"an unmeasured point may still beat the best{gain} by the model"
            )
            return state((), Verdict(False, step.gain, strategy.margin, step.ahead, why))
        ruled.update(early)
        cands = [by_id[pid] for pid in step.picks if pid not in early]
        runs, _ = schedule(cands, sched, 0, running, budget - used, BUDGET_REASON)
        pending = tuple(r for r in runs if r.point.point_id not in recorded)
        if pending:
            rounds.append(Round(len(rounds), 0, runs))
            # the round's runs already recorded (an invocation with another count of hosts ran
            # them) are measured: the state counts them while the round waits for the rest
            for pid in (r.point.point_id for r in runs):
                if pid in recorded and recorded[pid].values:
                    values[pid] = recorded[pid].values
            names = tuple(r.point.point_id for r in pending)
            return state(pending, Verdict(False, step.gain, strategy.margin, names, step.why))
        consume(runs)


def search(
    points: Sequence[P],
    grid: Grid,
    measure: Callable[[P, int], Sequence[float]],
    strategy: ModelSearch,
    measurements: Iterable[Measurement] = (),
    warm: Iterable[Measurement] = (),
    excluded: Collection[str] = (),
    rules: Callable[[str], Iterable[str]] | None = None,
    sizes: Callable[[str], Iterable[str]] | None = None,
    memory: Callable[[str], float | None] | None = None,
) -> tuple[ModelState[P], list[Measurement]]:
    """The whole search with `measure(point, 0) -> values` (one per repetition; []: failed),
    continuing from `measurements`, seeded by `warm`, with replay's `excluded`, `rules` and
    `sizes`.
    Returns the final state and the search's own measurements (the warm ones not among them)."""
    recorded = list(measurements)
    seeds = list(warm)
    state = replay(points, grid, recorded, strategy, seeds, excluded, rules, sizes, memory)
    while not state.done:
        # one run at a time, as one host runs them: a failure rules out the round's rest
        run = state.pending[0]
        values = tuple(float(v) for v in measure(run.point, run.level))
        recorded.append(Measurement(run.point.point_id, run.level, values))
        state = replay(points, grid, recorded, strategy, seeds, excluded, rules, sizes, memory)
    return state, recorded
