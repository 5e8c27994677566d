"""sweep.rollout.deploy: what deploy.yml rolls out - a cell's winner, a tie only when a point is
named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_sweep_fakes import archive, plan_input
from test_sweep_report import BASE, _rep_point

from sweep import layout
from sweep.cli import plan
from sweep.config.params import SweepInputError
from sweep.report import report
from sweep.rollout import deploy
from sweep.store import record


def finished_sweep(tmp: Path, throughputs: dict[str, float]) -> Path:
    """A sweep over budgets (no baseline) whose point b<budget> ran at the given throughput."""
    p = plan.make_plan(
        plan_input(tmp, budget=",".join(throughputs), baseline="false", sweep_name="s")
    )
    plan.record_run(p)
    for point in p.to_dict()["points"]:
        budget = str(point["server"]["budget"])
        info = {"point": point, "host": "h1", "started": 0.0}
        arc = archive(tmp, throughputs[budget], 3.0, f"{point['id']}.tgz")
        record.finish_point(p.sweep_dir, arc, info)
    return p.sweep_dir


def choose(sweep: Path, **extra: Any) -> dict[str, Any]:
    # These sweeps have no baseline, so the greedy-output check cannot compare their points;
    # the check's own gate is tested in test_sweep_greedy.py.
    inp = {"sweep": str(sweep), "context": 512, "concurrency": 8, "greedy_match_min": 0, **extra}
    return deploy.choose(inp)


def test_one_repetition_each_is_a_tie_and_is_refused_naming_both(tmp_path: Path) -> None:
    sweep = finished_sweep(tmp_path, {"4": 100.0, "8": 140.0})
    with pytest.raises(SweepInputError) as e:
        choose(sweep)
    assert "tie" in str(e.value)
    assert "ddtree-b8-k4-w2048" in str(e.value) and "ddtree-b4-k4-w2048" in str(e.value)


def test_a_named_complete_point_is_deployed(tmp_path: Path) -> None:
    sweep = finished_sweep(tmp_path, {"4": 100.0, "8": 140.0})
    out = choose(sweep, point="ddtree-b4-k4-w2048")
    assert out["point"] == "ddtree-b4-k4-w2048"
    assert out["server"] == {
        "algorithm": "DDTREE",
        "budget": 4,
        "topk": 4,
        "window": 2048,
        "env": {},
    }
    assert out["cell"]["context"] == 512 and out["sweep"] == "s"
    json.dumps(out)  # what the playbook reads


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"point": "ddtree-b16-k4-w2048"}, "point=ddtree-b16-k4-w2048"),
        ({"context": 999}, "no cell"),
        ({"objective": "fastest"}, "fastest"),
        ({"objective": "goodput", "slo_ttft_ms": 100}, "slo_tpot_ms"),
        ({"slo_ttft_ms": "soon", "objective": "goodput"}, "slo_ttft_ms=soon"),
    ],
)
def test_bad_input_is_named(tmp_path: Path, extra: dict[str, Any], named: str) -> None:
    sweep = finished_sweep(tmp_path, {"4": 100.0, "8": 140.0})
    with pytest.raises(SweepInputError, match=named):
        choose(sweep, **extra)


def test_no_sweep_there(tmp_path: Path) -> None:
    with pytest.raises(SweepInputError, match="no sweep there"):
        choose(tmp_path / "nothing")


def test_records_are_appended(tmp_path: Path) -> None:
    deploy.record(tmp_path, {"host": "a", "point": "p"})
    deploy.record(tmp_path, {"host": "b", "point": "p"})
    lines = (tmp_path / deploy.DEPLOYMENTS).read_text().splitlines()
    assert [json.loads(x)["host"] for x in lines] == ["a", "b"]


def test_the_report_lists_each_hosts_deployments_with_its_time_out_of_the_pool(
    tmp_path: Path,
) -> None:
    sweep = tmp_path / "s"
    _rep_point(sweep, "baseline", [100.0, 101.0, 99.0], server=BASE)
    layout.write_sweep(sweep, {"name": "s", "runs": []})
    assert deploy.section(sweep) == []  # nothing deployed: no section
    deploy.record(sweep, {"event": "canary", "host": "a", "point": "baseline"})
    out_of_pool = {"left_pool": 10.0, "rejoined": 52.5, "in_flight": 0, "sent_while_out": 0}
    deploy.record(sweep, {"event": "deployed", "host": "a", "point": "baseline", **out_of_pool})
    deploy.record(sweep, {"event": "deployed", "host": "b", "point": "baseline", "left_pool": None})
    with (sweep / deploy.DEPLOYMENTS).open("a") as f:
        f.write("not json\n")  # a torn line is skipped, not fatal
    md = Path(report.write_report(sweep, with_plots=False)["report"]).read_text()
    rows_ = [line for line in md.splitlines() if line.startswith("| ") and " deployed " in line]
    assert [r.strip("| ").split(" | ")[1:] for r in rows_] == [
        ["a", "deployed", "baseline", "42.5 s", "0", "0"],
        ["b", "deployed", "baseline", "-", "-", "-"],
    ]
    assert "## Deployments" in md


def test_a_clear_winner_is_chosen_without_naming_it(tmp_path: Path) -> None:
    sweep = tmp_path / "s"
    _rep_point(sweep, "baseline", [100.0, 101.0, 99.0], server=BASE)
    _rep_point(sweep, "spec", [150.0, 151.0, 149.0])
    layout.write_sweep(sweep, {"name": "s", "runs": []})
    out = deploy.choose({"sweep": str(sweep), "context": "512", "concurrency": "1"})
    assert out["point"] == "spec" and "winner" in out["summary"]
    assert out["server"]["budget"] == 8 and out["server"]["env"] == {}
