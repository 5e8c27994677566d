"""The model search (sweep/search/model_search.py) against the full grid on generated objective
surfaces: how many restarts it spends and whether its answer is the grid's.

    .venv/bin/python benchmarks/search_surfaces.py           # 30 surfaces a class, 2 jobs
    .venv/bin/python benchmarks/search_surfaces.py --quick   # 10 a class
    .venv/bin/python benchmarks/search_surfaces.py --confirm 2   # + the best's rivals again
    .venv/bin/python benchmarks/search_surfaces.py --smooth 2    # + the answer by the model's mean
    .venv/bin/python benchmarks/search_surfaces.py --max-repetitions 3   # no more repetitions
    .venv/bin/python benchmarks/search_surfaces.py --likely 2    # the likely settings' span (3)
    .venv/bin/python benchmarks/search_surfaces.py --cover 2     # without the rule of regions left
    .venv/bin/python benchmarks/search_surfaces.py --no-neighbours  # without the best's neighbours
    .venv/bin/python benchmarks/search_surfaces.py --no-diagonals  # the model's scales on the axes
    .venv/bin/python benchmarks/search_surfaces.py --budget-axis linear  # the budget, not its log
    .venv/bin/python benchmarks/search_surfaces.py --load-seconds 360 --rep-seconds 60  # the costs
    .venv/bin/python benchmarks/search_surfaces.py --classes edge,narrow --noises 0.05  # a subset
    .venv/bin/python benchmarks/search_surfaces.py --first-out 0  # no stop after one repetition
    .venv/bin/python benchmarks/search_surfaces.py --no-memory  # without the runs' memory fit

The grid: 6 budgets (8 16 32 48 64 96) x 4 topk (1 2 4 6) x 3 windows (1024 2048 4096) = 72 DDTree
points. Seven classes of surface (the log objective as a function of log budget, topk and log
window, each scaled to [0, 1]), `--surfaces` of each, seeded (`--seed`):

- independent: one concave curve per parameter, its peak inside the range or past an end;
- ridge: budget and topk interact, correlation 0.5 to 0.9 in size, either sign, plus a window
  curve: the best topk moves with the budget;
- plateau: below a budget (16 to 64) topk has no effect (a DDTree chain): those points start the
  same server as their topk-1 point, so, as the planner does with such twins (sweep/config/points.py
  same_servers), the grid and the search count them once; above it a tree adds a gain (or a
  loss) that grows with the budget, best at a width that grows with it too;
- two-peaks: two separate bumps over a floor, the lower 60-100 % of the higher, each a local best
  of the grid (one step along one axis leads nowhere higher);
- narrow: peaks of random width: a broad bump (0.3 to 1 of each axis) and a narrow one 0.5 to 1.2
  grid steps wide, centred on a grid point, 0.8 to 1.25 times its height;
- anisotropic: one bump on a LINEAR budget axis, turned at random in the three axes, its widths
  0.12 to 1.5 (up to ten times apart), plus a gentle tilt;
- edge: a surface that peaks late (concave curves peaking at 0.4 to 1.6 of each axis), a ridge
  or two peaks, and an edge: every point whose memory proxy budget * (1 + c * topk) * window ** a
  (c 0.1 to 1, a 0.3 to 1.2) is in the top 10 to 50 % of the grid fails to start (an upper set
  in the three axes: `failing`); its measurement is [] (a failed start), and the grid and the
  search are judged against the best point that can run. The model search gets
  sweep/store/failures.py dominated as `rules` (what a failure rules out) and `sizes` (which points
  are at least as large), as the sweep hands it every failure out of memory; every class gets them
  (no other class fails). A start that runs reports the share of its memory limit it used
  (memory_share: the proxy over the limit, which lies halfway in logs between the largest point that
  runs and the smallest that fails), as a run's journal does to the sweep (sweep/search/memory.py
  memory_share), and the model search does not start a point the fit of those shares puts over
  the limit (sweep/search/memory.py over_limit; `--no-memory`: without it).

Every surface spans a factor 2 to 5 between its worst and best point. A measurement is three
repetitions, each the true value times 1 + noise x N(0, 1), noise 2 % and 5 %, drawn once per point
(the grid and the search see the same draws). The grid's answer is its best mean. The model
search measures as the sweep does (adaptive()): one repetition, then, unless it is clearly out
(bench/more_repetitions.py MoreRule.first), the rest, then more while the rule says so.

The cost model (`--load-seconds`, 360; `--rep-seconds`, 60): a start costs a load, a failed
start too (its seconds to failure), a repetition its bench. The full grid starts every point,
failures included, with three repetitions each. A second table gives, per class and noise, for
the grid and the model search, the time as a share of the grid's (median / max), the
starts (median / max share), the failed starts (median / max) and the answers within 2 % of the
best point that can run, and whether the model search meets the targets (within 2 % on all but
1 in 30; time median at most 30 % of the grid's at 2 % noise and 65 % at 5 %; failed starts
median at most 2 and max at most 4).

Per class and noise the table gives, for the model search: the restarts (median and
max, as a share of the grid's restarts: one per distinct server), how often the answer is within
2 % of the grid's answer (its true value at least 98 % of the grid answer's true value: the
acceptance figure), how often it is within 2 % of the true best, how often it is the true best,
and the worst answer (true value / true best); the grid's own figures against the true best; and
how many of the model search's stops were settled (no unmeasured point can beat its answer by
more than the tie margin, by its model, and none it does not rule out lies far from every point
measured: the rule of regions left); of its misses (not within 2 % of the true best), how many
never measured the true best; and how the report would put the grid's and the search's misses
(sweep/results/decision.py's test of the answer against the runner-up): the winner named, or a tie
that hands the operator a point within 2 % of the true best, or a tie of two misses.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import more_repetitions
from sweep.config.points import Point
from sweep.results.stats import compare_repetitions
from sweep.search import grid_axes, model_search
from sweep.search.search_state import Measurement
from sweep.store import failures

BUDGETS = (8, 16, 32, 48, 64, 96)
TOPKS = (1, 2, 4, 6)
WINDOWS = (1024, 2048, 4096)
REPS = 3
CLASSES = ("independent", "ridge", "plateau", "two-peaks", "narrow", "anisotropic", "edge")
NOISES = (0.02, 0.05)
WITHIN = 0.02  # an answer within 2 % of the true best counts as found

Surface = Callable[[float, float, float], float]  # (budget, topk, window) in [0, 1] -> log value
Array = np.typing.NDArray[np.float64]


def _budget_at(budget: float, axis: str = "log") -> float:
    """Where a budget sits on the surfaces' budget axis, scaled to [0, 1]: by its log (the suite
    as specified: a doubling is a step) or, with `--budget-axis linear`, by the budget itself."""
    if axis == "linear":
        return (budget - BUDGETS[0]) / (BUDGETS[-1] - BUDGETS[0])
    return math.log(budget / BUDGETS[0]) / math.log(BUDGETS[-1] / BUDGETS[0])


def _t(p: Point, axis: str = "log") -> tuple[float, float, float]:
    """A point's position: budget (see _budget_at), topk and log window, each scaled to [0, 1]."""
    tb = _budget_at(p.budget, axis)
    tk = (p.topk - TOPKS[0]) / (TOPKS[-1] - TOPKS[0])
    tw = math.log(p.window / WINDOWS[0]) / math.log(WINDOWS[-1] / WINDOWS[0])
    return tb, tk, tw


def independent(rng: np.random.Generator, axis: str = "log") -> Surface:
    """A sum of one concave curve per parameter (its peak inside the range or past an end)."""
    mid = rng.uniform(-0.3, 1.3, 3)
    curve = rng.uniform([0.3, 0.2, 0.05], [1.5, 1.2, 0.5])
    return lambda b, k, w: -float(curve @ (np.array([b, k, w]) - mid) ** 2)


def ridge(rng: np.random.Generator, axis: str = "log") -> Surface:
    """Budget and topk interact: a quadratic peak whose budget-topk correlation is 0.5 to 0.9 in
    size, either sign (the best topk moves with the budget: a ridge across the grid), plus a
    window curve."""
    mid = rng.uniform(0.0, 1.0, 2)
    sd = rng.uniform(0.3, 0.8, 2)
    rho = rng.uniform(0.5, 0.9) * rng.choice([-1.0, 1.0])
    cov = np.array([[sd[0] ** 2, rho * sd[0] * sd[1]], [rho * sd[0] * sd[1], sd[1] ** 2]])
    prec = np.linalg.inv(cov)
    wmid, wcurve = rng.uniform(-0.3, 1.3), rng.uniform(0.05, 0.5)

    def f(b: float, k: float, w: float) -> float:
        d = np.array([b, k]) - mid
        return -0.5 * float(d @ prec @ d) - wcurve * (w - wmid) ** 2

    return f


def plateau(rng: np.random.Generator, axis: str = "log") -> Surface:
    """DDTree-like: below a budget the tree is a chain and topk has no effect; from that budget
    on, a wider tree adds a gain that grows with the budget, up to a best width that grows with
    the budget too (wider costs); the gain may be negative (trees do not pay)."""
    start = BUDGETS[int(rng.integers(1, 5))]  # topk acts from this budget on
    ts = _budget_at(start, axis)
    bmid, bcurve = rng.uniform(-0.2, 0.9), rng.uniform(0.3, 1.5)
    gain = rng.uniform(-0.1, 0.5)  # the best tree's gain at the largest budget (log)
    width0, width1 = rng.uniform(0.2, 0.6), rng.uniform(0.2, 1.0)
    wmid, wcurve = rng.uniform(-0.3, 1.3), rng.uniform(0.05, 0.5)

    def f(b: float, k: float, w: float) -> float:
        v = -bcurve * (b - bmid) ** 2 - wcurve * (w - wmid) ** 2
        if b >= ts - 1e-9:
            reach = (b - ts + 0.2) / (1.0 - ts + 0.2)  # grows with the budget
            best_k = min(1.0, width0 + width1 * (b - ts))
            # 0 at topk 1 (no tree), 1 at the best width, below 0 past twice that
            v += gain * reach * (1.0 - ((k - best_k) / best_k) ** 2)
        return v

    return f


def two_peaks(rng: np.random.Generator, axis: str = "log") -> Surface:
    """Two bumps over a floor, apart, each a local best of the grid (resampled until both are),
    the lower 60-100 % of the higher's height."""
    while True:
        p1, p2 = rng.uniform(0, 1, 3), rng.uniform(0, 1, 3)
        s1, s2 = rng.uniform(0.25, 0.5, 3), rng.uniform(0.25, 0.5, 3)
        h2, floor = rng.uniform(0.6, 1.0), rng.uniform(0.1, 0.3)

        def f(
            b: float,
            k: float,
            w: float,
            p1: Array = p1,
            p2: Array = p2,
            s1: Array = s1,
            s2: Array = s2,
            h2: float = h2,
            floor: float = floor,
        ) -> float:
            x = np.array([b, k, w])
            g1 = math.exp(-0.5 * float(np.sum(((x - p1) / s1) ** 2)))
            g2 = h2 * math.exp(-0.5 * float(np.sum(((x - p2) / s2) ** 2)))
            return math.log(floor + g1 + g2)

        if _local_bests(f, axis) >= 2:
            return f


def _local_bests(f: Surface, axis: str = "log") -> int:
    """How many grid points no neighbour (one step along one axis) beats."""
    axes = (BUDGETS, TOPKS, WINDOWS)
    ts = [
        [_t(Point("DDTREE", v, TOPKS[0], WINDOWS[0]), axis)[0] for v in BUDGETS],
        [_t(Point("DDTREE", BUDGETS[0], v, WINDOWS[0]), axis)[1] for v in TOPKS],
        [_t(Point("DDTREE", BUDGETS[0], TOPKS[0], v), axis)[2] for v in WINDOWS],
    ]
    shape = tuple(len(a) for a in axes)
    val = np.array([f(ts[0][i], ts[1][j], ts[2][k]) for i, j, k in np.ndindex(*shape)]).reshape(
        shape
    )
    count = 0
    for idx in np.ndindex(*shape):
        higher = False
        for a in range(3):
            for step in (-1, 1):
                q = list(idx)
                q[a] += step
                if 0 <= q[a] < shape[a] and val[tuple(q)] > val[idx]:
                    higher = True
        count += not higher
    return count


def _steps(axis: str) -> tuple[float, float, float]:
    """The median step of each axis on the [0, 1] scale of the surfaces (budget, topk, window)."""
    bs = [_budget_at(b, axis) for b in BUDGETS]
    ks = [(k - TOPKS[0]) / (TOPKS[-1] - TOPKS[0]) for k in TOPKS]
    return (
        float(np.median(np.diff(bs))),
        float(np.median(np.diff(ks))),
        0.5,  # three windows, a doubling each
    )


def narrow(rng: np.random.Generator, axis: str = "log") -> Surface:
    """Peaks of random width: a broad bump (width 0.3 to 1 of each axis) and a narrow one about
    one grid step wide (0.5 to 1.2 steps, its centre on a grid point), 0.8 to 1.25 times its
    height, over a floor: either may be the best, and the narrow one is what a smooth model of
    the points around it does not see."""
    tb, tk, tw = _steps(axis)
    pts = grid_points()
    c1 = rng.uniform(0, 1, 3)
    s1 = rng.uniform(0.3, 1.0, 3)
    c2 = np.array(_t(pts[int(rng.integers(len(pts)))], axis))
    s2 = np.array([tb, tk, tw]) * rng.uniform(0.5, 1.2, 3)
    h2, floor = rng.uniform(0.8, 1.25), rng.uniform(0.1, 0.3)

    def f(b: float, k: float, w: float) -> float:
        x = np.array([b, k, w])
        g1 = math.exp(-0.5 * float(np.sum(((x - c1) / s1) ** 2)))
        g2 = h2 * math.exp(-0.5 * float(np.sum(((x - c2) / s2) ** 2)))
        return math.log(floor + g1 + g2)

    return f


def _linear(b: float, axis: str) -> float:
    """A budget's position on the linear scale, from its position on `axis`'s."""
    if axis == "linear":
        return b
    grown = BUDGETS[0] * float((BUDGETS[-1] / BUDGETS[0]) ** b)
    return (grown - BUDGETS[0]) / (BUDGETS[-1] - BUDGETS[0])


def anisotropic(rng: np.random.Generator, axis: str = "log") -> Surface:
    """One bump on a LINEAR budget axis (whatever `--budget-axis`: 8 to 16 is a small step,
    48 to 96 a large one), turned at random in the three axes, its widths 0.12 to 1.5 apart by
    up to ten times (long along one direction, short across another), plus a gentle tilt."""
    q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    widths = np.exp(rng.uniform(math.log(0.12), math.log(1.5), 3))
    prec = q @ np.diag(1.0 / widths**2) @ q.T
    mid = rng.uniform(-0.1, 1.1, 3)
    tilt = rng.uniform(-0.3, 0.3, 3)

    def f(b: float, k: float, w: float) -> float:
        x = np.array([_linear(b, axis), k, w])
        d = x - mid
        return -0.5 * float(d @ prec @ d) + float(tilt @ x)

    return f


def edge_base(rng: np.random.Generator, axis: str = "log") -> Surface:
    """The objective of an edge surface before the edge: concave curves that peak late (at
    0.4 to 1.6 of each axis: a bigger tree pays until memory runs out), a ridge, or two peaks."""
    which = int(rng.integers(3))
    if which == 1:
        return ridge(rng, axis)
    if which == 2:
        return two_peaks(rng, axis)
    mid = rng.uniform(0.4, 1.6, 3)
    curve = rng.uniform([0.3, 0.2, 0.05], [1.5, 1.2, 0.5])
    return lambda b, k, w: -float(curve @ (np.array([b, k, w]) - mid) ** 2)


MAKERS = {
    "independent": independent,
    "ridge": ridge,
    "plateau": plateau,
    "two-peaks": two_peaks,
    "narrow": narrow,
    "anisotropic": anisotropic,
    "edge": edge_base,
}


def failing(kind: str, index: int, seed: int) -> frozenset[str]:
    """The points whose start fails (out of memory) on an edge surface (none on the others):
    every point past a random budget x topk x window edge, an upper set in the three axes. The
    memory proxy budget * (1 + c * topk) * window ** a (c 0.1 to 1, a 0.3 to 1.2) rises along
    each axis; the points above its quantile 1 - f fail, f 10 to 50 % of the grid."""
    if kind != "edge":
        return frozenset()
    rng = np.random.default_rng([seed, CLASSES.index(kind), index, 99])
    c, a, frac = rng.uniform(0.1, 1.0), rng.uniform(0.3, 1.2), rng.uniform(0.1, 0.5)
    pts = grid_points()
    size = {
        p.point_id: math.log(p.budget) + math.log1p(c * p.topk) + a * math.log(p.window)
        for p in pts
    }
    ranked = sorted(size, key=lambda pid: -size[pid])
    return frozenset(ranked[: max(1, round(frac * len(pts)))])


def memory_share(kind: str, index: int, seed: int) -> dict[str, float]:
    """What a start at each point of an edge surface reports of its memory (SGLang's avail mem
    after graph capture, as a share of what is left for it): the proxy's memory over the limit,
    which sits halfway (in logs) between the largest point that runs and the smallest that
    fails; at or above 1 the start fails. Empty on the other classes."""
    if kind != "edge":
        return {}
    rng = np.random.default_rng([seed, CLASSES.index(kind), index, 99])
    c, a, _ = rng.uniform(0.1, 1.0), rng.uniform(0.3, 1.2), rng.uniform(0.1, 0.5)
    fails = failing(kind, index, seed)
    size = {
        p.point_id: math.log(p.budget) + math.log1p(c * p.topk) + a * math.log(p.window)
        for p in grid_points()
    }
    runs = max(v for pid, v in size.items() if pid not in fails)
    limit = (runs + min(size[pid] for pid in fails)) / 2
    return {pid: math.exp(v - limit) for pid, v in size.items()}


def grid_points() -> list[Point]:
    pts = [Point("DDTREE", b, k, w) for b in BUDGETS for k in TOPKS for w in WINDOWS]
    return sorted(pts, key=Point.sort_key)


def distinct_points(kind: str, true: dict[str, float]) -> list[Point]:
    """The grid's points less the twins: on a plateau surface, a point below the budget where
    topk acts is the same server as its topk-1 point (its value is that point's by
    construction), so it is not searched, as the planner leaves twins out of a search."""
    pts = grid_points()
    if kind != "plateau":
        return pts
    return [
        p
        for p in pts
        if p.topk == TOPKS[0]
        or true[p.point_id] != true[Point("DDTREE", p.budget, TOPKS[0], p.window).point_id]
    ]


@dataclass(frozen=True)
class Outcome:
    restarts: int
    grid: int  # the grid's restarts on the surface (one per distinct server)
    ratio: float  # true value of the answer / true best
    vs_grid: float  # true value of the answer / true value of the grid's answer
    settled: bool | None = None
    reps: int | None = None  # repetitions run, where they differ from REPS a restart
    rounds: int | None = None  # the search's rounds (a round's runs go to the hosts at once)
    seen: bool | None = None  # whether the true best was among the points measured
    # the report's decision (sweep/results/decision.py): whether it names the answer the winner (its
    # test tells it from the runner-up) or calls the two a tie, and the runner-up's true value /
    # true best (on a tie the operator is handed both)
    called: bool | None = None
    runner: float | None = None
    # the cost model (--load-seconds, --rep-seconds): every start a load, a failed one too (its
    # seconds to failure), every repetition a bench; and the grid's, every point started
    time: float | None = None
    grid_time: float | None = None
    fails: int = 0  # failed starts
    first_out: int = 0  # runs stopped after their first repetition (clearly out)


def truth(kind: str, index: int, seed: int, axis: str = "log") -> dict[str, float]:
    """A surface's noise-free objective (tokens/s, best 1000) at every point of the grid. Every
    surface spans the same kind of range: its worst point 0.2 to 0.5 of its best."""
    rng = np.random.default_rng([seed, CLASSES.index(kind), index])
    surface = MAKERS[kind](rng, axis)
    logs = {p.point_id: surface(*_t(p, axis)) for p in grid_points()}
    span = rng.uniform(math.log(2.0), math.log(5.0))
    top, low = max(logs.values()), min(logs.values())
    return {pid: 1000.0 * math.exp((v - top) * span / (top - low)) for pid, v in logs.items()}


def noisy(
    kind: str,
    index: int,
    seed: int,
    noise: float,
    true: dict[str, float],
    fails: frozenset[str] = frozenset(),
) -> Callable[[Point, int], list[float]]:
    """The measurement: REPS values, each the true value times 1 + noise x a standard normal,
    drawn once per point (every search sees the same draws); [] for a point in `fails` (a failed
    start)."""
    rng = np.random.default_rng([seed, CLASSES.index(kind), index, round(noise * 1000)])
    draws = {pid: 1.0 + noise * rng.standard_normal(REPS) for pid in sorted(true)}

    def measure(p: Point, level: int) -> list[float]:
        if p.point_id in fails:
            return []
        return [true[p.point_id] * float(d) for d in draws[p.point_id]]

    return measure


def confirm(
    kind: str,
    index: int,
    seed: int,
    noise: float,
    true: dict[str, float],
    measured: dict[str, list[float]],
    rounds: int,
) -> tuple[str, int]:
    """--confirm: after a search, measure again (REPS fresh repetitions, one restart each) every
    point whose mean is within 2 sd of a difference of the best's, up to `rounds` times; the answer
    is then the best mean over all repetitions. Returns the answer and the restarts it added. The
    sd is the noise the repetitions show (pooled), as a search on a real host would know it."""
    rng = np.random.default_rng([seed, CLASSES.index(kind), index, round(noise * 1000), 7])
    values = {pid: list(v) for pid, v in measured.items()}
    pooled = statistics.fmean(
        statistics.variance(v) / statistics.fmean(v) ** 2 for v in values.values()
    )
    added = 0
    for _ in range(rounds):
        means = {pid: statistics.fmean(v) for pid, v in values.items()}
        best = max(means, key=lambda pid: means[pid])

        n_best = len(values[best])
        close = [
            pid
            for pid in means
            if means[pid]
            >= means[best] * (1 - 2 * math.sqrt(pooled / len(values[pid]) + pooled / n_best))
        ]
        if len(close) < 2:
            break
        for pid in close:
            values[pid] += [true[pid] * (1.0 + noise * float(d)) for d in rng.standard_normal(REPS)]
            added += 1
    means = {pid: statistics.fmean(v) for pid, v in values.items()}
    return max(means, key=lambda pid: means[pid]), added


def smooth_answer(
    kind: str,
    index: int,
    seed: int,
    noise: float,
    true: dict[str, float],
    grid: grid_axes.Grid,
    order: dict[str, int],
    measured: dict[str, list[float]],
    again: int,
) -> tuple[str, int]:
    """--smooth: the answer is the measured point with the best estimate by the search's model
    (model_search.smoothed: each mean pooled with its neighbours'), after measuring again
    (REPS fresh repetitions, one restart each) the `again` points the model rates best. Returns
    the answer and the restarts it added."""
    rng = np.random.default_rng([seed, CLASSES.index(kind), index, round(noise * 1000), 11])
    values = {pid: list(v) for pid, v in measured.items()}
    est = model_search.smoothed(grid, order, values)
    for pid in sorted(est, key=lambda q: -est[q])[:again]:
        values[pid] += [true[pid] * (1.0 + noise * float(d)) for d in rng.standard_normal(REPS)]
    est = model_search.smoothed(grid, order, values)
    return max(est, key=lambda q: est[q]), min(again, len(est))


def adaptive(
    kind: str,
    index: int,
    seed: int,
    noise: float,
    true: dict[str, float],
    measure: Callable[[Point, int], list[float]],
    strategy: model_search.ModelSearch,
    stream: int = 13,
    out_z: float = more_repetitions.OUT_Z,
) -> tuple[Callable[[Point, int], list[float]], dict[str, list[float]]]:
    """What the sweep's model search measures, one repetition at a time as the bench runs them:
    the first repetition, then, unless bench/more_repetitions.py's rule (MoreRule.first, with
    what was measured so far: the best mean, the pooled noise) puts the point clearly out (it
    stops there), the rest of the REPS; then REPS more (fresh draws, the server still up: no
    restart) while the rule (MoreRule.step) says so, up to the strategy's max_repetitions in all
    (at or below REPS: no rule at all, as the sweep hands none). `out_z` 0: no stop after the
    first repetition. Returns the measurement and what it measured (repetitions by point). A
    point's extra draws are its own (seeded by the point, not by the order it came in), so that
    two settings compared on a surface differ by what they decide, not by the luck of the draw;
    `stream`: another search draws apart. The measurement's `known`: what its rule is built from
    (None: every point measured before it, one host; on several, those that had finished when
    it started, see hosts_search())."""
    cap = strategy.max_repetitions
    ids = sorted(true)
    seen: dict[str, list[float]] = {}

    def m(p: Point, level: int, known: dict[str, list[float]] | None = None) -> list[float]:
        vs = list(measure(p, level))
        if not vs:  # a failed start
            return vs
        view = seen if known is None else known
        if cap > REPS:
            key = [seed, CLASSES.index(kind), index, round(noise * 1000), stream]
            draws = np.random.default_rng([*key, ids.index(p.point_id)]).standard_normal(cap)
            best = view[max(view, key=lambda q: statistics.fmean(view[q]))] if view else None
            ss, df = more_repetitions.pool(view.values())
            geo = None if best is None else math.exp(statistics.fmean(math.log(v) for v in best))
            n_best = 0 if best is None else len(best)
            rule = more_repetitions.MoreRule(
                "throughput",
                geo,
                n_best,
                ss,
                df,
                cap,
                margin=strategy.margin,
                out_z=out_z or more_repetitions.OUT_Z,
            )
            if out_z and not rule.first(vs[:1]).more:
                vs = vs[:1]
            else:
                while rule.step(vs).more:
                    got = len(vs) - REPS
                    add = draws[got : got + min(REPS, cap - len(vs))]
                    vs += [true[p.point_id] * (1.0 + noise * float(d)) for d in add]
        seen[p.point_id] = vs
        return vs

    return m, seen


def hosts_search(
    pts: Sequence[Point],
    grid: grid_axes.Grid,
    measure: Callable[..., list[float]],
    strategy: model_search.ModelSearch,
    rules: Callable[[str], frozenset[str]] | None = None,
) -> model_search.ModelState[Point]:
    """The model search on `strategy.batch` hosts, as the sweep runs it: a round's runs go out a
    host each, in waves of that many, and a run's rule of more repetitions (adaptive()) knows
    only the runs finished when it started, those of earlier waves (round 0's first wave: no
    best at all, each run goes on until its own noise says enough)."""
    recorded: list[Measurement] = []
    state = model_search.replay(pts, grid, recorded, strategy, rules=rules, sizes=rules)
    while not state.done:
        pending = list(state.pending)
        for i in range(0, len(pending), strategy.batch):
            wave = pending[i : i + strategy.batch]
            known = {m.point_id: list(m.values) for m in recorded if m.values}
            for run in wave:
                values = tuple(measure(run.point, run.level, known))
                recorded.append(Measurement(run.point.point_id, run.level, values))
        state = model_search.replay(pts, grid, recorded, strategy, rules=rules, sizes=rules)
    return state


def called(values: dict[str, list[float]]) -> tuple[bool, str | None]:
    """Whether the report would name the best mean of `values` (repetitions by point) the
    winner: sweep/results/decision.py's test of it against the runner-up (Welch's: the surfaces'
    draws are independent, there is nothing to pair) is significant; otherwise a tie. And the
    runner-up (None: a point alone)."""
    ranked = sorted(values, key=lambda pid: -statistics.fmean(values[pid]))
    if len(ranked) < 2:
        return True, None
    if min(len(values[ranked[0]]), len(values[ranked[1]])) < 2:  # one stopped after one
        return False, ranked[1]
    test = compare_repetitions(values[ranked[0]], values[ranked[1]], pairs=False)
    return test.significant, ranked[1]


def decided(
    values: dict[str, list[float]], true: dict[str, float], top: float | None = None
) -> dict[str, Any]:
    """Outcome's `called` and `runner` for the measurements `values` (`top`: the true best, of
    the points that can run; None: the best of `true`)."""
    winner, runner = called({pid: v for pid, v in values.items() if v})
    top = max(true.values()) if top is None else top
    return {"called": winner, "runner": None if runner is None else true[runner] / top}


def _measured(state: model_search.ModelState[Point]) -> list[str]:
    return [p.point_id for p in state.ranking]


def grid_of(pts: Sequence[Point]) -> grid_axes.Grid:
    return grid_axes.Grid.of({p.point_id: (p.budget, p.topk, p.window) for p in pts})


@dataclass(frozen=True)
class Task:
    kind: str
    index: int
    noise: float
    seed: int
    strategy: model_search.ModelSearch
    confirm: int = 0
    smooth: int | None = None
    batch: int = 1
    budget_axis: str = "log"
    load_seconds: float = 360.0
    rep_seconds: float = 60.0
    out_z: float = more_repetitions.OUT_Z
    memory: bool = True


def cost(recorded: Sequence[Measurement], task: Task) -> tuple[float, int, int]:
    """A search's seconds (every start a load, a failed one too; every repetition a bench),
    its failed starts and its runs stopped after one repetition."""
    starts = len(recorded)
    reps = sum(len(m.values) for m in recorded)
    fails = sum(not m.values for m in recorded)
    ones = sum(len(m.values) == 1 for m in recorded)
    return starts * task.load_seconds + reps * task.rep_seconds, fails, ones


def run_one(task: Task) -> dict[str, Outcome]:
    """One surface: the full grid and the model search, on the same noisy draws."""
    true = truth(task.kind, task.index, task.seed, task.budget_axis)
    fails = failing(task.kind, task.index, task.seed)
    measure = noisy(task.kind, task.index, task.seed, task.noise, true, fails)
    pts = distinct_points(task.kind, true)
    grid = grid_of(pts)
    top = max(v for pid, v in true.items() if pid not in fails)  # the best that can run
    grid_got = {p.point_id: measure(p, 0) for p in pts}
    grid_got = {pid: v for pid, v in grid_got.items() if v}
    grid_best = true[max(grid_got, key=lambda pid: statistics.fmean(grid_got[pid]))]
    grid_fails = sum(p.point_id in fails for p in pts)
    grid_time = len(pts) * task.load_seconds + len(grid_got) * REPS * task.rep_seconds
    by_pid = {p.point_id: p for p in pts}
    # what a failure rules out, and which points are at least as large as which: every failure
    # here is out of memory (sweep/store/failures.py), as the sweep's search is handed them
    rules = failures.dominated(pts)
    m_measure, m_got = adaptive(
        task.kind,
        task.index,
        task.seed,
        task.noise,
        true,
        measure,
        task.strategy,
        out_z=task.out_z,
    )
    shares = memory_share(task.kind, task.index, task.seed) if task.memory else {}
    m_state, m_rec = model_search.search(
        pts,
        grid,
        m_measure,
        task.strategy,
        rules=rules,
        sizes=rules,
        memory=shares.get if shares else None,
    )
    assert m_state.best is not None
    m_true = true[m_state.best.point_id]
    verdict = m_state.verdict
    extra: dict[str, Outcome] = {}
    if task.confirm:
        for name, tried in (("grid+", list(grid_got)), ("model+", _measured(m_state))):
            got = {pid: measure(by_pid[pid], 0) for pid in tried}
            answer, added = confirm(
                task.kind, task.index, task.seed, task.noise, true, got, task.confirm
            )
            extra[name] = Outcome(
                len(tried) + added, len(pts), true[answer] / top, true[answer] / grid_best
            )
    if task.smooth is not None:
        order = {p.point_id: i for i, p in enumerate(pts)}
        for name, tried, again in (
            ("grid~", list(grid_got), 0),
            ("model~", _measured(m_state), task.smooth),
        ):
            got = {pid: measure(by_pid[pid], 0) for pid in tried}
            answer, added = smooth_answer(
                task.kind, task.index, task.seed, task.noise, true, grid, order, got, again
            )
            extra[name] = Outcome(
                len(tried) + added, len(pts), true[answer] / top, true[answer] / grid_best
            )
    if task.batch > 1:
        b_measure, b_got = adaptive(
            task.kind,
            task.index,
            task.seed,
            task.noise,
            true,
            measure,
            task.strategy,
            stream=14,
            out_z=task.out_z,
        )
        b_state = hosts_search(
            pts, grid, b_measure, dataclasses.replace(task.strategy, batch=task.batch), rules
        )
        assert b_state.best is not None
        b_true = true[b_state.best.point_id]
        extra["model xN"] = Outcome(
            b_state.restarts,
            len(pts),
            b_true / top,
            b_true / grid_best,
            rounds=len(b_state.rounds),
            reps=sum(len(v) for v in b_got.values()),
        )
    m_time, m_fails, m_ones = cost(m_rec, task)
    return extra | {
        "grid": Outcome(
            len(pts),
            len(pts),
            grid_best / top,
            1.0,
            **decided(grid_got, true, top),
            time=grid_time,
            grid_time=grid_time,
            fails=grid_fails,
        ),
        "model": Outcome(
            m_state.restarts,
            len(pts),
            m_true / top,
            m_true / grid_best,
            verdict.settled if verdict else None,
            rounds=len(m_state.rounds),
            reps=sum(len(v) for v in m_got.values()),
            seen=any(true[pid] >= top * (1 - 1e-12) for pid in m_got),
            **decided(m_got, true, top),
            time=m_time,
            grid_time=grid_time,
            fails=m_fails,
            first_out=m_ones,
        ),
    }


def report_of(misses: Sequence[Outcome]) -> tuple[int, int, int]:
    """How the report puts `misses`: named the winner, a tie whose runner-up is within 2 % of
    the true best, a tie of two misses."""
    named = sum(bool(o.called) for o in misses)
    tie_ok = sum(not o.called and o.runner is not None and o.runner >= 1.0 - WITHIN for o in misses)
    return named, tie_ok, len(misses) - named - tie_ok


def cells(outs: Sequence[Outcome], search: bool = True, rounds: bool = False) -> list[str]:
    """restarts (median, max: share of the grid's), within 2 % of the grid's answer, within 2 %
    of the true best, the true best, worst answer / true best; `rounds`: the median rounds
    first."""
    close = sum(o.ratio >= 1.0 - WITHIN for o in outs)
    best = sum(o.ratio >= 1.0 - 1e-12 for o in outs)
    worst = f"{min(o.ratio for o in outs):.2f}"
    if not search:
        return [str(close), str(best), worst]
    shares = [o.restarts / o.grid for o in outs]
    as_grid = sum(o.vs_grid >= 1.0 - WITHIN for o in outs)
    reps = [o.reps / (o.grid * REPS) for o in outs if o.reps is not None]
    counts = [o.rounds for o in outs if o.rounds is not None]
    return [
        *([f"{statistics.median(counts):g}"] if rounds and counts else []),
        *([f"{statistics.median(reps):.0%} / {max(reps):.0%}"] if reps else []),
        f"{statistics.median(shares):.0%}",
        f"{max(shares):.0%}",
        str(as_grid),
        str(close),
        str(best),
        worst,
    ]


def print_rows(
    by: dict[tuple[str, float, int], dict[str, Outcome]],
    n: int,
    names: Sequence[str],
    cols: Sequence[str],
    rounds: bool = False,
    classes: Sequence[str] = CLASSES,
    noises: Sequence[float] = NOISES,
) -> None:
    """A table of the extra answers `names` (an experiment's rows), a line per class and noise."""
    head = ["class", "noise", *(f"{w} {c}" for w in names for c in cols)]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for nz in noises:
        for kind in classes:
            rows = [by[(kind, nz, i)] for i in range(n)]
            line = [kind, f"{nz:.0%}"]
            for w in names:
                line += cells([r[w] for r in rows], rounds=rounds)
            print("| " + " | ".join(line) + " |")


def _med_max(xs: Sequence[float], fmt: str) -> str:
    return f"{statistics.median(xs):{fmt}} / {max(xs):{fmt}}"


TIME_TARGET = {0.02: 0.30, 0.05: 0.65}  # the model search's median time, share of the grid's
FAILS_TARGET = (2, 4)  # failed starts: the median a search, the most in any


def print_costs(
    by: dict[tuple[str, float, int], dict[str, Outcome]],
    n: int,
    classes: Sequence[str],
    load: float,
    rep: float,
    noises: Sequence[float] = NOISES,
) -> bool:
    """The cost table (--load-seconds, --rep-seconds): per class and noise, for the grid and the
    model search, the time as a share of the grid's (median / max), the starts as a
    share of the grid's (median / max), the failed starts (median / max), within 2 % of the best
    point that can run (of n); for the model search also the runs stopped after one repetition
    (median) and whether the cell meets the targets. Returns whether every cell does."""
    print(
        f"\ncost: a start {load:g} s (a failed start too: its seconds to failure), a repetition "
        f"{rep:g} s; the full grid starts every point, failures included, {REPS} repetitions a "
        "run. time and starts: median / max share of the grid's; fails: failed starts median / "
        "max; 2 %: within 2 % of the best point that can run; 1-rep: the model search's runs "
        "stopped after their first repetition, median; met: within 2 % on all but 1 in 30, time "
        f"median <= {TIME_TARGET[0.02]:.0%} at 2 % noise and <= {TIME_TARGET[0.05]:.0%} at 5 %, "
        f"failed starts median <= {FAILS_TARGET[0]} and max <= {FAILS_TARGET[1]}"
    )
    head = ["class", "noise", "grid fails", "grid 2 %"]
    head += ["model time", "model starts", "model fails", "model 2 %", "model 1-rep", "met"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    ok = True
    for nz in noises:
        for kind in classes:
            rows = [by[(kind, nz, i)] for i in range(n)]
            grid = [r["grid"] for r in rows]
            line = [kind, f"{nz:.0%}", _med_max([o.fails for o in grid], "g")]
            line.append(str(sum(o.ratio >= 1.0 - WITHIN for o in grid)))
            model = [r["model"] for r in rows]
            line += [
                _med_max([(o.time or 0.0) / (o.grid_time or 1.0) for o in model], ".0%"),
                _med_max([o.restarts / o.grid for o in model], ".0%"),
                _med_max([o.fails for o in model], "g"),
                str(sum(o.ratio >= 1.0 - WITHIN for o in model)),
            ]
            share = statistics.median((o.time or 0.0) / (o.grid_time or 1.0) for o in model)
            fails = [o.fails for o in model]
            found = sum(o.ratio >= 1.0 - WITHIN for o in model)
            misses = []
            if found < n - math.floor(n / 30):
                misses.append("2 %")
            if share > TIME_TARGET.get(nz, 1.0):
                misses.append("time")
            if statistics.median(fails) > FAILS_TARGET[0] or max(fails) > FAILS_TARGET[1]:
                misses.append("fails")
            ok &= not misses
            line.append(f"{statistics.median(o.first_out for o in model):g}")
            line.append("yes" if not misses else "NOT: " + ", ".join(misses))
            print("| " + " | ".join(line) + " |")
    print(f"cost targets: {'met' if ok else 'NOT met'} in every cell")
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    doc = __doc__ or ""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--surfaces", type=int, default=30, help="surfaces per class (30)")
    ap.add_argument("--quick", action="store_true", help="10 surfaces per class")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    d = model_search.ModelSearch()
    ap.add_argument("--margin", type=float, default=d.margin, help="the tie margin (0.02)")
    ap.add_argument("--confidence", type=float, default=d.confidence, help="sds of the bound")
    ap.add_argument("--initial", type=int, default=d.initial, help="first round's points")
    ap.add_argument(
        "--likely",
        type=float,
        default=d.likely,
        help=f"log likelihood within which a single setting bounds a gain too ({d.likely:g})",
    )
    ap.add_argument(
        "--cover",
        type=float,
        default=d.cover,
        help="not settled while a point not ruled out lies farther than this from every point "
        f"measured ({d.cover:g} of the axes' extent; 2: never, the rule off)",
    )
    ap.add_argument(
        "--ruled-out",
        type=float,
        default=d.ruled_out,
        help=f"how far below the best the model rules a point out ({d.ruled_out:g})",
    )
    ap.add_argument(
        "--no-neighbours",
        dest="neighbours",
        action="store_false",
        help="without the rule of the best's neighbours (settled with a neighbour of the best "
        "unmeasured that the model does not put more than the margin below it)",
    )
    ap.add_argument(
        "--no-diagonals",
        dest="diagonals",
        action="store_false",
        help="the model's length scales along the axes only (without the metrics that run them "
        "along a diagonal of two axes: sweep/search/gaussian_process.py)",
    )
    ap.add_argument(
        "--confirm",
        type=int,
        default=0,
        help="an experiment, not what the sweep does: after the grid and the model search, up to "
        "this many rounds measuring again the points within 2 sd of the best (extra rows)",
    )
    ap.add_argument(
        "--smooth",
        type=int,
        default=None,
        metavar="N",
        help="an experiment, not what the sweep does: the answer by the model's estimate (each "
        "mean pooled with its neighbours') after measuring again the N points it rates best, for "
        "the model search (model~) and, with none measured again, the full grid (grid~)",
    )
    ap.add_argument(
        "--max-repetitions",
        type=int,
        default=d.max_repetitions,
        metavar="R",
        help="the model search's cap on a point's repetitions while it may be the best "
        f"({d.max_repetitions}, the sweep's default; {REPS}: no more than the grid's)",
    )
    ap.add_argument(
        "--batch",
        type=int,
        default=1,
        metavar="N",
        help="also the model search with rounds of N points (what the sweep does on N hosts: "
        "model xN), its rounds beside those of one point a round",
    )
    ap.add_argument(
        "--budget-axis",
        choices=("log", "linear"),
        default="log",
        help="how the surfaces act on the budget: through its log (log, the suite as specified: "
        "8 to 16 is as large a step as 48 to 96) or through the budget itself (linear, a check "
        "that the search does not lean on that)",
    )
    ap.add_argument(
        "--load-seconds",
        type=float,
        default=360.0,
        help="the cost model: seconds a start costs (a load; a failed start too) (360)",
    )
    ap.add_argument(
        "--rep-seconds",
        type=float,
        default=60.0,
        help="the cost model: seconds a repetition costs (60)",
    )
    ap.add_argument(
        "--no-memory",
        dest="memory",
        action="store_false",
        help="without the fit of the memory the runs report (the model search starts what only "
        "a failure rules out)",
    )
    ap.add_argument(
        "--first-out",
        type=float,
        default=more_repetitions.OUT_Z,
        metavar="Z",
        help="a run stops after its first repetition when that is clearly out: more than Z sd "
        f"beyond the margin behind the best (bench/more_repetitions.py MoreRule.first; "
        f"{more_repetitions.OUT_Z:g}; 0: never)",
    )
    ap.add_argument(
        "--classes",
        default=",".join(CLASSES),
        help=f"the classes to run, comma-separated ({','.join(CLASSES)})",
    )
    ap.add_argument(
        "--noises",
        default=",".join(f"{nz:g}" for nz in NOISES),
        help="the noises to run, comma-separated (0.02,0.05)",
    )
    args = ap.parse_args(argv)
    noises = tuple(float(v) for v in args.noises.split(",") if v)
    classes = tuple(c for c in args.classes.split(",") if c)
    unknown = [c for c in classes if c not in CLASSES]
    if unknown:
        ap.error(f"--classes: unknown {', '.join(unknown)} (of {', '.join(CLASSES)})")
    strat = model_search.ModelSearch(
        margin=args.margin,
        confidence=args.confidence,
        initial=args.initial,
        likely=args.likely,
        max_repetitions=args.max_repetitions,
        cover=args.cover,
        ruled_out=args.ruled_out,
        neighbours=args.neighbours,
        diagonals=args.diagonals,
    )
    n = 10 if args.quick else args.surfaces
    t0 = time.monotonic()
    tasks = [
        Task(
            k,
            i,
            nz,
            args.seed,
            strat,
            args.confirm,
            args.smooth,
            args.batch,
            args.budget_axis,
            args.load_seconds,
            args.rep_seconds,
            args.first_out,
            args.memory,
        )
        for nz in noises
        for k in classes
        for i in range(n)
    ]
    with ProcessPoolExecutor(args.jobs) as pool:
        results = list(pool.map(run_one, tasks, chunksize=2))
    by = {(t.kind, t.noise, t.index): r for t, r in zip(tasks, results, strict=True)}
    print(
        f"grid: {len(BUDGETS)} budgets x {len(TOPKS)} topk x {len(WINDOWS)} windows = "
        f"{len(grid_points())} points (plateau: less its twins); {n} surfaces per class; {REPS} "
        f"repetitions; seed {args.seed}; surfaces act on the budget's {args.budget_axis} scale"
    )
    print(
        f"model search: tie margin {strat.margin:g}, bound at {strat.confidence:g} sd, first "
        f"round {strat.initial} points, likely settings within {strat.likely:g}, length "
        f"scales along the axes{' and their diagonals' if strat.diagonals else ' only'}; not "
        f"settled while a point not ruled out (within {strat.ruled_out:.0%} of the best) lies "
        f"farther than {strat.cover:g} from every point measured"
        + (
            f", nor while a neighbour of the best not put more than {strat.margin:.0%} below it "
            "is unmeasured"
            if strat.neighbours
            else ""
        )
        + "; more "
        f"repetitions while a point may be the best and the noise needs them to tell "
        f"{strat.margin:.0%}, up to {strat.max_repetitions} (bench/more_repetitions.py)"
    )
    print(
        "restarts: median and max, share of the grid's; =grid: answer within 2 % of the grid's "
        "answer; 2 %: within 2 % of the true best; best: the true best; worst: answer / true best "
        f"(counts of {n}); reps: repetitions, median / max share of the grid's; misses: the "
        "model search's answers not within 2 % of the true best, the true best never measured "
        "(a region missed) / measured (the noise chose another); in the report: how the "
        "report (sweep/results/decision.py's test of the answer against the runner-up) puts the "
        "misses: named the winner / a tie with a point within 2 % of the true best / a tie of two "
        "misses"
    )
    cols = ["restarts med", "max", "=grid", "2 %", "best", "worst"]
    head = [
        "class",
        "noise",
        "grid 2 %",
        "grid best",
        "grid worst",
        *(f"model {c}" for c in ["reps", *cols]),
        "model settled",
        "model misses: unmeasured / measured",
        "grid misses in the report",
        "model misses in the report",
    ]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    met = {"grid": True, "true": True}
    wrong = {"grid": [0, 0, 0, 0], "model": [0, 0, 0, 0]}  # misses: called, tie ok, tie of two
    for nz in noises:
        for kind in classes:
            rows = [by[(kind, nz, i)] for i in range(n)]
            line = [kind, f"{nz:.0%}"]
            line += cells([r["grid"] for r in rows], search=False)
            line += cells([r["model"] for r in rows])
            line.append(str(sum(bool(r["model"].settled) for r in rows)))
            missed = [r["model"] for r in rows if r["model"].ratio < 1.0 - WITHIN]
            line.append(f"{sum(not o.seen for o in missed)} / {sum(bool(o.seen) for o in missed)}")
            for name, tally in wrong.items():
                counts = report_of([r[name] for r in rows if r[name].ratio < 1.0 - WITHIN])
                tally[:] = [a + b for a, b in zip(tally, (sum(counts), *counts), strict=True)]
                line.append(" / ".join(map(str, counts)))
            print("| " + " | ".join(line) + " |")
            model = [r["model"] for r in rows]
            shares = [o.restarts / o.grid for o in model]
            enough, cheap = n - math.floor(n / 30), statistics.median(shares) <= 0.40
            met["grid"] &= sum(o.vs_grid >= 1.0 - WITHIN for o in model) >= enough and cheap
            met["true"] &= sum(o.ratio >= 1.0 - WITHIN for o in model) >= enough and cheap
    if args.confirm:
        print(
            f"\nconfirmation (--confirm {args.confirm}): the points within 2 sd of the best "
            f"measured again, {REPS} fresh repetitions and one restart each, up to "
            f"{args.confirm} rounds"
        )
        print_rows(by, n, ("grid+", "model+"), cols, classes=classes, noises=noises)
    if args.smooth is not None:
        print(
            f"\nsmoothed answer (--smooth {args.smooth}): the measured point the model rates best; "
            f"model~ measures the {args.smooth} it rates best again first ({REPS} fresh "
            "repetitions, one restart each), grid~ measures nothing again"
        )
        print_rows(by, n, ("grid~", "model~"), cols, classes=classes, noises=noises)
    if args.batch > 1:
        print(
            f"\nrounds of {args.batch} points (--batch {args.batch}, the sweep on {args.batch} "
            "hosts): rounds median first (a round's runs go to the hosts at once), then as above"
        )
        print_rows(
            by,
            n,
            ("model", "model xN"),
            ["rounds", "reps", *cols],
            rounds=True,
            classes=classes,
            noises=noises,
        )
    print_costs(by, n, classes, args.load_seconds, args.rep_seconds, noises)
    every = [r["model"].restarts / r["model"].grid for r in results]
    for name, (misses, named, tie_ok, tie_bad) in wrong.items():
        ties = sum(not r[name].called for r in results)
        print(
            f"{name}: {misses} of {len(results)} answers not within 2 % of the true best; the "
            f"report names {named} of them the winner, calls {tie_ok} a tie with a point within "
            f"2 %, {tie_bad} a tie of two misses (it calls a tie on {ties} of all "
            f"{len(results)} answers)"
        )
    print(f"model search restarts over every surface: median {statistics.median(every):.0%}")
    for what, name in (("grid", "the grid's answer"), ("true", "the true best")):
        print(
            f"target (every class and noise: the answer within 2 % of {name} in all but 1 in 30, "
            f"median restarts <= 40 %): {'met' if met[what] else 'NOT met'}"
        )
    print(f"wall time {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
