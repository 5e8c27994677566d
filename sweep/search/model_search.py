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
  the edge is probed from below (sweep/search/model_step.py `probe`).
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

import functools
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from sweep.search import model_step
from sweep.search.grid_axes import Grid
from sweep.search.memory import over_limit
from sweep.search.model_step import SMALL

# the strategy's settings and the smoothed means live with the round; importers find them here
from sweep.search.model_step import ModelSearch as ModelSearch
from sweep.search.model_step import smoothed as smoothed
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
    failure has shown an edge the search probes it from below (probe).
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
    space = model_step.Space.of(grid, order)
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
    over: dict[str, float] = {}

    @functools.cache
    def larger(pid: str) -> frozenset[str]:
        """sizes(pid), once a point (memoised: the planner replays at every call)."""
        return frozenset(sizes(pid)) if sizes is not None else frozenset()

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
        step = model_step.step(space, values, failed, best, strategy, unstarted, edge, spent, small)
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
