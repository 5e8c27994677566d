"""The model the model search (sweep/search/model_search.py) fits to what it has measured: a
Gaussian process over the grid's points, each axis scaled to [0, 1], that gives every point an upper
bound on its gain over a reference point and the model's mean there. Pure numpy (imported where a
model is fitted: the planner answers every host with a fresh process, and only the model search
fits).

- The objective is the mean log of each point measured, its noise variance given (the measured
  noise of one repetition over its repetitions); on top of it an unknown constant mean,
  integrated out (restricted likelihood), and a Matern 5/2 correlation.
- The hyperparameters are not fitted but taken over a fixed grid, weighted by their likelihood:
  the same data always give the same figures, with no optimiser to fail. The grid: a metric
  (the axes as they are or, with 2 or 3 axes, a diagonal of two of them: _metrics), a length
  scale per axis of that metric (0.25 to 2 of the axis's extent, 4 an axis with 3 axes), an
  amplitude (a sd of 7 to 60 % around the mean) and a misfit (none or 2 %).
- Why the diagonals (2026-12-04, benchmarks/search_surfaces.py, seeds 1 to 5, `--no-diagonals`
  against the default): a ridge, two parameters whose best values move together, is a long scale
  along it and a short one across; on the axes alone it is short scales on both, which leave
  the points between those measured open. With the diagonals the median restarts on ridge
  surfaces fell by 1 to 4 points of the grid's (at 5 % noise from 38 to 40.3 % to 36 to 39 %),
  the other classes within 2 points either way, and 1,195 of 1,200 answers within 2 % of the
  true best (1,192 on the axes alone), for about 4 times the CPU of a fit (13 to 85 ms on the
  72-point grid on the axes alone, 45 to 320 ms with the diagonals).
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Array = NDArray[np.float64]


def _matern(r: Any) -> Array:
    """Matern 5/2 correlation at scaled distance r."""
    import numpy as np

    s5 = math.sqrt(5.0) * r
    out: Array = (1.0 + s5 + s5 * s5 / 3.0) * np.exp(-s5)
    return out


def _scales(n_axes: int) -> list[tuple[float, ...]]:
    """The length scales tried, per axis, in units of the axis's extent (its first to its last
    value): a few per axis, fewer the more axes there are (at most about 256 combinations)."""
    import numpy as np

    per_axis = {1: 6, 2: 5, 3: 4, 4: 4, 5: 3}.get(n_axes, 2)
    base = np.geomspace(0.25, 2.0, per_axis)
    grids = np.meshgrid(*([base] * n_axes), indexing="ij")
    return [tuple(float(g.flat[i]) for g in grids) for i in range(grids[0].size)]


AMPLITUDES = (0.07, 0.15, 0.3, 0.6)  # prior sd of the log objective around its mean
NUGGETS = (0.0, 0.02**2)  # model misfit, on top of the measured noise (log units)


@functools.lru_cache(maxsize=8)
def _metrics(n_axes: int, diagonals: bool = True) -> tuple[Array, ...]:
    """The metrics tried, as rotations of the scaled axes: the axes as they are and, for each
    pair of axes, the grid turned 45 degrees in their plane, so that a length scale can run along
    a diagonal: a ridge (two parameters that interact, the best of one moving with the other) is
    a long scale along it and a short one across, where the axes' own scales see only short ones.
    One turn a pair covers both diagonals: the other is the same settings with the pair's two
    scales swapped (every axis tries the same scales). Pairs only up to 3 axes: with more, the
    settings (and the fit's cost) would grow past 7 times. `diagonals` False: the axes alone."""
    import numpy as np

    turns = [np.eye(n_axes)]
    if diagonals and 2 <= n_axes <= 3:
        c = math.sqrt(0.5)
        for a, b in itertools.combinations(range(n_axes), 2):
            turn = np.eye(n_axes)
            turn[a, a], turn[b, a], turn[a, b], turn[b, b] = c, c, -c, c
            turns.append(turn)
    return tuple(turns)


def _fit(
    xa: Array, ya: Array, noise: Array, ga: Array, ref: int, turn: Array
) -> tuple[Array, Array, Array]:
    """The settings of one metric (`turn`, see _metrics), every combination of length scales,
    amplitude and misfit flattened in that order: each one's restricted log likelihood (the
    constant mean integrated out), its mean of f at every point of the grid and its variance of
    f(point) - f(ref)."""
    import numpy as np

    n, axes = xa.shape
    scales = np.asarray(_scales(axes), dtype=np.float64)  # (S, A)
    inv = 1.0 / scales**2
    xt, gt = xa @ turn, ga @ turn
    c_xx = _matern(np.sqrt(np.einsum("ija,sa->sij", (xt[:, None] - xt[None]) ** 2, inv)))
    c_gx = _matern(np.sqrt(np.einsum("mja,sa->smj", (gt[:, None] - xt[None]) ** 2, inv)))
    c_gr = _matern(np.sqrt(((gt - gt[ref]) ** 2) @ inv.T)).T  # (S, N): corr with the reference
    amp2 = np.asarray(AMPLITUDES, dtype=np.float64) ** 2
    nug = np.asarray(NUGGETS, dtype=np.float64)
    n_s, n_a, n_n = len(scales), len(amp2), len(nug)
    diag = nug[:, None] + noise[None, :]  # (n_n, n)
    k = amp2[None, :, None, None, None] * c_xx[:, None, None]
    k = (k + (np.eye(n)[None] * diag[:, None, :])[None, None]).reshape(-1, n, n)
    chol = np.linalg.cholesky(k)
    linv = np.linalg.inv(chol)  # L^-1, (h, n, n)
    li1 = linv.sum(axis=2)  # L^-1 1
    liy = linv @ ya
    s = np.einsum("hi,hi->h", li1, li1)  # 1' K^-1 1
    mhat = np.einsum("hi,hi->h", li1, liy) / s  # the constant mean (generalised least squares)
    lir = liy - mhat[:, None] * li1
    loglik = (
        -0.5 * np.einsum("hi,hi->h", lir, lir)
        - np.log(np.diagonal(chol, axis1=1, axis2=2)).sum(axis=1)
        - 0.5 * np.log(s)
    )
    amp_h = np.broadcast_to(amp2[None, :, None], (n_s, n_a, n_n)).reshape(-1)
    scale_h = np.repeat(np.arange(n_s), n_a * n_n)
    k_gx = amp_h[:, None, None] * c_gx[scale_h]  # (h, N, n)
    alpha = np.einsum("hji,hj->hi", linv, lir)  # K^-1 (y - mhat)
    level = mhat[:, None] + np.einsum("hmn,hn->hm", k_gx, alpha)  # (h, N): the mean at each
    g = k_gx - k_gx[:, ref, None, :]  # cov(f(point) - f(ref), data)
    lig = linv @ np.swapaxes(g, 1, 2)  # (h, n, N)
    prior = 2.0 * amp_h[:, None] * (1.0 - c_gr[scale_h])
    one_g = np.einsum("hn,hnm->hm", li1, lig)  # the mean's own uncertainty, integrated out
    var = np.maximum(prior - np.einsum("hnm,hnm->hm", lig, lig) + one_g**2 / s[:, None], 0.0)
    return loglik, level, var


@functools.lru_cache(maxsize=256)
def bounds(
    x: tuple[tuple[float, ...], ...],
    y: tuple[float, ...],
    noise: tuple[float, ...],
    grid: tuple[tuple[float, ...], ...],
    ref: int,
    confidence: float,
    likely: float = 0.0,
    diagonals: bool = True,
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """For every point of `grid`, the upper bound of f(point) - f(grid[ref]), f the log
    objective (higher is better), by a Gaussian process fitted to the means `y` at `x` (their
    noise variances `noise`): constant mean integrated out, Matern 5/2 with a length scale per
    axis of one of the metrics (_metrics: the axes or a diagonal of two), its hyperparameters
    (metric, length scales, amplitude, misfit) taken over a fixed grid and weighted by their
    marginal likelihood (no optimiser, no randomness: the same data give the same figures). The
    bound is the larger of the mixture's mean + `confidence` sd and that of every likely
    hyperparameter (log likelihood within `likely` of the best's) on its own, so that a surface
    the data leave open (a narrow peak between points measured) keeps its unmeasured points open
    too. Returns the bounds and, from the same fit, the mixture's mean of f(point) (see
    sweep/search/model_step.py smoothed(), _batch()). `diagonals`: see _metrics. One metric at a
    time: the memory is one metric's."""
    import numpy as np

    xa = np.asarray(x, dtype=np.float64)  # (n, A)
    ya = np.asarray(y, dtype=np.float64)
    na = np.asarray(noise, dtype=np.float64)
    ga = np.asarray(grid, dtype=np.float64)  # (N, A)
    fits = [_fit(xa, ya, na, ga, ref, turn) for turn in _metrics(xa.shape[1], diagonals)]
    loglik, level, var = (np.concatenate(part) for part in zip(*fits, strict=True))
    w = np.exp(loglik - loglik.max())
    w /= w.sum()
    means = tuple(float(v) for v in w @ level)
    mean = level - level[:, ref, None]
    mix_mean = w @ mean
    mix_sd = np.sqrt(np.maximum(w @ (var + mean**2) - mix_mean**2, 0.0))
    bound = mix_mean + confidence * mix_sd
    likely_h = loglik >= loglik.max() - likely
    bound = np.maximum(bound, (mean + confidence * np.sqrt(var))[likely_h].max(axis=0))
    return tuple(float(v) for v in bound), means
