"""Coordinate descent over the grid: the search that saves restarts. Pure logic, no I/O.

Successive halving (sweep/search.py) starts every point at least once, so it can only save bench
time. On a host where a restart costs minutes of model loading, the restarts are the cost, and
only a search that does not start every point saves them. Descent assumes what the parameters of
speculative decoding usually show: along one parameter (budget, topk, window) with the others
fixed, the objective rises to one optimum and falls after it.

The grid: each point sits on ordered axes (the distinct values of each swept parameter; an axis
with one value is no axis). Two points are neighbours along an axis when they differ there by one
step and nowhere else. The rule, one round at a time, every run at the full bench:

- Round 0 starts at the centre of the grid (of each connected part of it, for a grid with holes)
  and measures it and its neighbours along the first axis.
- Every later round takes the best point measured so far (the best mean of its values, as the
  grid would rank it; a failed run is out) and measures its unmeasured neighbours along the next
  axis in turn; an axis whose neighbours are all measured passes to the next.
- The search ends when the best point has no unmeasured neighbour on any axis: no single step
  from it is left to try. Then it is the best of every point measured, and the points never
  measured are reported as such.
- While nothing has succeeded (the centre failed), a round measures the unmeasured neighbours of
  every point measured, so one failure does not end the search.
- Order within a round and `max_restarts` as in halving (`search._schedule`): a round cut by the
  budget is the last.

The price: a grid whose objective has two separate peaks can end at the lower one. The report
lists the points never measured; `search=grid` measures them all.

`replay(points, grid, measurements, strategy)` rebuilds the state from recorded measurements, as
search.replay does, so a driver that runs one play per round resumes anywhere.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from sweep.grid_axes import Grid
from sweep.search import (
    Measurement,
    P,
    Round,
    State,
    Stats,
    _check_points,
    _schedule,
    rank,
    stats,
)

BUDGET_REASON = "restart budget spent: not measured"


@dataclass(frozen=True)
class Descent:
    """The strategy: at most `max_restarts` server starts (None: no limit). One bench level."""

    max_restarts: int | None = None
    higher_is_better: bool = True
    name: ClassVar[str] = "descent"
    levels: ClassVar[int] = 1
    last_level: ClassVar[int] = 0

    def __post_init__(self) -> None:
        budget = self.max_restarts
        if budget is not None and (
            isinstance(budget, bool) or not isinstance(budget, int) or budget < 1
        ):
            raise ValueError(f"max_restarts={budget}: must be an integer >= 1 (or None)")


def _unique(ids: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(ids))


def replay(
    points: Sequence[P],
    grid: Grid,
    measurements: Iterable[Measurement],
    strategy: Descent,
) -> State[P]:
    """The search state the recorded measurements give (see the module docstring)."""
    order = _check_points(points)
    if set(grid.index) != set(order):
        raise ValueError("grid: its points are not the points searched")
    by_id = {p.point_id: p for p in points}
    recorded = {m.point_id: m for m in measurements if m.level == 0}
    budget = math.inf if strategy.max_restarts is None else strategy.max_restarts
    rounds: list[Round[P]] = []
    measured: dict[str, Stats] = {}
    visited: set[str] = set()
    running: str | None = None
    used, axis = 0, 0
    n_axes = max(1, len(grid.axes))
    starts = grid.starts(order)
    todo = _unique(s for st in starts for s in [st, *(grid.along(st, 0) if grid.axes else [])])
    while True:
        candidates = [by_id[i] for i in todo if i not in visited]
        runs, skipped = _schedule(candidates, order, 0, running, budget - used, BUDGET_REASON)
        pending = tuple(r for r in runs if r.point.point_id not in recorded)
        if pending or not runs:
            rounds.append(Round(len(rounds), 0, runs, skipped))
            return State(strategy, tuple(points), tuple(rounds), pending)
        failed = []
        for r in runs:
            values = recorded[r.point.point_id].values
            if values:
                measured[r.point.point_id] = stats(values)
            else:
                failed.append(r.point)
        visited.update(r.point.point_id for r in runs)
        used += sum(r.restart for r in runs)
        running = runs[-1].point.point_id
        ranking = rank(
            (by_id[i] for i in sorted(measured, key=order.__getitem__)),
            measured,
            strategy.higher_is_better,
        )
        rounds.append(
            Round(
                index=len(rounds),
                level=0,
                runs=runs,
                skipped=skipped,
                stats=dict(measured),
                ranking=tuple(ranking),
                failed=tuple(failed),
                complete=True,
            )
        )
        if skipped:
            return State(strategy, tuple(points), tuple(rounds), ())
        if not ranking:
            todo = _unique(
                q for pid in sorted(visited, key=order.__getitem__) for q in grid.neighbours(pid)
            )
            continue
        best = ranking[0].point_id
        todo = []
        for step in range(1, n_axes + 1):
            a = (axis + step) % n_axes
            fresh = [q for q in grid.along(best, a) if q not in visited] if grid.axes else []
            if fresh:
                todo, axis = fresh, a
                break


def search(
    points: Sequence[P],
    grid: Grid,
    measure: Callable[[P, int], Sequence[float]],
    strategy: Descent,
    measurements: Iterable[Measurement] = (),
) -> tuple[State[P], list[Measurement]]:
    """The whole search with `measure(point, 0) -> values` (one per repetition; []: failed)."""
    recorded = list(measurements)
    state = replay(points, grid, recorded, strategy)
    while not state.done:
        for run in state.pending:
            values = tuple(float(v) for v in measure(run.point, run.level))
            recorded.append(Measurement(run.point.point_id, run.level, values))
        state = replay(points, grid, recorded, strategy)
    return state, recorded
