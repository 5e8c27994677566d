"""sweep.search: successive halving (selection rule, restarts, budget, resume, accounting)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence

import pytest

from sweep.points import Point
from sweep.search import (
    Halving,
    Measurement,
    account,
    describe,
    next_round,
    replay,
    search,
    select,
    stats,
)

BUDGETS = (4, 8, 12, 16)
TOPKS = (1, 2, 4)
BEST = Point("DDTREE", 12, 2, 2048)


def grid() -> list[Point]:
    points = [Point("DDTREE", b, k, 2048) for b in BUDGETS for k in TOPKS]
    return sorted(points, key=Point.sort_key)


def true_value(p: Point) -> float:
    """Throughput-like objective, optimum at budget 12, topk 2 (interior in both)."""
    return 1000.0 - 6.0 * (p.budget - 12) ** 2 - 60.0 * (p.topk - 2) ** 2


def noisy(
    seed: int, f: Callable[[Point], float] = true_value, reps: int = 3
) -> Callable[[Point, int], list[float]]:
    """Noise shrinks with the level, as a longer bench averages more requests."""
    rng = random.Random(seed)
    sd = {0: 25.0, 1: 12.0, 2: 6.0}
    return lambda p, level: [f(p) + rng.gauss(0.0, sd[level]) for _ in range(reps)]


def table(values: dict[str, Sequence[float]]) -> Callable[[Point, int], list[float]]:
    return lambda p, level: list(values[p.point_id])


# ---------------------------------------------------------------- finding the optimum


@pytest.mark.parametrize("seed", range(20))
def test_halving_finds_the_optimum_under_noise(seed: int) -> None:
    state, _ = search(grid(), noisy(seed), Halving(eta=3))
    assert state.done
    assert state.best == BEST
    # every point is started once to screen it, so halving saves bench time, not restarts
    assert state.restarts >= len(grid())
    acc = account(state, 360.0, [120.0, 600.0, 3600.0])
    assert acc.spent.seconds < 0.8 * acc.grid.seconds


@pytest.mark.parametrize("seed", range(10))
def test_lower_is_better_finds_the_minimum(seed: int) -> None:
    def tpot(p: Point) -> float:  # ms per token: the best point is the fastest
        return 1e4 / true_value(p)

    def measure(p: Point, level: int) -> list[float]:
        rng = random.Random(f"{seed}-{p.point_id}-{level}")
        return [tpot(p) * (1 + rng.gauss(0.0, 0.01)) for _ in range(3)]

    state, _ = search(grid(), measure, Halving(eta=2, higher_is_better=False))
    assert state.best == BEST
    final = state.rounds[-1]
    means = [final.stats[p.point_id].mean for p in final.ranking]
    assert means == sorted(means)


def test_the_final_round_runs_the_last_level() -> None:
    state, _ = search(grid(), noisy(1), Halving(eta=3, levels=3))
    assert [rnd.level for rnd in state.rounds] == [0, 1, 2]
    assert len(state.rounds[0].runs) == 12
    assert state.rounds[-1].kept == ()


# ---------------------------------------------------------------- the selection rule


def test_select_keeps_the_top_fraction_and_ci_overlaps_of_the_kth() -> None:
    pts = grid()[:6]
    values = {
        pts[0].point_id: [100.0, 100.0, 100.0],
        pts[1].point_id: [90.0, 91.0, 89.0],  # the k-th (k = ceil(6/3) = 2)
        pts[2].point_id: [80.0, 95.0, 65.0],  # below, but its wide CI reaches the k-th's
        pts[3].point_id: [85.0, 85.5, 84.5],  # below, tight CI clear of the k-th's
        pts[4].point_id: [50.0, 50.0, 50.0],
        pts[5].point_id: [10.0, 11.0, 9.0],
    }
    by_id = {k: stats(v) for k, v in values.items()}
    ranking = sorted(pts, key=lambda p: -by_id[p.point_id].mean)
    assert select(ranking, by_id, eta=3) == (pts[0], pts[1], pts[2])
    # k = 1 at least: the best survives, and pts[2], whose CI reaches the best's
    assert select(ranking, by_id, eta=100) == (pts[0], pts[2])


def test_stats_ci_is_student_t_and_a_single_value_has_none() -> None:
    s = stats([10.0, 12.0])
    assert s.mean == 11.0
    assert s.high - s.mean == pytest.approx(12.7062, abs=1e-4)  # t(0.975, 1) x sqrt(2) / sqrt(2)
    one = stats([5.0])
    assert (one.low, one.mean, one.high, one.n) == (5.0, 5.0, 5.0, 1)
    with pytest.raises(ValueError, match="no values"):
        stats([])


def test_stats_is_the_report_s_interval() -> None:
    from sweep.stats import estimate

    for values in ([10.0, 12.0], [80.0, 95.0, 65.0], [1.5, 1.25, 1.75, 1.5, 1.0]):
        s, e = stats(values), estimate(values)
        assert e is not None
        assert (s.mean, s.low, s.high, s.n) == (e.mean, e.ci_low, e.ci_high, e.n)


def test_a_failed_run_is_eliminated() -> None:
    pts = grid()[:4]
    values = {p.point_id: [float(i + 1)] for i, p in enumerate(pts)}
    values[pts[3].point_id] = []  # would have been the best
    state, _ = search(pts, table(values), Halving(eta=2, levels=2))
    assert pts[3] in state.rounds[0].failed
    assert pts[3] not in state.rounds[0].kept
    assert state.best == pts[2]
    assert any("failed" in line for line in describe(state))


def test_a_lone_survivor_goes_straight_to_the_last_level() -> None:
    pts = grid()[:3]
    values = {p.point_id: [float(10**i)] for i, p in enumerate(pts)}
    state, _ = search(pts, table(values), Halving(eta=3, levels=4))
    assert [rnd.level for rnd in state.rounds] == [0, 3]
    assert state.rounds[-1].runs[0].restart is False  # it was the last one screened


# ---------------------------------------------------------------- restarts and order


def test_restarts_count_configuration_changes_and_the_running_one_goes_first() -> None:
    pts = grid()  # 12 points
    # the last point screened is among the best: it starts round 1 with no restart
    values = {p.point_id: [float(i), float(i)] for i, p in enumerate(pts)}
    state, _ = search(pts, table(values), Halving(eta=3, levels=3, run_on=True))
    r0, r1, r2 = state.rounds
    assert [r.restart for r in r0.runs] == [True] * 12  # the first start counts
    assert not any(r.run_on for r in r0.runs)  # level 0 is not the one before the last
    screened = [r for r in r1.runs if not r.run_on]
    assert [r.point for r in screened] == [pts[11], pts[8], pts[9], pts[10]]
    assert [r.restart for r in screened] == [False, True, True, True]
    # each of them led the points screened before it (k = ceil(4/3) = 2): benched in full
    # right after its screening, on the same server
    assert [(r.point, r.level, r.run_on, r.restart) for r in r1.runs[:2]] == [
        (pts[11], 1, False, False),
        (pts[11], 2, True, False),
    ]
    assert [r.point for r in r1.runs if r.run_on] == [pts[11], pts[8], pts[9], pts[10]]
    # the finalists (pts[11], pts[10]) were benched in full already: no run, no restart
    assert r2.runs == () and r2.complete
    assert [p.point_id for p in r2.ranking] == [pts[i].point_id for i in (11, 10, 9, 8)]
    assert state.restarts == 12 + 3
    assert state.best == pts[11]


def test_a_point_screened_after_better_ones_is_not_benched_on() -> None:
    pts = grid()[:6]
    # screening order pts[0..5]; k = ceil(6/3) = 2. pts[0] and pts[1] lead when screened;
    # pts[2] is third of three; pts[3] is the best; pts[4], pts[5] trail.
    values = {
        pts[0].point_id: [50.0],
        pts[1].point_id: [60.0],
        pts[2].point_id: [40.0],
        pts[3].point_id: [90.0],
        pts[4].point_id: [10.0],
        pts[5].point_id: [20.0],
    }
    state, recorded = search(pts, table(values), Halving(eta=3, levels=2, run_on=True))
    r0, r1 = state.rounds
    assert [r.point for r in r0.runs if r.run_on] == [pts[0], pts[1], pts[3]]
    assert r1.runs == ()  # finalists pts[3], pts[1]: both benched on
    assert state.best == pts[3] and state.restarts == 6
    assert {(m.point_id, m.level) for m in recorded if m.level == 1} == {
        (pts[i].point_id, 1) for i in (0, 1, 3)
    }


def test_a_run_on_not_taken_leaves_the_finalist_to_the_last_round() -> None:
    pts = grid()[:3]
    values = {pts[0].point_id: [30.0], pts[1].point_id: [20.0], pts[2].point_id: [10.0]}
    strat = Halving(eta=3, levels=2, run_on=True)
    # screened pts[0], its run-on decided but never recorded (the sweep was stopped), then the rest
    screened = [Measurement(p.point_id, 0, tuple(values[p.point_id])) for p in pts]
    state = replay(pts, screened, strat)
    (last,) = [rnd for rnd in state.rounds if rnd.level == 1]
    assert [(r.point, r.restart) for r in last.runs] == [(pts[0], True)]
    assert [r.point for r in state.pending] == [pts[0]]


def test_a_failed_run_on_is_out_and_not_run_again() -> None:
    pts = grid()[:3]
    values = {pts[0].point_id: [30.0], pts[1].point_id: [20.0], pts[2].point_id: [10.0]}
    strat = Halving(eta=3, levels=2, run_on=True)
    recorded = [Measurement(p.point_id, 0, tuple(values[p.point_id])) for p in pts]
    recorded.append(Measurement(pts[0].point_id, 1, ()))
    state = replay(pts, recorded, strat)
    assert state.done and state.pending == ()
    assert state.rounds[-1].runs == () and state.rounds[-1].failed == (pts[0],)


@pytest.mark.parametrize("budget", [1, 5, 12, 13, 14, 15, 40])
def test_max_restarts_is_never_exceeded_and_cuts_are_reported(budget: int) -> None:
    state, _ = search(grid(), noisy(3), Halving(eta=3, max_restarts=budget))
    assert state.done
    assert state.restarts <= budget
    ran = {(r.point.point_id, r.level) for rnd in state.rounds for r in rnd.runs}
    for s in state.skipped:
        assert (s.point.point_id, s.level) not in ran
        assert "restart budget" in s.reason
    if budget < 12:
        assert len(state.rounds[0].runs) == budget
        assert {s.reason for s in state.rounds[0].skipped} == {"restart budget: never screened"}
        assert sum(1 for line in describe(state) if "never screened" in line) == 12 - budget
    if budget >= 40:
        assert state.skipped == ()


def test_a_cut_round_runs_the_best_ranked_prefix() -> None:
    pts = grid()[:6]
    # ranking after round 0: pts[1] > pts[4] > pts[3] ...; pts[5] (the running one) is 4th
    order = [1, 4, 3, 5, 0, 2]
    values = {pts[i].point_id: [100.0 - 10 * rank] for rank, i in enumerate(order)}
    state, _ = search(pts, table(values), Halving(eta=1.5, levels=3, max_restarts=7, run_on=True))
    cut = state.rounds[1]
    assert [(r.point, r.run_on) for r in cut.runs] == [(pts[1], False), (pts[1], True)]
    assert {s.point for s in cut.skipped} == {pts[4], pts[3], pts[5]}
    assert state.rounds[-1].runs == ()  # the lone finalist was benched on
    assert state.best == pts[1]
    assert state.restarts == 7


def test_an_exhausted_budget_keeps_the_deepest_complete_ranking() -> None:
    pts = grid()[:4]
    values = {p.point_id: [float(i)] for i, p in enumerate(pts)}
    values[pts[3].point_id] = [0.5]  # the running one after round 0 is not among the best
    state, _ = search(pts, table(values), Halving(eta=2, levels=2, max_restarts=4))
    assert state.rounds[-1].runs == ()
    assert state.best == pts[2]


# ---------------------------------------------------------------- bad values


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"eta": 1}, "eta=1"),
        ({"eta": 0.5}, "eta=0.5"),
        ({"max_restarts": 0}, "max_restarts=0"),
        ({"max_restarts": -3}, "max_restarts=-3"),
        ({"levels": 0}, "levels=0"),
    ],
)
def test_bad_strategy_values_raise_naming_them(kwargs: dict[str, float], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        Halving(**kwargs)  # type: ignore[arg-type]


def test_no_points_or_duplicate_points_raise() -> None:
    with pytest.raises(ValueError, match=r"points=\[\]"):
        replay([], [], Halving())
    with pytest.raises(ValueError, match="appears twice"):
        replay([BEST, BEST], [], Halving())


# ---------------------------------------------------------------- resume


def test_state_rebuilt_from_recorded_results_gives_the_same_next_round() -> None:
    strategy = Halving(eta=3, max_restarts=17)
    seen: list[list[tuple[Point, int]]] = []
    recorded: list[Measurement] = []
    measure = noisy(7)
    while runs := next_round(grid(), recorded, strategy):
        seen.append(runs)
        recorded += [Measurement(p.point_id, lvl, tuple(measure(p, lvl))) for p, lvl in runs]
    # one play per round: what a driver writes to files and reads back, in any order
    on_disk = json.dumps([m.to_dict() for m in recorded])
    back = [Measurement.from_dict(d) for d in json.loads(on_disk)]
    random.Random(0).shuffle(back)
    done: list[Measurement] = []
    for runs in seen:
        assert next_round(grid(), done, strategy) == runs
        keys = {(p.point_id, lvl) for p, lvl in runs}
        done += [m for m in back if (m.point_id, m.level) in keys]
    assert next_round(grid(), done, strategy) == []
    in_memory, _ = search(grid(), measure, strategy, measurements=back)
    assert in_memory.best == replay(grid(), done, strategy).best


def test_a_partly_recorded_round_resumes_with_what_is_missing() -> None:
    strategy = Halving()
    first = next_round(grid(), [], strategy)
    partial = [Measurement(p.point_id, lvl, (1.0,)) for p, lvl in first[:5]]
    assert next_round(grid(), partial, strategy) == first[5:]
    state = replay(grid(), partial, strategy)
    assert not state.done and state.best is None


def test_measurement_from_dict_refuses_non_finite_values() -> None:
    with pytest.raises(ValueError, match="finite"):
        Measurement.from_dict({"point": "x", "level": 0, "values": ["nan"]})


# ---------------------------------------------------------------- accounting


def test_accounting_against_the_full_grid() -> None:
    pts = grid()
    values = {p.point_id: [float(i), float(i)] for i, p in enumerate(pts)}
    state, _ = search(pts, table(values), Halving(eta=3, levels=3, run_on=True))
    load = {p.point_id: 300.0 for p in pts}
    load[pts[11].point_id] = 420.0
    acc = account(state, load, [60.0, 240.0, 900.0])
    # halving: 12 loads (one 420) + 12 screens; round 1: 3 loads, 4 x 240, and the 4 full
    # benches taken on right after screening (no load); round 2: nothing left
    halving = 11 * 300 + 420 + 12 * 60 + 3 * 300 + 4 * 240 + 4 * 900
    assert (acc.spent.restarts, acc.spent.seconds) == (15, halving)
    assert (acc.grid.restarts, acc.grid.seconds) == (12, 11 * 300 + 420 + 12 * 900)
    assert acc.line() == (
        f"halving: 15 restarts (0 failed), {halving} s = 2.8 h (68% of the grid's time); the full "
        f"grid would be 12 restarts (0 failed), {11 * 300 + 420 + 12 * 900} s = 4.0 h"
    )


def test_accounting_charges_a_failed_start_its_seconds_to_failure_and_the_grid_every_failure() -> (
    None
):
    pts = grid()
    values = {p.point_id: [float(i), float(i)] for i, p in enumerate(pts)}
    failing = pts[11].point_id
    values[failing] = []
    state, _ = search(pts, table(values), Halving(eta=3, levels=1))
    ruled = [pts[10].point_id]  # say a failure had ruled it out: the grid would see it fail too
    acc = account(state, 300.0, [900.0], failed={failing: 250.0}, ruled_out=ruled)
    assert (acc.spent.restarts, acc.spent.failed) == (12, 1)
    assert acc.spent.seconds == 11 * (300 + 900) + 250
    assert (acc.grid.restarts, acc.grid.failed) == (12, 2)
    assert acc.grid.seconds == 10 * (300 + 900) + 250 + 250


def test_accounting_fills_unmeasured_loads_with_the_median_and_checks_levels() -> None:
    state, _ = search(grid(), noisy(2), Halving(eta=3, max_restarts=4))
    acc = account(state, {grid()[0].point_id: 100.0}, [1.0, 2.0, 3.0])
    assert acc.grid.seconds == 12 * (100.0 + 3.0)
    with pytest.raises(ValueError, match="one figure per level"):
        account(state, 100.0, [1.0, 2.0])


def test_select_with_repetitions_uses_the_paired_test_against_the_kth() -> None:
    pts = grid()[:4]
    values = {
        pts[0].point_id: [200.0, 300.0, 400.0],
        pts[1].point_id: [190.0, 290.0, 390.0],  # the k-th (k = ceil(4/3) = 2)
        # 5 below the k-th in every repetition: the prompts' swing cancels, it is beaten
        pts[2].point_id: [185.0, 285.0, 385.0],
        # ahead in one repetition, behind in two: the k-th does not beat it
        pts[3].point_id: [195.0, 260.0, 370.0],
    }
    by_id = {k: stats(v) for k, v in values.items()}
    ranking = sorted(pts, key=lambda p: -by_id[p.point_id].mean)
    assert by_id[pts[2].point_id].overlaps(by_id[pts[1].point_id])  # CI overlap would keep it
    assert select(ranking, by_id, eta=3, values=values) == (pts[0], pts[1], pts[3])


def test_a_finalist_kept_as_a_tie_with_the_kth_starts_again() -> None:
    pts = grid()[:3]
    values = {
        pts[0].point_id: [101.0, 111.0, 91.0],  # the best, screened first: benched on
        pts[1].point_id: [104.0, 108.0, 89.5],  # behind it, but not significantly (paired)
        pts[2].point_id: [50.0, 60.0, 40.0],
    }
    state, _ = search(pts, table(values), Halving(eta=3, levels=2, run_on=True))
    r0, r1 = state.rounds
    assert [r.point for r in r0.runs if r.run_on] == [pts[0]]  # k = 1: only a leader runs on
    assert r0.kept == (pts[0], pts[1])
    assert [(r.point, r.restart) for r in r1.runs] == [(pts[1], True)]
    assert state.restarts == 4 and state.best == pts[0]


def test_without_run_on_every_survivor_not_running_starts_again() -> None:
    pts = grid()  # 12 points, each later one better: every one leads when screened
    values = {p.point_id: [float(i), float(i)] for i, p in enumerate(pts)}
    on, _ = search(pts, table(values), Halving(eta=3, levels=2, run_on=True))
    off, _ = search(pts, table(values), Halving(eta=3, levels=2, run_on=False))
    assert sum(r.run_on for r in on.rounds[0].runs) == 12 and on.restarts == 12
    assert not any(r.run_on for rnd in off.rounds for r in rnd.runs)
    # the 4 finalists, the running one (screened last) first and free
    assert [r.restart for r in off.rounds[1].runs] == [False, True, True, True]
    assert off.restarts == 15 and on.best == off.best == pts[11]
