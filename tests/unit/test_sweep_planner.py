"""sweep.cli.planner: the online planner every host asks for its next run (`python -m sweep
next`)."""

from __future__ import annotations

import json
import multiprocessing
import time
from pathlib import Path
from typing import Any

import pytest
from test_sweep_fakes import plan_input
from test_sweep_search_rounds import measure

from bench.records import write_json
from sweep import layout
from sweep.__main__ import main
from sweep.cli import planner
from sweep.config.params import SweepInputError
from sweep.store import claims


def start(tmp: Path, hosts: list[str] | None = None, forks: int | None = None, **cli: Any) -> Path:
    out = planner.start(plan_input(tmp, hosts=hosts, sweep_name="s", **cli), forks)
    return Path(out["root"])


def speed(pid: str) -> float:
    """A smooth surface: larger budgets and topks are faster (the baseline slowest)."""
    if pid.startswith("baseline"):
        return 50.0
    _, b, k, w = pid.split("-")[:4]
    return 10.0 * int(b[1:]) + int(k[1:]) + int(w[1:]) / 1024


def drive(sweep_dir: Path, hosts: list[str], fails: frozenset[str] = frozenset()) -> list[Any]:
    """Hosts take turns asking and finish each run at once; returns (host, point, sweep, why)."""
    handed = []
    for _ in range(500):
        moved = False
        for h in hosts:
            a = planner.next_run(sweep_dir, h, lost=set())
            if a["action"] != "run":
                continue
            item = a["item"]
            d = Path(item["sweep"]["dir"])
            if item["id"] in fails:
                (d / item["id"]).mkdir(parents=True, exist_ok=True)
                write_json(
                    d / item["id"] / layout.FAILURE_FILE,
                    {"status": "failed", "timings": {"finished": time.time()}},
                )
            else:
                measure(d, item["id"], speed(item["id"]))
            handed.append((h, item["id"], d.name, a["why"]))
            moved = True
        if not moved:
            return handed
    raise AssertionError("the planner never said done")


def test_a_grid_is_handed_out_once_in_order_then_done(tmp_path: Path) -> None:
    d = start(tmp_path, budget="32,48", topk="2,4")
    handed = drive(d, ["h1"])
    assert [p for _, p, _, _ in handed] == [
        "baseline",
        "ddtree-b32-k2-w2048",
        "ddtree-b48-k2-w2048",
        "ddtree-b32-k4-w2048",
        "ddtree-b48-k4-w2048",
    ]
    assert planner.next_run(d, "h1", lost=set())["action"] == "done"
    assert len(layout.read_sweep(d)["runs"]) == 1  # one invocation, one run entry


def test_a_failed_point_is_not_retried_in_the_invocation_but_by_the_next(tmp_path: Path) -> None:
    d = start(tmp_path, budget="4,8", topk="2")
    handed = drive(d, ["h1", "h2"], fails=frozenset({"ddtree-b4-k2-w2048"}))
    assert sorted(p for _, p, _, _ in handed) == [
        "baseline",
        "ddtree-b4-k2-w2048",
        "ddtree-b8-k2-w2048",
    ]
    time.sleep(0.01)
    d = start(tmp_path, budget="4,8", topk="2")  # a new invocation retries it
    assert [p for _, p, _, _ in drive(d, ["h2"])] == ["ddtree-b4-k2-w2048"]


def test_the_configuration_a_host_serves_comes_first(tmp_path: Path) -> None:
    d = start(tmp_path, budget="4,8", topk="2")
    # h1 served b8 last (a run of an earlier invocation, say): no restart for it
    served = planner.current(d).to_dict()["points"]
    b8 = next(p for p in served if p["id"] == "ddtree-b8-k2-w2048")
    write_json(d / planner.HOSTS_DIR / "h1.json", {"item": {"server": b8["server"]}})
    handed = drive(d, ["h1"])
    assert handed[0][1:] == (
        "ddtree-b8-k2-w2048",
        "s",
        "the configuration this host already serves",
    )
    assert [p for _, p, _, _ in handed[1:]] == ["baseline", "ddtree-b4-k2-w2048"]


def test_a_lost_hosts_point_is_taken_over_and_a_waiting_host_sees_it(tmp_path: Path) -> None:
    d = start(tmp_path, hosts=["a", "b"], budget="4", topk="2", baseline="false")
    got = planner.next_run(d, "b", lost=set())
    assert got["item"]["id"] == "ddtree-b4-k2-w2048"
    waiting = planner.next_run(d, "a", lost=set())
    assert waiting["action"] == "wait" and "1 run(s) in flight" in waiting["why"]
    taken = planner.next_run(d, "a", lost={"b"})
    assert taken["action"] == "run" and taken["item"]["id"] == got["item"]["id"]
    assert taken["why"] == "taken over from b (lost)"
    assert claims.peek(d, got["item"]["id"], "b", ["a", "b"]) == "taken"  # a holds it now


def test_the_lost_hosts_come_from_the_playbooks_callback(tmp_path: Path) -> None:
    lost = tmp_path / "lost"
    lost.mkdir()
    (lost / "host-b").write_text("unreachable\n")
    assert planner.lost_hosts({planner.LOST_DIR_ENV: str(lost)}) == {"host-b"}
    assert planner.lost_hosts({}) == set()


def test_a_search_round_waits_for_the_runs_in_flight(tmp_path: Path) -> None:
    d = start(tmp_path, hosts=["a", "b"], budget="8,16,32", topk="1,2", search="model")
    held = planner.next_run(d, "b", lost=set())  # b holds a run of round 0 and does not finish
    asked = []
    for _ in range(20):  # a runs the rest of round 0, then the round is not complete while b runs
        a = planner.next_run(d, "a", lost=set())
        asked.append(a["action"])
        if a["action"] != "run":
            break
        measure(Path(a["item"]["sweep"]["dir"]), a["item"]["id"], speed(a["item"]["id"]))
    assert asked[-1] == "wait" and "1 run(s) in flight" in a["why"] and len(asked) > 1
    measure(Path(held["item"]["sweep"]["dir"]), held["item"]["id"], speed(held["item"]["id"]))
    assert planner.next_run(d, "a", lost=set())["action"] == "run"


def test_wait_for_run_asks_again_until_the_deadline(tmp_path: Path) -> None:
    d = start(tmp_path, hosts=["a", "b"], budget="4", topk="2", baseline="false")
    planner.next_run(d, "b", lost=set())
    now = [0.0]
    answer = planner.wait_for_run(
        d,
        "a",
        wait_s=10,
        poll_s=2,
        clock=lambda: now[0],
        sleep=lambda s: now.__setitem__(0, now[0] + s),
    )
    assert answer["action"] == "wait" and now[0] == 10.0  # asked at 0, 2, ..., 10: no later


def test_more_hosts_than_forks_is_refused(tmp_path: Path) -> None:
    hosts = [f"h{i}" for i in range(10)]
    with pytest.raises(SweepInputError, match="10 hosts but ansible forks=8: 2 of them"):
        start(tmp_path, hosts=hosts, forks=8, budget="4")
    start(tmp_path, hosts=hosts, forks=10, budget="4")
    assert planner.forks_of_playbook({planner.FORKS_ENV: "16"}) == 16


def test_the_next_command_prints_the_answer_and_when_the_run_started(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = start(tmp_path, budget="4", topk="2")
    before = time.time()
    assert main(["next", str(d), "h1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["action"] == "run" and out["item"]["id"] == "baseline"
    assert out["line"] == "run baseline in s: next in the plan"
    assert before <= out["started"] <= time.time()  # the point's timings count from here
    assert main(["next", str(tmp_path / "nowhere"), "h1"]) == 2
    assert "no sweep started there" in capsys.readouterr().err


def test_the_playbook_asks_often_enough_for_a_search_to_end_in_one_run(tmp_path: Path) -> None:
    """sweep.yml asks `max_runs` times per host: a search plans a round at a time, so the bound
    must cover its whole grid, not its first round (a 6 x 4 x 3 search once stopped after 6
    asks, "search not over")."""
    grid = {"budget": "4,8,16,24,32,48", "topk": "1,2,3,4", "window": "1024,2048,4096"}
    out = planner.start(plan_input(tmp_path, sweep_name="s", search="model", **grid), None)
    handed = drive(Path(out["root"]), ["h1"])
    info = json.loads((Path(out["root"]) / "search.json").read_text())
    assert info["done"] and info["best"] == "ddtree-b48-k4-w4096"
    assert len(handed) <= out["max_runs"]
    # every point of the grid it searches (twins left out) could be reached
    assert out["max_runs"] >= len(info["points"]) > 7


def _host(args: tuple[str, str, int, float]) -> list[str]:
    """One host of the 32: from a common start, ask, 'run' (a little sleep, then the record),
    until done. Lines: "<time> run <point>", "<time> wait", "<time> done"."""
    sweep_dir, host, seed, start_at = args
    planner.current  # noqa: B018 (imported, like what an ask needs, before the common start)
    time.sleep(max(0.0, start_at - time.time()))
    log = []
    for _ in range(400):
        a = planner.next_run(Path(sweep_dir), host, lost=set())
        if a["action"] != "run":
            log.append(f"{time.time():.6f} {a['action']}")
            if a["action"] == "done":
                return log
            time.sleep(0.05)
            continue
        log.append(f"{a['started']:.6f} run {a['item']['id']}")
        time.sleep(0.2 + (seed % 5) * 0.02)
        measure(Path(a["item"]["sweep"]["dir"]), a["item"]["id"], 100.0)
    raise AssertionError(f"{host} never heard done")


def test_32_hosts_asking_at_once_share_the_work_exactly(tmp_path: Path) -> None:
    hosts = [f"h{i:02d}" for i in range(32)]
    # 48 servers (a budget of 90 or more builds a tree as wide as any topk up to 6) + the baseline
    budgets = "90,105,120,135,150,165,180,195"
    d = start(tmp_path, hosts=hosts, forks=32, budget=budgets, topk="1,2,3,4,5,6")
    start_at = time.time() + 8  # after every process has started
    with multiprocessing.get_context("spawn").Pool(32) as pool:
        logs = pool.map(_host, [(str(d), h, i, start_at) for i, h in enumerate(hosts)])
    runs = [(float(t), p) for log in logs for t, kind, *p in map(str.split, log) if kind == "run"]
    points = [p[0] for _, p in runs]
    assert len(points) == len(set(points)) == 49  # no point twice, none lost
    assert all(layout.point_status(d, p) == "complete" for p in points)
    # every host busy while work remains: no host heard wait or done (and so sat idle) before the
    # last run was handed out
    last_handed = max(t for t, _ in runs)
    idle = [float(t) for log in logs for t, kind, *_ in map(str.split, log) if kind != "run"]
    assert min(idle) >= last_handed


def test_points_that_start_the_same_server_run_once_and_are_recorded_as_its_measurement(
    tmp_path: Path,
) -> None:
    from sweep.report.report import write_report

    # the demo's old grid: with a block-16 drafter, DDTREE budgets 4 and 8 are chains
    d = start(tmp_path, budget="4,8", topk="2,4")
    plan = json.loads(json.dumps(planner.current(d).to_dict()))
    same = {p["id"]: p["same_as"] for p in plan["points"] if "same_as" in p}
    assert same == {
        "ddtree-b4-k4-w2048": {
            "point": "ddtree-b4-k2-w2048",
            "why": "DDTREE budget 4 <= the drafter's block size 16 - 1 is a plain chain: topk is "
            "never read",
        },
        "ddtree-b8-k4-w2048": {
            "point": "ddtree-b8-k2-w2048",
            "why": "DDTREE budget 8 <= the drafter's block size 16 - 1 is a plain chain: topk is "
            "never read",
        },
    }
    assert "2 the same server as another" in plan["summary"]
    handed = drive(d, ["h1"])
    assert [p for _, p, _, _ in handed] == ["baseline", "ddtree-b4-k2-w2048", "ddtree-b8-k2-w2048"]
    twin = layout.read_json(d / "ddtree-b4-k4-w2048" / layout.POINT_FILE) or {}
    assert twin["status"] == "complete" and twin["same_as"]["point"] == "ddtree-b4-k2-w2048"
    assert twin["server"]["topk"] == 4
    out = write_report(d, with_plots=False)
    assert out["incomplete"] == []
    md = Path(out["report"]).read_text()
    assert "ddtree-b4-k4-w2048 | complete, the same server as ddtree-b4-k2-w2048: DDTREE" in md
    # identical measurements are one contender: no tie between a point and its twin
    for cell in out["cells"]:
        assert not {cell["best"], cell["runner_up"]} & set(same)


def test_above_the_chain_topk_caps_the_tree_width() -> None:
    from sweep.config.points import Point, same_servers

    points = [Point("DDTREE", b, k, 2048) for b in (16, 32, 48) for k in (2, 3, 4, 6)]
    same = same_servers(points, 16)
    # budget 16: width 2 whatever topk >= 2; 32: width 3; 48: width 4
    assert set(same) == {
        "ddtree-b16-k3-w2048",
        "ddtree-b16-k4-w2048",
        "ddtree-b16-k6-w2048",
        "ddtree-b32-k4-w2048",
        "ddtree-b32-k6-w2048",
        "ddtree-b48-k6-w2048",
    }
    assert same["ddtree-b32-k6-w2048"][0] == "ddtree-b32-k3-w2048"
    assert same_servers([Point("EAGLE3", 4, 2, 2048), Point("EAGLE3", 4, 4, 2048)], 16) == {}


def test_a_stopped_sweep_hands_out_nothing_more_and_says_why(tmp_path: Path) -> None:
    d = start(tmp_path, ["h1", "h2"], budget="32,48", topk="2")
    assert planner.next_run(d, "h1", lost=set())["action"] == "run"
    assert planner.next_run(d, "h2", lost=set())["action"] == "run"
    # the marker sweep_failed.yml writes (stop_on_failure, or a bench that refused the parameters)
    why = "baseline failed on h1: the bench refused the sweep's parameters"
    (d / layout.STOP).write_text(why + "\n")
    answer = planner.next_run(d, "h2", lost=set())
    assert answer["action"] == "done", answer
    assert answer["why"] == f"the sweep was stopped: {why}"
