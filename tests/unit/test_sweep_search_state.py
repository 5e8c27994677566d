"""sweep.search.search_state: a search's statistics, its rounds' order and restart budget, its
points' checks, and its cost against the full grid."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from sweep.config.points import Point
from sweep.search.model_search import ModelSearch
from sweep.search.search_state import (
    Round,
    Run,
    State,
    account,
    check_points,
    rank,
    schedule,
    stats,
)

BUDGETS = (4, 8, 12, 16)
TOPKS = (1, 2, 4)
BEST = Point("DDTREE", 12, 2, 2048)


def grid() -> list[Point]:
    points = [Point("DDTREE", b, k, 2048) for b in BUDGETS for k in TOPKS]
    return sorted(points, key=Point.sort_key)


def ran(points: Sequence[Point], restarts: Sequence[bool] | None = None) -> State[Point]:
    """A search over `points` that ran every one in one round, each a restart unless said."""
    restarts = [True] * len(points) if restarts is None else restarts
    runs = tuple(Run(p, 0, r) for p, r in zip(points, restarts, strict=True))
    return State(ModelSearch(), tuple(points), (Round(0, 0, runs, complete=True),), ())


# ---------------------------------------------------------------- statistics


def test_stats_ci_is_student_t_and_a_single_value_has_none() -> None:
    s = stats([10.0, 12.0])
    assert s.mean == 11.0
    assert s.high - s.mean == pytest.approx(12.7062, abs=1e-4)  # t(0.975, 1) x sqrt(2) / sqrt(2)
    one = stats([5.0])
    assert (one.low, one.mean, one.high, one.n) == (5.0, 5.0, 5.0, 1)
    with pytest.raises(ValueError, match="no values"):
        stats([])


def test_stats_is_the_report_s_interval() -> None:
    from sweep.results.stats import estimate

    for values in ([10.0, 12.0], [80.0, 95.0, 65.0], [1.5, 1.25, 1.75, 1.5, 1.0]):
        s, e = stats(values), estimate(values)
        assert e is not None
        assert (s.mean, s.low, s.high, s.n) == (e.mean, e.ci_low, e.ci_high, e.n)


def test_rank_puts_the_best_mean_first_either_way_and_keeps_ties_in_order() -> None:
    pts = grid()[:3]
    by_id = {p.point_id: stats([v]) for p, v in zip(pts, (2.0, 3.0, 2.0), strict=True)}
    assert rank(pts, by_id, higher_is_better=True) == [pts[1], pts[0], pts[2]]
    assert rank(pts, by_id, higher_is_better=False) == [pts[0], pts[2], pts[1]]


# ---------------------------------------------------------------- scheduling


def test_a_round_runs_the_running_configuration_first_then_in_the_order_given() -> None:
    pts = grid()[:4]
    order = {p.point_id: i for i, p in enumerate(pts)}
    runs, skipped = schedule(pts[::-1], order, 0, pts[2].point_id, 10, "budget")
    assert [r.point for r in runs] == [pts[2], pts[0], pts[1], pts[3]]
    assert [r.restart for r in runs] == [False, True, True, True]  # the running one is free
    assert skipped == ()


def test_the_restart_budget_cuts_a_round_at_the_first_it_cannot_start() -> None:
    pts = grid()[:5]
    order = {p.point_id: i for i, p in enumerate(pts)}
    # priority pts[4], pts[3], pts[0], ...; pts[0] is running and costs nothing
    priority = [pts[4], pts[0], pts[3], pts[1], pts[2]]
    runs, skipped = schedule(priority, order, 0, pts[0].point_id, 2, "restart budget spent")
    assert [r.point for r in runs] == [pts[0], pts[3], pts[4]]
    assert [s.point for s in skipped] == [pts[1], pts[2]]
    assert {s.reason for s in skipped} == {"restart budget spent"}


def test_no_points_or_duplicate_points_raise() -> None:
    with pytest.raises(ValueError, match=r"points=\[\]"):
        check_points([])
    with pytest.raises(ValueError, match="appears twice"):
        check_points([BEST, BEST])
    assert check_points(grid()[:2]) == {grid()[0].point_id: 0, grid()[1].point_id: 1}


# ---------------------------------------------------------------- accounting


def test_accounting_against_the_full_grid() -> None:
    pts = grid()
    # 8 of the 12 ran; the first was already up (no load)
    state = ran(pts[:8], [False] + [True] * 7)
    state = State(state.strategy, tuple(pts), state.rounds, ())
    load = {p.point_id: 300.0 for p in pts}
    load[pts[7].point_id] = 420.0
    acc = account(state, load, 900.0, actual={pts[1].point_id: 2700.0})
    search = 6 * 300 + 420 + 7 * 900 + 2700  # pts[1] benched on, three times the bench
    grid_s = 11 * 300 + 420 + 12 * 900
    assert (acc.spent.restarts, acc.spent.seconds) == (7, search)
    assert (acc.grid.restarts, acc.grid.seconds) == (12, grid_s)
    assert acc.line() == (
        f"model: 7 restarts (0 failed), {search} s = 3.1 h (77% of the grid's time); the full "
        f"grid would be 12 restarts (0 failed), {grid_s} s = 4.0 h"
    )


def test_accounting_charges_a_failed_start_its_seconds_to_failure_and_the_grid_every_failure() -> (
    None
):
    pts = grid()
    failing = pts[11].point_id
    ruled = [pts[10].point_id]  # say a failure had ruled it out: the grid would see it fail too
    state = ran([p for p in pts if p.point_id not in ruled])
    state = State(state.strategy, tuple(pts), state.rounds, ())
    acc = account(state, 300.0, 900.0, failed={failing: 250.0}, ruled_out=ruled)
    assert (acc.spent.restarts, acc.spent.failed) == (11, 1)
    assert acc.spent.seconds == 10 * (300 + 900) + 250
    assert (acc.grid.restarts, acc.grid.failed) == (12, 2)
    assert acc.grid.seconds == 10 * (300 + 900) + 250 + 250


def test_accounting_fills_unmeasured_loads_with_the_median() -> None:
    state = ran(grid()[:4])
    acc = account(state, {grid()[0].point_id: 100.0, grid()[1].point_id: 300.0}, 3.0)
    assert acc.spent.seconds == 100.0 + 300.0 + 2 * 200.0 + 4 * 3.0
    with pytest.raises(ValueError, match="load_seconds: none given"):
        account(state, {}, 3.0)
