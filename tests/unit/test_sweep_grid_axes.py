"""sweep.search.grid_axes: the grid's points on ordered axes, their neighbours."""

from __future__ import annotations

import pytest

from sweep.config.points import Point
from sweep.search.grid_axes import Grid

BUDGETS = (32, 40, 48, 64)
TOPKS = (1, 2, 3)


def points() -> list[Point]:
    return sorted([Point("DDTREE", b, k, 2048) for b in BUDGETS for k in TOPKS], key=Point.sort_key)


def grid_of(pts: list[Point]) -> Grid:
    return Grid.of({p.point_id: (p.algorithm, p.budget, p.topk, p.window) for p in pts})


def test_the_grid_keeps_axes_with_several_values_in_order() -> None:
    g = grid_of(points())
    assert g.axes == ((32, 40, 48, 64), (1, 2, 3))  # algorithm and window: one value, no axis
    assert g.along("ddtree-b40-k2-w2048", 0) == ["ddtree-b32-k2-w2048", "ddtree-b48-k2-w2048"]
    assert g.along("ddtree-b40-k3-w2048", 1) == ["ddtree-b40-k2-w2048"]
    assert g.neighbours("ddtree-b32-k1-w2048") == ["ddtree-b40-k1-w2048", "ddtree-b32-k2-w2048"]


def test_numbers_sort_by_value_and_anything_else_by_its_text() -> None:
    g = Grid.of({"a": (10, "EAGLE3"), "b": (9, "DDTREE"), "c": (None, "DDTREE")})
    assert g.axes == ((9, 10, None), ("DDTREE", "EAGLE3"))


def test_a_grid_with_holes_has_no_neighbour_across_them_and_no_point_twice() -> None:
    g = Grid.of({"a": (1, 1), "b": (2, 1), "c": (8, 8), "d": (9, 8)})
    assert g.neighbours("a") == ["b"] and g.neighbours("c") == ["d"]
    with pytest.raises(ValueError, match="x and y are the same point"):
        Grid.of({"x": (1, 2), "y": (1, 2)})
    with pytest.raises(ValueError, match="every point needs the same axes"):
        Grid.of({"x": (1, 2), "y": (1,)})
