"""sweep/search/gaussian_process.py: the model the model search fits, its metrics (the axes and
their diagonals) and why a ridge weighs the diagonals."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
import pytest

from sweep.search import gaussian_process
from sweep.search.gaussian_process import _fit, _metrics, bounds

GRID = np.array([(i / 5, j / 5) for i in range(6) for j in range(6)])  # 6 x 6 in [0, 1]^2
SPREAD = [0, 3, 7, 11, 14, 18, 20, 25, 28, 31, 33, 35]  # 12 points measured over it


@pytest.mark.parametrize(("axes", "count"), [(1, 1), (2, 2), (3, 4), (4, 1), (5, 1)])
def test_the_metrics_are_the_axes_and_a_diagonal_of_each_pair(axes: int, count: int) -> None:
    turns = _metrics(axes)
    assert len(turns) == count
    assert np.array_equal(turns[0], np.eye(axes))
    pairs = []
    for turn in turns[1:]:
        assert np.allclose(turn.T @ turn, np.eye(axes))  # a rotation: distances kept
        moved = [a for a in range(axes) if not np.isclose(turn[a, a], 1.0)]
        assert len(moved) == 2 and np.allclose(np.abs(turn[np.ix_(moved, moved)]), math.sqrt(0.5))
        pairs.append(tuple(moved))
    assert pairs == (list(itertools.combinations(range(axes), 2)) if axes <= 3 else [])
    assert len(_metrics(axes, diagonals=False)) == 1


def _best_loglik(f: Callable[[float, float], float], turn: np.ndarray) -> float:
    xa = GRID[SPREAD]
    ya = np.array([f(x, y) for x, y in xa])
    loglik, _, _ = _fit(xa, ya, np.full(len(SPREAD), 1e-5), GRID, 0, turn)
    return float(loglik.max())


def test_a_ridge_is_likelier_along_its_diagonal_and_one_turn_covers_both() -> None:
    axes, diagonal = _metrics(2)
    other = diagonal.copy()
    other[1, 0], other[0, 1] = -other[1, 0], -other[0, 1]  # turned the other way
    rising = lambda x, y: -1.5 * (x - y) ** 2 + 0.2 * x  # noqa: E731  the best y grows with x
    falling = lambda x, y: -1.5 * (x + y - 1) ** 2 + 0.2 * x  # noqa: E731  it falls with x
    separate = lambda x, y: -((x - 0.3) ** 2) - 0.8 * (y - 0.6) ** 2  # noqa: E731  no interaction
    for ridge in (rising, falling):
        # by e^5 and more: the mixture's weight goes to the diagonal
        assert _best_loglik(ridge, diagonal) > _best_loglik(ridge, axes) + 5
        # the other turn is the same settings with the two scales swapped
        assert _best_loglik(ridge, other) == pytest.approx(_best_loglik(ridge, diagonal))
    assert _best_loglik(separate, diagonal) <= _best_loglik(separate, axes) + 1e-6


def test_the_same_data_give_the_same_figures_and_the_axes_alone_on_request() -> None:
    f = [-1.5 * (x - y) ** 2 + 0.2 * x for x, y in GRID]
    args = (
        tuple(tuple(GRID[i]) for i in SPREAD),
        tuple(f[i] for i in SPREAD),
        (1e-4,) * len(SPREAD),
        tuple(tuple(p) for p in GRID),
        SPREAD[-1],
        2.0,
        3.0,
    )
    first = bounds(*args)
    gaussian_process.bounds.cache_clear()
    assert bounds(*args) == first  # no optimiser, no randomness
    assert first[0][SPREAD[-1]] == pytest.approx(0.0, abs=1e-9)  # the reference against itself
    alone = bounds(*args, diagonals=False)
    assert alone != first
    left = [i for i in range(len(GRID)) if i not in SPREAD]
    # on this ridge the diagonals' mean is nearer the truth at the median point not measured
    err = [float(np.median([abs(fit[1][i] - f[i]) for i in left])) for fit in (first, alone)]
    assert err[0] < 0.5 * err[1]
