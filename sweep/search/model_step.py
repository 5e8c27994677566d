"""One round of the model search (sweep/search/model_search.py, whose docstring states the
rule): its settings (ModelSearch), the grid scaled to [0, 1] by rank (Space), the model's fit over
the points measured, each unmeasured point's bound on its gain over the answer, and the points the
next round measures (step: the largest bounds, the regions left, the best's neighbours, the edge
probed from below). Pure logic, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from bench.more_repetitions import MARGIN, MAX_REPETITIONS
from sweep.search import gaussian_process
from sweep.search.grid_axes import Grid

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


# ---------------------------------------------------------------- the data


@dataclass(frozen=True)
class Space:
    """The grid, the points in point order, and each point's position with every axis scaled
    to [0, 1] from its first value to its last (by rank: the grid's values are chosen steps)."""

    grid: Grid
    order: Mapping[str, int]
    every: tuple[str, ...]
    coords: tuple[tuple[float, ...], ...]  # in the order of `every`

    @classmethod
    def of(cls, grid: Grid, order: Mapping[str, int]) -> Space:
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
    space: Space, values: Mapping[str, Sequence[float]], higher_is_better: bool
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
    space: Space,
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
    space: Space,
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
    space = Space.of(grid, order)
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


def _design(space: Space, tried: Iterable[str], free: Sequence[str], count: int) -> list[str]:
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


def step(
    space: Space,
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
    once a failure has shown an edge, see probe; `spent`: points this search's failures ruled
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
        first = probe(ranked[0], open_, values, bound, space, larger)
        return _Step(_batch(space, values, best, strategy, first, free), gain, ahead, why)
    # the model says settled; two rules of where it cannot be trusted may say not yet
    rules: tuple[tuple[Callable[[], tuple[str, ...]], str], ...] = (
        (
            lambda: _near_best(space, best, free, bound, strategy) if strategy.neighbours else (),
            f"a neighbour of the best (one step along one axis) it does not put more than "
            f"{strategy.margin:.1%} below it is not measured",
        ),
        (
            lambda: uncovered(space, tried, free, bound, strategy),
            f"a point it does not rule out (within {strategy.ruled_out:.0%} of it) lies farther "
            f"than {strategy.cover:g} from every point measured",
        ),
    )
    for left, but in rules:
        picks = left()
        if picks:
            first = probe(picks[0], picks, values, bound, space, larger)
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


def probe(
    pick: str,
    candidates: Sequence[str],
    values: Collection[str],
    bound: Mapping[str, float],
    space: Space,
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
    space: Space,
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


def uncovered(
    space: Space,
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
    space: Space,
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
    bound, level = _gains(space, values, best, strategy)  # the fit step made: cached
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
