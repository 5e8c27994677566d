"""Hosts of several hardware classes in one sweep: a baseline per class, run only there; each
measurement recorded (and reused) under the class of the host that measured it; speed-ups
against the own class's baseline."""

from __future__ import annotations

import copy
import csv
from pathlib import Path
from typing import Any

from test_sweep_fakes import archive, plan_input
from test_sweep_report import _rep_point
from test_sweep_store import CAPABILITIES

from bench.records import write_json
from sweep import claims, layout, plan, record, store
from sweep.report import write_report

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
