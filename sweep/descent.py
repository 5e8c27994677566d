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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

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


def _axis_key(value: Any) -> tuple[int, Any]:
    """Numbers in order, then everything else by its text (an algorithm name, None)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, value)
    return (1, str(value))


@dataclass(frozen=True)
class Grid:
    """Points on ordered axes: `coords[point_id]` is its value on every axis."""

    axes: tuple[tuple[Any, ...], ...]  # each axis's distinct values, in order (2 or more)
    index: Mapping[str, tuple[int, ...]]  # point_id -> its position on each axis
    at: Mapping[tuple[int, ...], str]

    @classmethod
    def of(cls, coords: Mapping[str, Sequence[Any]]) -> Grid:
        width = {len(c) for c in coords.values()}
        if len(width) > 1:
            raise ValueError(f"coords: every point needs the same axes, got widths {width}")
        n = width.pop() if width else 0
        values = [sorted({c[i] for c in coords.values()}, key=_axis_key) for i in range(n)]
        kept = [i for i in range(n) if len(values[i]) > 1]
        axes = tuple(tuple(values[i]) for i in kept)
        index = {pid: tuple(values[i].index(c[i]) for i in kept) for pid, c in coords.items()}
        at: dict[tuple[int, ...], str] = {}
        for pid, pos in index.items():
            if pos in at:
                raise ValueError(f"coords: {at[pos]} and {pid} are the same point")
            at[pos] = pid
        return cls(axes, index, at)

    def along(self, point_id: str, axis: int) -> list[str]:
        """The neighbours of a point along one axis: one step down, one step up."""
        pos = self.index[point_id]
        out = []
        for step in (-1, 1):
            q = (*pos[:axis], pos[axis] + step, *pos[axis + 1 :])
            if q in self.at:
                out.append(self.at[q])
        return out

    def neighbours(self, point_id: str) -> list[str]:
        return [q for axis in range(len(self.axes)) for q in self.along(point_id, axis)]

    def starts(self, order: Mapping[str, int]) -> list[str]:
        """The centre of each connected part, in point order: the point nearest the middle of
        the part's extent on every axis (the first in point order among equals)."""
        seen: set[str] = set()
        centres = []
        for pid in sorted(self.index, key=order.__getitem__):
            if pid in seen:
                continue
            part, todo = [], [pid]
            seen.add(pid)
            while todo:
                cur = todo.pop()
                part.append(cur)
                for q in self.neighbours(cur):
                    if q not in seen:
                        seen.add(q)
                        todo.append(q)
            mids = [
                (min(self.index[q][a] for q in part) + max(self.index[q][a] for q in part)) / 2
                for a in range(len(self.axes))
            ]

            def off(q: str, mids: list[float] = mids) -> tuple[float, int]:
                return (sum(abs(i - m) for i, m in zip(self.index[q], mids, strict=True)), order[q])

            centres.append(min(part, key=off))
        return sorted(centres, key=order.__getitem__)


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
