"""What a search on a generated surface measures (benchmarks/search_surfaces.py): the noisy
repetitions (noisy), the sweep's rule of more repetitions (adaptive), the model search on several
hosts (hosts_search), the experiments --confirm and --smooth, and how the report would decide
between the answer and its runner-up (called, decided)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bench import more_repetitions
from sweep.config.points import Point
from sweep.results.stats import compare_repetitions
from sweep.search import grid_axes, model_search
from sweep.search.search_state import Measurement

from surfaces_generate import CLASSES, REPS


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
