"""sweep.descent: coordinate descent over the grid, alone and as `sweep.yml -e search=descent`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_sweep_halving import measure, plan_round

from sweep import objectives, search_rounds
from sweep.descent import Descent, replay, search
from sweep.grid_axes import Grid
from sweep.points import Point
from sweep.report import write_report
from sweep.search import Measurement, describe

BUDGETS = (32, 40, 48, 64)
TOPKS = (1, 2, 3)


def points() -> list[Point]:
    return sorted([Point("DDTREE", b, k, 2048) for b in BUDGETS for k in TOPKS], key=Point.sort_key)


def grid_of(pts: list[Point]) -> Grid:
    return Grid.of({p.point_id: (p.algorithm, p.budget, p.topk, p.window) for p in pts})


def peak_at(budget: int, topk: int) -> Any:
    """A single-peaked objective (one value per repetition), highest at (budget, topk)."""

    def value(p: Point, level: int) -> list[float]:
        assert level == 0  # descent benches every run in full
        v = 100.0 - abs(BUDGETS.index(p.budget) - BUDGETS.index(budget)) * 7
        v -= abs(p.topk - topk) * 5
        return [v - 0.5, v, v + 0.5]

    return value


def test_the_search_starts_at_the_centre_of_each_part_of_the_grid() -> None:
    order = {p.point_id: i for i, p in enumerate(points())}
    assert grid_of(points()).starts(order) == ["ddtree-b40-k2-w2048"]


def test_a_grid_with_two_parts_starts_in_each() -> None:
    g = Grid.of({"a": (1, 1), "b": (2, 1), "c": (8, 8), "d": (9, 8)})
    assert g.starts({"a": 0, "b": 1, "c": 2, "d": 3}) == ["a", "c"]


@pytest.mark.parametrize(
    ("budget", "topk"), [(b, k) for b in BUDGETS for k in TOPKS], ids=lambda v: str(v)
)
def test_descent_finds_the_peak_wherever_it_is_with_fewer_restarts(budget: int, topk: int) -> None:
    pts = points()
    state, recorded = search(pts, grid_of(pts), peak_at(budget, topk), Descent())
    assert state.done and state.best is not None
    assert (state.best.budget, state.best.topk) == (budget, topk)
    assert state.restarts == len(recorded) <= 8 < len(pts)
    ran = [r.point.point_id for rnd in state.rounds for r in rnd.runs]
    assert len(ran) == len(set(ran))  # no point started twice


def test_the_search_stops_where_every_step_from_the_best_is_measured() -> None:
    pts = points()
    state, _ = search(pts, grid_of(pts), peak_at(32, 3), Descent())
    lines = describe(state)
    assert lines[0].startswith(
        "round 0 level 0: ddtree-b32-k2-w2048, ddtree-b40-k2-w2048, ddtree-b48-k2-w2048 "
        "(3 restarts); best so far ddtree-b32-k2-w2048"
    )
    assert lines[1].startswith("round 1 level 0: ddtree-b32-k1-w2048, ddtree-b32-k3-w2048")
    assert lines[-2].startswith("not measured (no step from the best leads there): ")
    assert "ddtree-b64-k1-w2048" in lines[-2]
    assert lines[-1] == "best: ddtree-b32-k3-w2048"
    # every measured neighbour of the best is worse
    best = state.best
    assert best is not None
    final = state.rounds[-2].stats
    for q in grid_of(pts).neighbours(best.point_id):
        assert final[q].mean < final[best.point_id].mean


def test_a_failed_centre_does_not_end_the_search() -> None:
    pts = points()
    peak = peak_at(48, 1)

    def value(p: Point, level: int) -> list[float]:
        return [] if p.point_id == "ddtree-b40-k2-w2048" else peak(p, level)

    state, _ = search(pts, grid_of(pts), value, Descent())
    assert state.best is not None and state.best.point_id == "ddtree-b48-k1-w2048"
    assert [p.point_id for p in state.rounds[0].failed] == ["ddtree-b40-k2-w2048"]


def test_a_restart_budget_cuts_the_search_and_names_what_it_left() -> None:
    pts = points()
    state, recorded = search(pts, grid_of(pts), peak_at(32, 3), Descent(max_restarts=4))
    assert state.done and state.restarts == len(recorded) == 4
    assert state.skipped and all("restart budget" in s.reason for s in state.skipped)
    with pytest.raises(ValueError, match="max_restarts=0"):
        Descent(max_restarts=0)


def test_replay_resumes_from_any_subset_of_the_recorded_runs() -> None:
    pts = points()
    g = grid_of(pts)
    full, recorded = search(pts, g, peak_at(40, 3), Descent())
    for cut in range(len(recorded)):
        again, _ = search(pts, g, peak_at(40, 3), Descent(), recorded[:cut])
        assert again.best == full.best and again.restarts == full.restarts
    assert replay(pts, g, [Measurement("ddtree-b40-k2-w2048", 0, (1.0,))], Descent()).pending


def test_strategy_refuses_halving_settings() -> None:
    s = search_rounds.strategy({"max_restarts": "5"}, objectives.make("tpot"), "descent")
    assert isinstance(s, Descent) and (s.max_restarts, s.higher_is_better) == (5, False)
    with pytest.raises(
        search_rounds.SearchInputError, match="halving_eta=2: only with search=halving"
    ):
        search_rounds.strategy({"halving_eta": 2}, objectives.make(), "descent")


SPEEDS = {  # a 3 x 2 grid whose best is b64-k4 (topk 2 and 4: two tree widths per budget)
    "ddtree-b32-k2-w2048": 100.0,
    "ddtree-b48-k2-w2048": 150.0,
    "ddtree-b64-k2-w2048": 170.0,
    "ddtree-b32-k4-w2048": 110.0,
    "ddtree-b48-k4-w2048": 160.0,
    "ddtree-b64-k4-w2048": 210.0,
}
DESCENT = {"budget": "32,48,64", "topk": "2,4", "search": "descent", "halving_eta": ""}


def test_sweep_rounds_measure_in_the_sweeps_own_directory_and_report_the_search(
    tmp_path: Path,
) -> None:
    final = tmp_path / "s"
    queues = []
    for r in range(8):
        plan = plan_round(tmp_path, r, **DESCENT)
        assert plan["sweep"]["dir"] == str(final)  # one level: no screening sweep
        if plan["final"]:
            break
        queues.append([p["id"] for p in plan["queue"]])
        for pid in queues[-1]:
            measure(final, pid, SPEEDS[pid]) if pid in SPEEDS else measure(final, pid, 50.0)
    assert queues == [
        ["ddtree-b32-k2-w2048", "ddtree-b48-k2-w2048", "ddtree-b64-k2-w2048", "baseline"],
        ["ddtree-b64-k4-w2048"],  # the next axis from the best, b64-k2
        ["ddtree-b48-k4-w2048"],  # back to the first axis from the new best
    ]
    assert plan["queue"] == []
    info = plan["search"]
    assert info["search"] == "descent" and info["done"] and info["best"] == "ddtree-b64-k4-w2048"
    assert (info["restarts"], info["grid_restarts"]) == (5, 6)
    assert "descent: 5 restarts" in info["cost"]["line"]

    out = write_report(final, with_plots=False)
    md = (final / "report.md").read_text()
    assert "Coordinate descent (max_restarts none)" in md
    assert "not measured (no step from the best leads there): ddtree-b32-k4-w2048\n" in md
    assert out["incomplete"] == []  # points it never measured are not failures
    assert "descent: 5 restarts" in out["best"][-1]


def test_a_search_the_rounds_did_not_finish_is_reported_incomplete(tmp_path: Path) -> None:
    plan_round(tmp_path, 0, **DESCENT)
    out = write_report(tmp_path / "s", with_plots=False)
    assert "descent search not over (rerun to go on)" in out["incomplete"]


def test_bad_input_is_named_before_anything_runs(tmp_path: Path) -> None:
    from test_sweep_fakes import plan_input

    from sweep.params import SweepInputError
    from sweep.plan import make_plan

    for cli, named in [
        ({"search": "walk"}, "search=walk: choose one of grid, halving, descent"),
        ({**DESCENT, "halving_levels": 3}, "halving_levels=3: only with search=halving"),
        ({**DESCENT, "max_restarts": "many"}, "max_restarts=many"),
    ]:
        with pytest.raises(SweepInputError, match=named):
            make_plan(plan_input(tmp_path, **{**cli, "sweep_name": "s"}))
    assert not (tmp_path / "s").exists()
