"""The generated objective surfaces of benchmarks/search_surfaces.py: the grid (its budgets,
topk and windows), the seven classes of surface (independent, ridge, plateau, two-peaks, narrow,
anisotropic, edge; MAKERS), an edge surface's failing starts and memory shares, the points a
search sees (distinct_points) and a surface's noise-free value at each (truth). The script
describes the classes; it puts the repository root and this directory on sys.path."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from sweep.config.points import Point

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
    return narrow_parts(rng, axis)[0]


def narrow_parts(rng: np.random.Generator, axis: str = "log") -> tuple[Surface, Surface, Point]:
    """A narrow surface (narrow), the same surface without its narrow peak, and the peak's
    centre."""
    tb, tk, tw = _steps(axis)
    pts = grid_points()
    c1 = rng.uniform(0, 1, 3)
    s1 = rng.uniform(0.3, 1.0, 3)
    centre = pts[int(rng.integers(len(pts)))]
    c2 = np.array(_t(centre, axis))
    s2 = np.array([tb, tk, tw]) * rng.uniform(0.5, 1.2, 3)
    h2, floor = rng.uniform(0.8, 1.25), rng.uniform(0.1, 0.3)

    def f(b: float, k: float, w: float, peak: bool = True) -> float:
        x = np.array([b, k, w])
        g1 = math.exp(-0.5 * float(np.sum(((x - c1) / s1) ** 2)))
        g2 = h2 * math.exp(-0.5 * float(np.sum(((x - c2) / s2) ** 2))) if peak else 0.0
        return math.log(floor + g1 + g2)

    return f, lambda b, k, w: f(b, k, w, peak=False), centre


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


def truth(kind: str, index: int, seed: int, axis: str = "log") -> dict[str, float]:
    """A surface's noise-free objective (tokens/s, best 1000) at every point of the grid. Every
    surface spans the same kind of range: its worst point 0.2 to 0.5 of its best."""
    rng = np.random.default_rng([seed, CLASSES.index(kind), index])
    return _scaled(rng, MAKERS[kind](rng, axis), axis)[0]


def narrow_truth(
    index: int, seed: int, axis: str = "log"
) -> tuple[dict[str, float], dict[str, float], str]:
    """A narrow surface's truth, on the same scale the values its broad bump alone gives, and the
    narrow peak's centre (benchmarks/narrow_coverage.py)."""
    rng = np.random.default_rng([seed, CLASSES.index("narrow"), index])
    full, broad, centre = narrow_parts(rng, axis)
    with_peak, without = _scaled(rng, full, axis, broad)
    return with_peak, without, centre.point_id


def _scaled(
    rng: np.random.Generator, surface: Surface, axis: str, *more: Surface
) -> tuple[dict[str, float], ...]:
    """`surface` (then each of `more`, on its scale) at every point, scaled: see truth."""
    logs = [{p.point_id: s(*_t(p, axis)) for p in grid_points()} for s in (surface, *more)]
    span = rng.uniform(math.log(2.0), math.log(5.0))
    top, low = max(logs[0].values()), min(logs[0].values())
    return tuple(
        {pid: 1000.0 * math.exp((v - top) * span / (top - low)) for pid, v in each.items()}
        for each in logs
    )
