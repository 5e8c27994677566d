"""sweep.search.search_rounds: search=model planned from the sweep's records whenever the online
planner is asked (here: `sweep plan` starts the invocation, planner.current is the plan after some
runs were recorded), and the retired searches (search=halving, search=descent) refused by name.

Its helpers (measure, fail, plan_round) are the other sweep tests' fake runs too."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from test_sweep_fakes import plan_input
from test_sweep_report import _rep_point

from bench.more_repetitions import MAX_REPETITIONS
from bench.records import write_json
from sweep import layout
from sweep.__main__ import main
from sweep.cli import inputs, planner
from sweep.cli.plan import make_plan
from sweep.config import objectives
from sweep.config.params import RETIRED_KEYS, SearchSettings, SweepInputError, search_settings
from sweep.report.report import write_report
from sweep.search import search_rounds
from sweep.search.model_search import ModelSearch

GRID = {"budget": "32,48,64", "topk": "2,4", "search": "model"}
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


def test_strategy_defaults_and_bounds(tmp_path: Path) -> None:
    assert search_settings({"search": "model"}) == SearchSettings("model", None, MAX_REPETITIONS)
    assert inputs.read_inputs(plan_input(tmp_path, **GRID)).strategy == ModelSearch(
        None, True, max_repetitions=MAX_REPETITIONS
    )
    given = plan_input(tmp_path, ["h1", "h2", "h3"], **GRID, max_restarts=7, objective="tpot")
    s = inputs.read_inputs(given).strategy
    assert s is not None and (s.max_restarts, s.higher_is_better, s.batch) == (7, False, 3)
    for cli, named in [
        ({"max_restarts": 0}, "max_restarts=0"),
        ({"max_restarts": True}, "max_restarts=True"),
        ({"max_restarts": "many"}, "max_restarts=many"),
        ({"max_repetitions": "0"}, "max_repetitions=0"),
    ]:
        with pytest.raises(SweepInputError, match=named):
            search_settings({"search": "model", **cli})


def test_a_runs_value_per_repetition_is_the_geometric_mean_over_cells(tmp_path: Path) -> None:
    from test_sweep_fakes import write_records

    write_records(tmp_path / "p" / "records", 100.0, 2.0)  # 4 cells: 100 and 800 tok/s, twice
    (value,) = search_rounds.run_values(tmp_path / "p", THROUGHPUT)
    assert value == pytest.approx((100.0 * 800.0 * 100.0 * 800.0) ** 0.25)
    assert search_rounds.run_values(tmp_path / "missing", THROUGHPUT) == ()


@pytest.mark.parametrize(
    ("search", "why"),
    [
        ("halving", "it starts every point at least once, so it cannot save restarts"),
        ("descent", "it missed the grid's answer on up to 14 of 30 generated surfaces"),
    ],
)
def test_a_retired_search_is_refused_by_name_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], search: str, why: str
) -> None:
    """search=halving and search=descent were retired (docs/search.md): `sweep check`, which the
    playbook's first play runs before any host is contacted, refuses them, saying why and to use
    search=model; so does every plan."""
    cli = {**GRID, "search": search, "sweep_name": "s"}
    with pytest.raises(SweepInputError, match=f"search={search} was retired: {why}") as e:
        make_plan(plan_input(tmp_path, **cli))
    assert "Use search=model" in str(e.value)
    path = tmp_path / "in.json"
    path.write_text(json.dumps({"cli": cli, "host": {}}))
    with open(path) as f, pytest.MonkeyPatch.context() as mp:
        mp.setattr("sys.stdin", f)
        assert main(["check"]) == 2
    err = capsys.readouterr().err
    assert f"search={search} was retired" in err and "Use search=model" in err
    assert [p.name for p in tmp_path.iterdir()] == ["in.json"]


@pytest.mark.parametrize("key", list(RETIRED_KEYS))
@pytest.mark.parametrize("search", ["model", "grid"])
def test_a_setting_of_a_retired_search_is_refused_by_name(
    tmp_path: Path, key: str, search: str
) -> None:
    cli = {**GRID, "search": search, key: "2"}
    with pytest.raises(SweepInputError, match=rf"{key}=2: a setting of search=halving, which was"):
        make_plan(plan_input(tmp_path, **cli))
    # the playbook passes "" for a parameter not given: that is no setting
    assert make_plan(plan_input(tmp_path, **{**cli, key: ""})).points


def test_a_stop_ends_the_rounds(tmp_path: Path) -> None:
    r0 = plan_round(tmp_path, 0, stop_on_failure=True)
    final = tmp_path / "s"
    first = next(p["id"] for p in r0["queue"] if not p["baseline"])
    measure(final, first, 200.0)
    (final / layout.STOP).write_text("failed\n")
    r1 = plan_round(tmp_path, 1, stop_on_failure=True)
    assert r1["final"] and r1["queue"] == []
    assert json.loads((final / layout.SEARCH_FILE).read_text())["stopped"] is True
    assert planner.next_run(final, "h1", lost=set())["action"] == "done"


def test_an_old_stop_marker_does_not_stop_a_new_invocation(tmp_path: Path) -> None:
    final = tmp_path / "s"
    final.mkdir()
    (final / layout.STOP).write_text("failed\n")
    os.utime(final / layout.STOP, (1.0, 1.0))
    r0 = plan_round(tmp_path, 0)
    assert r0["queue"] and not r0["search"]["stopped"]
    assert planner.next_run(final, "h1", lost=set())["action"] == "run"


def test_a_run_failed_in_this_invocation_is_out_an_earlier_failure_is_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r0 = plan_round(tmp_path, 0, baseline="false")
    final = tmp_path / "s"
    started = json.loads((final / layout.SEARCH_FILE).read_text())["started"]
    first, *rest = [p["id"] for p in r0["queue"]]
    fail(final, first, finished=started + 1)
    for pid in rest:
        measure(final, pid, 100.0 + int(pid.split("-")[1][1:]))
    r1 = plan_round(tmp_path, 1, baseline="false")
    assert first not in [p["id"] for p in r1["queue"]]
    info = json.loads((final / layout.SEARCH_FILE).read_text())
    assert info["failed"] == [f"{first}@L0"]
    out = write_report(final, with_plots=False)
    assert f"{first}@L0" in out["incomplete"]

    # a new invocation later: the failure is from before it, so it is tried again
    monkeypatch.setattr(planner.time, "time", lambda: started + 60)
    again = plan_round(tmp_path, 0, baseline="false")
    assert first in [p["id"] for p in again["queue"]]


def test_a_search_the_rounds_did_not_finish_is_reported_incomplete(tmp_path: Path) -> None:
    plan_round(tmp_path, 0)
    out = write_report(tmp_path / "s", with_plots=False)
    assert "model search not over (rerun to go on)" in out["incomplete"]


def test_a_grid_plans_its_pending_points_and_records_one_run_per_invocation(
    tmp_path: Path,
) -> None:
    r0 = plan_round(tmp_path, 0, search="grid", max_restarts="")  # a search's setting: none
    assert not r0["final"] and len(r0["queue"]) == 7 and r0["search"] is None
    measure(tmp_path / "s", "ddtree-b48-k4-w2048", 200.0)
    r1 = plan_round(tmp_path, 1, search="grid", max_restarts="")
    assert len(r1["queue"]) == 6 and "ddtree-b48-k4-w2048" not in [p["id"] for p in r1["queue"]]
    assert len(layout.read_sweep(tmp_path / "s")["runs"]) == 1  # asking again records no run


def test_a_search_needs_points_to_search(tmp_path: Path) -> None:
    with pytest.raises(SweepInputError, match="search=model: no point to search"):
        make_plan(plan_input(tmp_path, search="model", budget="16", algorithm="NONE"))
