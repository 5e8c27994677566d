"""sweep.search_rounds: search=halving planned from the level sweeps on disk, whenever the online
planner is asked (here: `sweep plan` starts the invocation, planner.current is the plan after
some runs were recorded)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from test_sweep_fakes import plan_input
from test_sweep_report import _rep_point

from bench.records import write_json
from sweep import layout, objectives, planner, search, search_rounds
from sweep.__main__ import main
from sweep.plan import make_plan
from sweep.report import write_report

GRID = {"budget": "32,48", "topk": "2,4", "search": "halving", "halving_eta": 2}
THROUGHPUT = objectives.make()


def server(pid: str) -> dict[str, Any]:
    if pid == "baseline":
        return {"algorithm": "NONE", "budget": 16, "topk": 4, "window": 2048}
    _, b, k, w = pid.split("-")
    return {"algorithm": "DDTREE", "budget": int(b[1:]), "topk": int(k[1:]), "window": int(w[1:])}


def measure(
    d: Path,
    pid: str,
    mean: float,
    load_s: float = 10.0,
    bench_s: float = 5.0,
    restarted: bool = True,
    repetitions: int = 3,
) -> None:
    """A complete run of `pid` in sweep dir `d`: `repetitions` (1, or a multiple of 3) around
    `mean` tok/s."""
    values = [mean] if repetitions == 1 else [mean - 1.0, mean, mean + 1.0] * (repetitions // 3)
    _rep_point(d, pid, values, server=server(pid))
    meta = layout.read_json(d / pid / layout.POINT_FILE) or {}
    timings = {
        "restarted": restarted,
        "load_s": load_s,
        "bench_s": bench_s,
        "overhead_s": 1.0,
        "wall_s": load_s + bench_s + 1.0,
        "finished": time.time(),
    }
    write_json(d / pid / layout.POINT_FILE, {**meta, "timings": timings})


def fail(d: Path, pid: str, finished: float) -> None:
    (d / pid).mkdir(parents=True)
    write_json(
        d / pid / layout.FAILURE_FILE, {"status": "failed", "timings": {"finished": finished}}
    )


def plan_round(tmp: Path, round_index: int, **cli: Any) -> dict[str, Any]:
    """Round 0: `python -m sweep plan` as the playbook calls it (starts an invocation: records
    the run, writes search.json). Later: the invocation's plan now (what `next` hands out from),
    after the runs the test recorded."""
    if round_index > 0:
        return planner.current(tmp / "s").to_dict()
    inp = plan_input(tmp, **{**GRID, "sweep_name": "s", **cli})
    path = tmp / f"plan-{round_index}.json"
    path.write_text(json.dumps(inp))
    with open(path) as f, pytest.MonkeyPatch.context() as mp:
        mp.setattr("sys.stdin", f)
        out_path = tmp / f"out-{round_index}.json"
        with open(out_path, "w") as out, pytest.MonkeyPatch.context() as mp2:
            mp2.setattr("sys.stdout", out)
            assert main(["plan"]) == 0
    return json.loads(out_path.read_text())


SPEEDS = {
    "ddtree-b32-k2-w2048": 100.0,
    "ddtree-b48-k2-w2048": 190.0,
    "ddtree-b32-k4-w2048": 120.0,
    "ddtree-b48-k4-w2048": 200.0,
}


def test_strategy_defaults_and_bounds() -> None:
    s = search_rounds.strategy({}, THROUGHPUT)
    assert (s.eta, s.levels, s.max_restarts, s.higher_is_better) == (3.0, 2, None, True)
    s = search_rounds.strategy({"halving_levels": "3", "max_restarts": 7}, objectives.make("tpot"))
    assert (s.levels, s.max_restarts, s.higher_is_better) == (3, 7, False)
    for cli, named in [
        ({"halving_levels": 1}, "halving_levels=1"),
        ({"halving_levels": 4}, "halving_levels=4"),
        ({"halving_eta": "fast"}, "halving_eta=fast"),
        ({"halving_eta": 0.5}, "halving_eta=0.5"),
        ({"max_restarts": 0}, "max_restarts=0"),
        ({"max_restarts": True}, "max_restarts=True"),
    ]:
        with pytest.raises(search_rounds.SearchInputError, match=named.replace(".", r"\.")):
            search_rounds.strategy(cli, THROUGHPUT)


def test_screening_levels_halve_the_outputs_and_the_last_is_the_sweeps_own() -> None:
    bench = {"contexts": [512], "concurrency": [1, 8], "output_len": [64, 256], "repetitions": 3}
    assert search_rounds.level_bench(bench, 2, 3) == bench
    assert search_rounds.level_bench(bench, 1, 3)["output_len"] == [32, 128]
    assert search_rounds.level_bench(bench, 0, 3) == {**bench, "output_len": [16, 64]}
    assert search_rounds.level_bench({**bench, "output_len": [20]}, 0, 3)["output_len"] == [16]


def test_a_runs_value_per_repetition_is_the_geometric_mean_over_cells(tmp_path: Path) -> None:
    from test_sweep_fakes import write_records

    write_records(tmp_path / "p" / "records", 100.0, 2.0)  # 4 cells: 100 and 800 tok/s, twice
    (value,) = search_rounds.run_values(tmp_path / "p", THROUGHPUT)
    assert value == pytest.approx((100.0 * 800.0 * 100.0 * 800.0) ** 0.25)
    assert search_rounds.run_values(tmp_path / "missing", THROUGHPUT) == ()


def screen_round(queue: list[dict[str, Any]], speeds: dict[str, float], final: Path) -> list[str]:
    """What the hosts do with a screening round's queue: the baseline (first), then each point
    screened and benched in full at once (no restart) when `python -m sweep run-on` says so.
    Returns the points benched on."""
    ran_on = []
    for item in queue:
        pid = item["id"]
        if item["baseline"]:
            assert item["sweep"]["dir"] == str(final)
            measure(final, pid, 90.0)
            continue
        assert "sweep" not in item and item["run_on"]["sweep"]["dir"] == str(final)
        measure(final.with_name(final.name + ".screen0"), pid, speeds[pid])
        if search_rounds.run_on(final, pid)["run"]:
            measure(final, pid, speeds[pid] * 2, restarted=False)
            ran_on.append(pid)
    return ran_on


def test_rounds_screen_every_point_then_run_the_best_and_the_baseline_in_full(
    tmp_path: Path,
) -> None:
    # b32-k4 is screened third, behind both before it: the one not benched on
    speeds = {**SPEEDS, "ddtree-b32-k4-w2048": 50.0}
    r0 = plan_round(tmp_path, 0, halving_run_on=True)
    screen, final = tmp_path / "s.screen0", tmp_path / "s"
    assert r0["sweep"]["dir"] == str(screen) and not r0["final"]
    assert [p["id"] for p in r0["queue"]] == ["baseline", *SPEEDS]  # the baseline first
    assert r0["sweep"]["bench"]["output_len"] == [32]  # the sweep's own 64, halved
    assert r0["queue"][1]["run_on"]["sweep"]["bench"]["output_len"] == [64]
    assert "identity" in r0["queue"][1]["run_on"]  # None: the fake host published none
    assert (final / "sweep.json").is_file()  # before any point lands there
    assert screen_round(r0["queue"], speeds, final) == [
        "ddtree-b32-k2-w2048",
        "ddtree-b48-k2-w2048",
        "ddtree-b48-k4-w2048",
    ]

    # eta 2: the finalists b48-k4 and b48-k2 were both benched on: nothing left to start
    r1 = plan_round(tmp_path, 1, halving_run_on=True)
    assert r1["final"] and r1["queue"] == [] and r1["sweep"]["dir"] == str(final)
    info = json.loads((final / search_rounds.SEARCH_FILE).read_text())
    assert info["best"] == "ddtree-b48-k4-w2048" and info["done"] and info["failed"] == []
    assert info["full"] == ["ddtree-b32-k2-w2048", "ddtree-b48-k2-w2048", "ddtree-b48-k4-w2048"]
    # 4 screening starts, no second start: as many as the grid
    assert (info["restarts"], info["grid_restarts"]) == (4, 4)
    assert info["cost"]["grid"] == {"restarts": 4, "seconds": 4 * (10.0 + 5.0), "failed": 0}
    assert info["cost"]["search"] == {
        "restarts": 4,
        "seconds": 4 * 10.0 + 4 * 5.0 + 3 * 5.0,
        "failed": 0,
    }

    out = write_report(final, with_plots=False)
    assert out["incomplete"] == []
    assert out["best"][-1] == info["cost"]["line"]
    md = (final / "report.md").read_text()
    assert "## Search" in md and "+full" in md and info["cost"]["line"] in md
    assert "run-on on): the points above" in md
    # what round 1 found is not planned again: its runs were recorded, nothing new started
    assert len(layout.read_sweep(final)["runs"]) == 1


def test_a_finalist_not_benched_on_is_started_again_in_the_last_round(tmp_path: Path) -> None:
    r0 = plan_round(tmp_path, 0, halving_run_on=True)
    final = tmp_path / "s"
    # the hosts screened every point but benched none on (say the run-on step was cut short)
    for item in r0["queue"]:
        if not item["baseline"]:
            measure(tmp_path / "s.screen0", item["id"], SPEEDS[item["id"]])
    r1 = plan_round(tmp_path, 1, halving_run_on=True)
    assert r1["sweep"]["dir"] == str(final)
    # the running configuration (screened last) first, then the runner-up, then the baseline
    assert [p["id"] for p in r1["queue"]] == [
        "ddtree-b48-k4-w2048",
        "ddtree-b48-k2-w2048",
        "baseline",
    ]
    assert all("run_on" not in p for p in r1["queue"])


def test_run_on_refuses_a_sweep_without_a_halving_search(tmp_path: Path) -> None:
    with pytest.raises(search_rounds.SearchInputError, match="no halving search recorded"):
        search_rounds.run_on(tmp_path, "ddtree-b32-k2-w2048")


def test_a_run_failed_in_this_invocation_is_out_an_earlier_failure_is_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan_round(tmp_path, 0)
    screen = tmp_path / "s.screen0"
    started = json.loads((tmp_path / "s" / search_rounds.SEARCH_FILE).read_text())["started"]
    for pid, speed in list(SPEEDS.items())[1:]:
        measure(screen, pid, speed)
    fail(screen, "ddtree-b32-k2-w2048", finished=started + 1)
    r1 = plan_round(tmp_path, 1)
    assert "ddtree-b32-k2-w2048" not in [p["id"] for p in r1["queue"]]
    out = write_report(tmp_path / "s", with_plots=False)
    assert "ddtree-b32-k2-w2048@L0" in out["incomplete"]
    md = (tmp_path / "s" / "report.md").read_text()
    assert "run-on off): the points above were measured with the full bench: the finalists." in md

    # a new invocation later: the failure is from before it, so it is screened again
    monkeypatch.setattr(planner.time, "time", lambda: started + 60)
    again = plan_round(tmp_path, 0)
    assert [p["id"] for p in again["queue"]] == ["ddtree-b32-k2-w2048"]
    assert again["sweep"]["dir"] == str(screen)


def test_a_stop_ends_the_rounds(tmp_path: Path) -> None:
    plan_round(tmp_path, 0, stop_on_failure=True)
    screen = tmp_path / "s.screen0"
    measure(screen, "ddtree-b48-k4-w2048", 200.0)
    (screen / layout.STOP).write_text("failed\n")
    r1 = plan_round(tmp_path, 1, stop_on_failure=True)
    assert r1["final"] and r1["queue"] == []
    assert json.loads((tmp_path / "s" / search_rounds.SEARCH_FILE).read_text())["stopped"] is True


def test_an_old_stop_marker_does_not_stop_a_new_invocation(tmp_path: Path) -> None:
    screen = tmp_path / "s.screen0"
    screen.mkdir()
    (screen / layout.STOP).write_text("failed\n")
    os.utime(screen / layout.STOP, (1.0, 1.0))
    plan_round(tmp_path, 0)
    for pid, speed in SPEEDS.items():
        measure(screen, pid, speed)
    assert plan_round(tmp_path, 1)["queue"]


def test_a_grid_plans_its_pending_points_and_records_one_run_per_invocation(
    tmp_path: Path,
) -> None:
    r0 = plan_round(tmp_path, 0, search="grid", halving_eta="")  # a search's setting: none
    assert not r0["final"] and len(r0["queue"]) == 5 and r0["search"] is None
    measure(tmp_path / "s", "ddtree-b48-k4-w2048", 200.0)
    r1 = plan_round(tmp_path, 1, search="grid", halving_eta="")
    assert len(r1["queue"]) == 4 and "ddtree-b48-k4-w2048" not in [p["id"] for p in r1["queue"]]
    assert len(layout.read_sweep(tmp_path / "s")["runs"]) == 1  # asking again records no run


def test_max_restarts_caps_the_screening(tmp_path: Path) -> None:
    r0 = plan_round(tmp_path, 0, max_restarts=2)
    assert [p["id"] for p in r0["queue"]] == list(SPEEDS)[:2]
    info = json.loads((tmp_path / "s" / search_rounds.SEARCH_FILE).read_text())
    assert any("restart budget" in line for line in info["rounds"])


def test_halving_needs_points_to_search(tmp_path: Path) -> None:
    from sweep.params import SweepInputError

    with pytest.raises(SweepInputError, match="search=halving"):
        make_plan(plan_input(tmp_path, search="halving", budget="16", algorithm="NONE"))


def test_a_full_bench_taken_on_is_recorded_under_the_last_level_identity(tmp_path: Path) -> None:
    from test_sweep_store import CAPABILITIES

    cli = {**GRID, "sweep_name": "s", "halving_run_on": True}
    inp = {**plan_input(tmp_path, **cli), "server": CAPABILITIES}
    item = make_plan(inp).to_dict()["queue"][1]  # [0]: the baseline
    screening, full = item["identity"], item["run_on"]["identity"]
    assert screening["digest"] and full["digest"] and screening["digest"] != full["digest"]
    assert full["bench"]["output_len"] == [64] and screening["bench"]["output_len"] == [32]


def test_run_on_is_off_unless_asked_for_and_is_validated(tmp_path: Path) -> None:
    s = search_rounds.strategy({"halving_run_on": "true"}, THROUGHPUT)
    assert isinstance(s, search.Halving) and s.run_on is True
    default = search_rounds.strategy({}, THROUGHPUT)
    assert isinstance(default, search.Halving) and default.run_on is False
    with pytest.raises(search_rounds.SearchInputError, match="halving_run_on=maybe"):
        search_rounds.strategy({"halving_run_on": "maybe"}, THROUGHPUT)
    with pytest.raises(search_rounds.SearchInputError, match="halving_run_on=true: only with"):
        search_rounds.strategy({"halving_run_on": "true"}, THROUGHPUT, "descent")
    r0 = plan_round(tmp_path, 0)
    assert [p["id"] for p in r0["queue"]] == list(SPEEDS)  # the baseline in the last round
    assert all("run_on" not in p for p in r0["queue"])


def test_the_host_that_screened_a_leader_benches_it_in_full_next(tmp_path: Path) -> None:
    r0 = plan_round(tmp_path, 0, halving_run_on=True)
    final = tmp_path / "s"
    first = planner.next_run(final, "h1", lost=set())
    assert first["item"]["id"] == "baseline" and first["item"]["sweep"]["dir"] == str(final)
    measure(final, "baseline", 90.0)
    screen = planner.next_run(final, "h1", lost=set())
    pid = screen["item"]["id"]
    assert pid == r0["queue"][1]["id"] and screen["item"]["sweep"]["dir"] == str(final) + ".screen0"
    measure(tmp_path / "s.screen0", pid, 100.0)
    run_on = planner.next_run(final, "h1", lost=set())
    # the first screened always leads: the same point at the last level, no restart
    assert run_on["item"]["id"] == pid and run_on["item"]["sweep"]["dir"] == str(final)
    assert run_on["why"].startswith("run-on") and "run_on" not in run_on["item"]
    assert run_on["item"]["server"] == screen["item"]["server"]
    with pytest.raises(search_rounds.SearchInputError, match="no halving search recorded"):
        search_rounds.run_on(tmp_path / "nowhere", pid)
