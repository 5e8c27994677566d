"""sweep/store/failures.py, what a sweep learns, through the planner: a failure that teaches rules
points out of this sweep and, through the store, of the next one; a failure for another cause is
tried once more on another host and rules out nothing."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from test_sweep_fakes import plan_input
from test_sweep_search_rounds import measure
from test_sweep_store import CAPABILITIES

from bench.records import write_json
from sweep import layout
from sweep.cli import planner
from sweep.config.points import Point
from sweep.report import report
from sweep.store import failures, record

GRID = {"budget": "8,16,32", "window": "1024,2048", "topk": "4"}


def start(tmp: Path, name: str = "s", hosts: list[str] | None = None, **cli: Any) -> Path:
    inp = plan_input(tmp, hosts=hosts, sweep_name=name, **{**GRID, **cli})
    inp["server"] = CAPABILITIES
    return Path(planner.start(inp)["root"])


def drive(sweep_dir: Path, hosts: list[str], fails: dict[str, str]) -> list[tuple[str, str]]:
    """Hosts take turns; a point in `fails` fails with that cause (recorded as `python -m sweep
    fail-point` does, then remembered), the others complete. Returns (host, point) handed out."""
    handed: list[tuple[str, str]] = []
    for _ in range(100):
        moved = False
        for h in hosts:
            a = planner.next_run(sweep_dir, h, lost=set())
            if a["action"] != "run":
                continue
            item = a["item"]
            pid = item["id"]
            if pid in fails:
                write_json(
                    sweep_dir / pid / layout.FAILURE_FILE,
                    {
                        "status": "failed",
                        "host": h,
                        "cause": fails[pid],
                        "timings": {"finished": time.time(), "wall_s": 300.0},
                        "attempt": 1,
                    },
                )
                record.remember_failure(sweep_dir, {"point": item, "host": h})
            else:
                measure(sweep_dir, pid, 100.0)
            handed.append((h, pid))
            moved = True
        if not moved:
            return handed
    raise AssertionError("the planner never said done")


def test_out_of_memory_rules_out_the_larger_points_and_a_rerun_starts_none_of_them(
    tmp_path: Path,
) -> None:
    d = start(tmp_path)
    handed = drive(d, ["h1"], {"ddtree-b16-k4-w1024": "out of memory"})
    ran = [p for _, p in handed]
    # smaller first; the failure rules out b32-w1024, b16-w2048 and b32-w2048
    assert ran == ["baseline", "ddtree-b8-k4-w1024", "ddtree-b16-k4-w1024", "ddtree-b8-k4-w2048"]
    ruled = layout.read_sweep(d)["ruled_out"]
    assert sorted(ruled) == ["ddtree-b16-k4-w2048", "ddtree-b32-k4-w1024", "ddtree-b32-k4-w2048"]
    assert ruled["ddtree-b32-k4-w2048"]["by"] == "ddtree-b16-k4-w1024"
    time.sleep(0.01)
    assert drive(start(tmp_path), ["h1"], {}) == []  # the rerun: nothing to start
    assert planner.current(d).summary() == (
        "sweep s: 7 points, 3 complete, 1 failed for good (out of memory or a rejected flag), "
        "3 ruled out by such failures, nothing to run"
    )
    out = report.write_report(d, with_plots=False)
    # answers, not gaps: the playbook does not fail on them or ask for a rerun
    assert out["incomplete"] == []
    assert sorted(out["past_edge"]) == ["ddtree-b16-k4-w1024", *sorted(ruled)]
    md = Path(out["report"]).read_text()
    assert "3 ruled out by a failure" in md
    assert (
        "- ddtree-b32-k4-w2048: not run: at least as large as ddtree-b16-k4-w1024, which ran out "
        "of memory" in md
    )
    assert "cause: out of memory, after 300 s" in md


def test_the_store_remembers_the_verdict_for_the_next_sweep_unless_fresh(tmp_path: Path) -> None:
    drive(start(tmp_path), ["h1"], {"ddtree-b16-k4-w1024": "out of memory"})
    time.sleep(0.01)
    other = [p for _, p in drive(start(tmp_path, "t"), ["h1"], {})]
    assert other == ["baseline", "ddtree-b8-k4-w1024", "ddtree-b8-k4-w2048"]
    assert "ddtree-b16-k4-w1024" in layout.read_sweep(tmp_path / "t")["ruled_out"]
    time.sleep(0.01)
    fresh = [p for _, p in drive(start(tmp_path, "u", fresh="true"), ["h1"], {})]
    assert len(fresh) == 7


def test_a_crash_is_tried_once_more_on_another_host_and_rules_out_nothing(tmp_path: Path) -> None:
    d = start(tmp_path, hosts=["h1", "h2"])
    crashed = "ddtree-b16-k4-w1024"
    handed = drive(d, ["h1", "h2"], {crashed: "crash"})
    tries = [h for h, p in handed if p == crashed]
    assert len(tries) == 2 and tries[0] != tries[1]
    assert len(handed) == 8  # every point, the crashed one twice
    assert not (layout.read_sweep(d) or {}).get("ruled_out")
    out = report.write_report(d, with_plots=False)
    assert out["incomplete"] == [crashed] and out["past_edge"] == []  # a rerun tries it again


def test_a_crash_on_the_only_host_is_not_tried_again_in_the_invocation(tmp_path: Path) -> None:
    d = start(tmp_path)
    handed = drive(d, ["h1"], {"ddtree-b16-k4-w1024": "readiness timeout"})
    assert [p for _, p in handed].count("ddtree-b16-k4-w1024") == 1
    assert len(handed) == 7


def test_a_model_search_through_the_planner_never_starts_a_point_its_failures_rule_out(
    tmp_path: Path,
) -> None:
    grid = {"budget": "8,16,32,48", "topk": "1,2,4", "window": "1024,2048,4096"}
    inp = plan_input(tmp_path, sweep_name="m", search="model", baseline="false", **grid)
    inp["server"] = CAPABILITIES
    d = Path(planner.start(inp)["root"])

    def too_large(pid: str) -> bool:
        _, b, _k, w = pid.split("-")[:4]
        return int(b[1:]) * int(w[1:]) >= 32 * 2048

    fails = {}
    handed: list[str] = []
    for _ in range(80):
        a = planner.next_run(d, "h1", lost=set())
        if a["action"] != "run":
            break
        pid = a["item"]["id"]
        handed.append(pid)
        if too_large(pid):
            fails[pid] = "out of memory"
            write_json(
                d / pid / layout.FAILURE_FILE,
                {
                    "status": "failed",
                    "host": "h1",
                    "cause": "out of memory",
                    "timings": {"finished": time.time(), "wall_s": 300.0},
                },
            )
        else:
            _, b, k, w = pid.split("-")[:4]
            measure(d, pid, 100.0 + int(b[1:]) + int(k[1:]) + int(w[1:]) / 512)
    info = layout.read_json(d / "search.json") or {}
    assert info.get("done"), info
    assert fails  # the search met the edge

    def point(pid: str) -> Point:
        _, b, k, w = pid.split("-")[:4]
        return Point("DDTREE", int(b[1:]), int(k[1:]), int(w[1:]))

    failed = [pid for pid in handed if pid in fails]
    for i, pid in enumerate(failed):
        assert not any(failures.at_least_as_large(point(pid), point(e)) for e in failed[:i])
    ruled = [
        pid
        for line in info["rounds"]
        if line.startswith("ruled out (by the failure of ")
        for pid in line.split("never run: ", 1)[1].split(", ")
    ]
    assert ruled and not set(ruled) & set(handed), info["rounds"]
    assert "failed" in info["cost"]["line"]


def test_a_model_search_keeps_its_rounds_as_planned_when_its_failures_come_in(
    tmp_path: Path,
) -> None:
    """Two hosts, failures remembered in the store as `fail-point` does: the replay at the end
    gives round 0 as it was handed out, not a design redone with this sweep's own failures
    (read back from the store) or split by a later round's run taken for an orphan."""
    grid = {"budget": "32,48,64,96", "topk": "1,4", "window": "1024,2048"}
    inp = plan_input(tmp_path, sweep_name="m", search="model", baseline="false", **grid)
    inp["server"] = CAPABILITIES
    d = Path(planner.start(inp)["root"])
    first = [i["id"] for i in planner.current(d).to_dict()["queue"]]

    def size(pid: str) -> int:
        _, b, k, w = pid.split("-")[:4]
        return int(b[1:]) * int(w[1:]) * (2 if k == "k4" else 1)

    fails = {
        f"ddtree-b{b}-k{k}-w{w}": "out of memory"
        for b in (32, 48, 64, 96)
        for k in (1, 4)
        for w in (1024, 2048)
    }
    fails = {
        pid: c for pid, c in fails.items() if size(pid) >= 96 * 1024 * 2 or size(pid) >= 48 * 2048
    }
    handed = [p for _, p in drive(d, ["h1", "h2"], fails)]
    assert set(handed) & set(fails)  # the search met the edge
    info = layout.read_json(d / "search.json") or {}
    round0 = info["rounds"][0].split(": ", 1)[1].split(" (")[0].split(", ")
    assert round0 == [pid for pid in first if pid in handed]
    assert handed[: len(round0)] == round0
