"""The grid's points on ordered axes: what the model search (sweep/search/model_search.py) and the
memory fit (sweep/search/memory.py) know of where a point sits. Pure logic, no I/O.

Each point sits on ordered axes, the distinct values of each swept parameter in order (numbers by
value, anything else by its text); an axis with one value is no axis. Two points are neighbours
along an axis when they differ there by one step and nowhere else. A grid may have holes (a point
left out, a twin: sweep/config/points.py same_servers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


def _axis_key(value: Any) -> tuple[int, Any]:
    """Numbers in order, then everything else by its text (an algorithm name, None)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, value)
    return (1, str(value))


@dataclass(frozen=True)
class Grid:
    """Points on ordered axes: `index[point_id]` is its position on every axis."""

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
