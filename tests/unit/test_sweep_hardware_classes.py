"""Hosts of several hardware classes in one sweep: a baseline per class, run only there; each
measurement recorded (and reused) under the class of the host that measured it; speed-ups
against the own class's baseline."""

from __future__ import annotations

import copy
import csv
from pathlib import Path
from typing import Any

import pytest
from test_sweep_fakes import archive, plan_input
from test_sweep_report import _rep_point
from test_sweep_store import CAPABILITIES

from bench.records import write_json
from sweep import layout
from sweep.cli import plan
from sweep.config.params import SweepInputError
from sweep.report.report import write_report
from sweep.store import claims, record, store

RTX = CAPABILITIES["identity"]["hardware"]
H200 = "8x NVIDIA H200"


def caps(hardware: str) -> dict[str, Any]:
    c = copy.deepcopy(CAPABILITIES)
    c["identity"]["hardware"] = hardware
    return c


def two_class_plan(tmp: Path, **cli: Any) -> plan.Plan:
    inp = plan_input(tmp, hosts=["rtx1", "h200a", "rtx2"], budget=8, sweep_name="mixed", **cli)
    inp["server"] = caps(RTX)
    inp["classes"] = {"rtx1": RTX, "h200a": H200, "rtx2": RTX}
    inp["capabilities"] = {"rtx1": caps(RTX), "h200a": caps(H200), "rtx2": caps(RTX)}
    return plan.make_plan(inp)


def test_one_baseline_per_class_pinned_to_its_hosts(tmp_path: Path) -> None:
    out = two_class_plan(tmp_path).to_dict()
    baselines = [p for p in out["queue"] if p["baseline"]]
    assert [b["hosts"] for b in baselines] == [["h200a"], ["rtx1", "rtx2"]]
    assert all(b["id"].startswith("baseline-8x-nvidia-") for b in baselines)
    assert len({b["id"] for b in baselines}) == 2
    [spec] = [p for p in out["queue"] if not p["baseline"]]
    assert "hosts" not in spec  # any host may run it
    # the point's identity under each class, to be recorded under the measuring host's
    by_class = spec["identity"]["by_class"]
    assert set(by_class) == {RTX, H200}
    assert by_class[RTX]["digest"] != by_class[H200]["digest"]
    assert by_class[RTX]["digest"] == spec["identity"]["digest"]  # the first host's class


def test_one_class_keeps_one_baseline_and_the_name(tmp_path: Path) -> None:
    inp = plan_input(tmp_path, hosts=["a", "b"], budget=8)
    single = plan.make_plan({**inp, "classes": {"a": RTX, "b": RTX}}).to_dict()
    assert [p["id"] for p in single["queue"]] == ["baseline", "ddtree-b8-k4-w2048"]
    mixed = plan.make_plan({**inp, "classes": {"a": RTX, "b": H200}}).to_dict()
    # the default name is the points', not the host set's
    assert mixed["sweep"]["name"] == single["sweep"]["name"]


def test_a_pinned_point_is_claimed_only_by_its_hosts(tmp_path: Path) -> None:
    d = tmp_path / "s"
    layout.write_sweep(d, {"name": "s", "runs": [{"started": 1.0}]})
    assert claims.claim(d, "b", "h200a", only=["rtx1", "rtx2"]) == {
        "mine": False,
        "state": "elsewhere",
    }
    assert claims.claim(d, "b", "rtx2", only=["rtx1", "rtx2"])["mine"] is True


def test_a_point_is_recorded_under_the_class_that_measured_it(tmp_path: Path) -> None:
    p = two_class_plan(tmp_path)
    plan.record_run(p)
    [spec] = [q for q in p.to_dict()["queue"] if not q["baseline"]]
    info = {"point": spec, "host": "h200a", "host_class": H200, "started": 0.0}
    target = record.finish_point(p.sweep_dir, archive(tmp_path, 100.0, 3.0, "a.tgz"), info)
    meta = layout.read_json(target / layout.POINT_FILE) or {}
    h200 = spec["identity"]["by_class"][H200]["digest"]
    assert meta["host_class"] == H200 and meta["identity"]["digest"] == h200
    assert store.lookup(tmp_path, h200) == target
    # the first host's class did not measure it: a sweep on RTX hosts measures it itself
    assert store.lookup(tmp_path, spec["identity"]["digest"]) is None


def test_speedups_are_against_the_own_class_baseline(tmp_path: Path) -> None:
    s = tmp_path / "s"
    base = {"algorithm": "NONE", "budget": 16, "topk": 4, "window": 2048}
    spec = {"algorithm": "DDTREE", "budget": 8, "topk": 4, "window": 2048}
    for pid, tput, cls, server in [
        ("baseline-rtx", [50.0, 50.0, 50.0], RTX, base),
        ("baseline-h200", [100.0, 100.0, 100.0], H200, base),
        ("spec-on-h200", [200.0, 200.0, 200.0], H200, spec),
        ("spec-on-rtx", [150.0, 150.0, 150.0], RTX, spec),
    ]:
        _rep_point(s, pid, tput, server=server)
        meta = layout.read_json(s / pid / layout.POINT_FILE) or {}
        write_json(s / pid / layout.POINT_FILE, {**meta, "host_class": cls})
    out = write_report(s, with_plots=False)
    with open(out["summary"], newline="") as f:
        speedups = {r["point"]: float(r["speedup_mean_ratio"]) for r in csv.DictReader(f)}
    assert round(speedups["spec-on-h200"], 6) == 2.0
    assert round(speedups["spec-on-rtx"], 6) == 3.0


def _two_class_sweep(s: Path, rtx: list[float], h200: list[float]) -> None:
    base = {"algorithm": "NONE", "budget": 16, "topk": 4, "window": 2048}
    for pid, tput, cls, server in [
        ("baseline-rtx", [50.0, 52.0, 48.0], RTX, base),
        ("baseline-h200", [100.0, 104.0, 96.0], H200, base),
        ("b8-on-h200", h200, H200, {**base, "algorithm": "DDTREE", "budget": 8}),
        ("b16-on-rtx", rtx, RTX, {**base, "algorithm": "DDTREE"}),
    ]:
        _rep_point(s, pid, tput, server=server)
        meta = layout.read_json(s / pid / layout.POINT_FILE) or {}
        write_json(s / pid / layout.POINT_FILE, {**meta, "host_class": cls})


def test_winner_across_classes_is_by_the_speedup_over_the_own_class_baseline(
    tmp_path: Path,
) -> None:
    s = tmp_path / "s"
    # Raw throughput: b8-on-h200 (200) beats b16-on-rtx (150); against its own class's
    # baseline b16-on-rtx is the faster configuration (x3 against x2).
    _two_class_sweep(s, rtx=[150.0, 157.0, 143.0], h200=[200.0, 209.0, 191.0])
    out = write_report(s, with_plots=False)
    (cell,) = out["cells"]
    assert cell["relative"] is True
    assert cell["winner"] == "b16-on-rtx" and cell["runner_up"] == "b8-on-h200"
    assert cell["best_class"] == RTX
    assert cell["best_value"] == pytest.approx(3.0, abs=0.01)
    assert cell["runner_up_value"] == pytest.approx(2.0, abs=0.01)
    md = Path(out["report"]).read_text()
    assert f"b16-on-rtx ({RTX})" in md and "x class baseline" in md
    with open(out["summary"], newline="") as f:
        classes = {r["point"]: r["host_class"] for r in csv.DictReader(f)}
    assert classes["b8-on-h200"] == H200


def test_same_speedup_on_two_classes_is_a_tie(tmp_path: Path) -> None:
    s = tmp_path / "s"
    # x3 and x3 by repetition: no difference, whatever the raw figures say.
    _two_class_sweep(s, rtx=[150.0, 156.0, 144.0], h200=[300.0, 312.0, 288.0])
    (cell,) = write_report(s, with_plots=False)["cells"]
    assert cell["winner"] is None and set(cell["tie"]) == {"b16-on-rtx", "b8-on-h200"}


def test_one_class_sweep_compares_raw_values(tmp_path: Path) -> None:
    s = tmp_path / "s"
    _rep_point(
        s,
        "baseline",
        [50.0, 52.0, 48.0],
        server={"algorithm": "NONE", "budget": 16, "topk": 4, "window": 2048},
    )
    _rep_point(s, "spec", [150.0, 157.0, 143.0])
    (cell,) = write_report(s, with_plots=False)["cells"]
    assert cell["relative"] is False and cell["winner"] == "spec"
    assert round(cell["best_value"], 6) == 150.0


def test_several_classes_without_baselines_are_compared_raw_with_a_warning(
    tmp_path: Path,
) -> None:
    s = tmp_path / "s"
    spec = {"algorithm": "DDTREE", "budget": 16, "topk": 4, "window": 2048}
    for pid, tput, cls in [("on-rtx", [150.0, 157.0, 143.0], RTX), ("on-h200", [200.0] * 3, H200)]:
        _rep_point(s, pid, tput, server=spec)
        meta = layout.read_json(s / pid / layout.POINT_FILE) or {}
        write_json(s / pid / layout.POINT_FILE, {**meta, "host_class": cls})
    out = write_report(s, with_plots=False)
    (cell,) = out["cells"]
    assert cell["relative"] is False and cell["mixed_classes"] is True
    assert (
        "WARNING: these points were measured on several hardware classes"
        in Path(out["report"]).read_text()
    )


def test_a_search_over_hosts_of_several_classes_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    with pytest.raises(SweepInputError, match="search=model: the hosts are of 2 hardware"):
        two_class_plan(tmp_path, search="model")
    assert not (tmp_path / "results").exists() and not list(tmp_path.rglob("search.json"))
