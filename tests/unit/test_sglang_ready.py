"""library/sglang_ready.py: every readiness branch, without a host.

The module is driven through AnsibleModule (patch_module_args, exit_json/fail_json raising). The
server side is real HTTP on 127.0.0.1; systemd and /proc are a FakeHost whose timeline runs on a
fake clock, so "fails at once" and "returns only after the new server is ready" are checked on
deterministic fake time, not on wall-clock timing.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from project_module_utils import module_utils
from ready_fakes import UNIT, FakeHost, FakeSystemd, Run, ScriptedServer, load_module, run_module

m = load_module()
port_owner = module_utils("sglang_port_owner")
systemd = module_utils("sglang_systemd")
expectations = module_utils("sglang_expect")
journal = module_utils("sglang_journal")
server_process = module_utils("sglang_server_process")
sglang_secrets = module_utils("sglang_secrets")
unit_watch = module_utils("sglang_unit_watch")

SECRET = "sk-Zq81-never-print-me"
OLD_CONFIG: dict[str, Any] = {
    "version": "0.5.23",
    "model_path": "/models/target",
    "tp_size": 1,
    "speculative_algorithm": "DFLASH",
    "speculative_num_draft_tokens": 8,
    "speculative_draft_window_size": None,
    "enable_metrics": False,
    "api_key": SECRET,
    "launch_command": f"python3 -m sglang.launch_server --api-key {SECRET} --port 30000",
    "internal_states": [{"avg_spec_accept_length": 3.5}],
}
NEW_CONFIG = dict(OLD_CONFIG, speculative_num_draft_tokens=16, speculative_draft_window_size=2048)
# Strings on purpose: values templated by Ansible often arrive as strings.
EXPECT = {"speculative_num_draft_tokens": "16", "speculative_draft_window_size": "2048"}
TRACEBACK = [
    "[2026-05-01 10:00:00] Load weight begin.",
    "Traceback (most recent call last):",
    '  File "/opt/sglang/srt/model_loader.py", line 120, in load',
    "    raise ValueError(msg)",
    "ValueError: drafter block size 16 does not match --speculative-num-draft-tokens 8",
]


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    srv = ScriptedServer()
    yield srv
    srv.close()


@pytest.fixture
def host(tmp_path: Path, server: ScriptedServer) -> FakeHost:
    return FakeHost(tmp_path, server.port, server.behaviour)


# ---------------------------------------------------------------------------------------------
# Scenario building blocks
# ---------------------------------------------------------------------------------------------


def old_server_draining(host: FakeHost, exits_at: float, n_restarts: int = 0) -> None:
    """PID 100 (launcher) with child 101 on the port, SIGTERMed: still serves the OLD config."""
    host.spawn(100)
    host.spawn(101, ppid=100)
    host.listen(101, inode=7001)
    host.set_unit(
        MainPID=100,
        InvocationID="old-inv",
        ActiveState="deactivating",
        SubState="stop-sigterm",
        NRestarts=n_restarts,
    )
    host.http.server_info = OLD_CONFIG
    # Draining: health and /ready 503, /generate still served.
    host.http.health_generate = host.http.health = host.http.ready = 503

    def exited() -> None:
        host.kill(100, 101)
        host.set_unit(MainPID=0, ActiveState="inactive", SubState="dead")

    host.at(exits_at, exited)


def new_server(
    host: FakeHost,
    starts: float,
    binds: float | None = None,
    ready: float | None = None,
    pid: int = 200,
    config: dict[str, Any] | None = None,
    invocation: str = "new-inv",
) -> None:
    """The new launcher starts, its child loads, binds the port (warm-up), then is ready."""

    def start() -> None:
        host.spawn(pid)
        host.set_unit(
            MainPID=pid, InvocationID=invocation, ActiveState="active", SubState="running"
        )

    def bind() -> None:
        host.spawn(pid + 1, ppid=pid)
        host.listen(pid + 1, inode=9000 + pid)
        host.http.server_info = NEW_CONFIG if config is None else config
        host.http.health_generate = host.http.health = host.http.ready = 503

    def warm() -> None:
        host.http.health_generate = host.http.health = host.http.ready = 200

    host.at(starts, start)
    if binds is not None:
        host.at(binds, bind)
    if ready is not None:
        host.at(ready, warm)


def restart_args(server: ScriptedServer, **extra: Any) -> dict[str, Any]:
    return {
        "url": server.url,
        "api_key": SECRET,
        "unit": UNIT,
        "previous_pid": 100,
        "previous_invocation": "old-inv",
        "expect": EXPECT,
        "require_speculation": True,
        "timeout": 60,
        **extra,
    }


def crash(host: FakeHost, pid: int, status: int, sub_state: str = "failed") -> None:
    host.kill(pid, pid + 1)
    host.set_unit(
        MainPID=0,
        ActiveState="failed" if sub_state == "failed" else "activating",
        SubState=sub_state,
        Result="exit-code",
        ExecMainStatus=status,
    )


def assert_no_secret(run: Run) -> None:
    assert SECRET not in json.dumps(run.result, default=str)


# ---------------------------------------------------------------------------------------------
# Success paths
# ---------------------------------------------------------------------------------------------


def test_stale_draining_server_is_never_ready_until_the_new_one_is(
    host: FakeHost, server: ScriptedServer
) -> None:
    old_server_draining(host, exits_at=3.0)
    new_server(host, starts=3.05, binds=6.0, ready=8.0)

    run = run_module(restart_args(server), host, server)

    assert not run.failed, run.msg
    r = run.result
    assert r["ready"] is True and r["changed"] is False
    assert (r["pid"], r["invocation_id"]) == (200, "new-inv")
    assert r["restarted_from"] == {"pid": 100, "invocation_id": "old-inv"}
    phases = r["phases"]
    assert 3.05 <= phases["old_gone"] <= phases["port_bound"]
    assert 6.0 <= phases["port_bound"] <= phases["config_matched"] <= phases["healthy"]
    assert 8.0 <= phases["healthy"] <= phases["first_generation"] <= r["elapsed"]
    # Detection lag on the fake clock is bounded by max_poll_interval (default 0.5 s).
    assert r["elapsed"] - 8.0 <= 0.5 + 1e-9
    assert r["server_info"]["speculative_num_draft_tokens"] == 16
    assert r["probe"] == {
        "latency": 0.0,
        "completion_tokens": 8,
        "spec_verify_ct": 2,
        "spec_accept_length": 4.0,
    }
    # The draining process (old config, still generating) was never even asked.
    assert server.requests and min(req.at for req in server.requests) >= 6.0
    assert server.paths("POST") == ["/generate"]
    # Polling backs off, and starts again from 0.1 s after progress (port bound at t=6).
    assert max(run.clock.sleeps) <= 0.5
    assert run.clock.sleeps[:3] == pytest.approx([0.1, 0.15, 0.225])
    t, after_progress = 0.0, None
    for dt in run.clock.sleeps:
        if t >= 6.0 and after_progress is None:
            after_progress = dt
        t += dt
    assert after_progress == pytest.approx(0.1)


def test_probe_is_a_real_generation_with_the_given_prompt_and_key(
    host: FakeHost, server: ScriptedServer
) -> None:
    new_server(host, starts=0.0, binds=0.0, ready=0.0)
    probe = {"prompt": "def fibonacci(n):", "max_new_tokens": 3}

    run = run_module(restart_args(server, previous_pid=None, probe=probe), host, server)

    assert not run.failed, run.msg
    (post,) = [r for r in server.requests if r.method == "POST"]
    assert json.loads(post.body) == {
        "text": "def fibonacci(n):",
        "sampling_params": {"max_new_tokens": 3, "temperature": 0},
    }
    assert all(r.headers.get("Authorization") == f"Bearer {SECRET}" for r in server.requests)


def test_url_only_mode_waits_for_the_new_config(host: FakeHost, server: ScriptedServer) -> None:
    # Nastier than SGLang: the stale process even says healthy. Only the config tells them apart.
    server.behaviour.server_info = OLD_CONFIG
    host.at(4.0, lambda: setattr(server.behaviour, "server_info", NEW_CONFIG))

    run = run_module({"url": server.url, "expect": EXPECT}, host, server)

    assert not run.failed, run.msg
    r = run.result
    assert r["pid"] is None and r["invocation_id"] is None and "unit" not in r
    assert r["restarted_from"] is None
    assert r["phases"]["old_gone"] is None and r["phases"]["port_bound"] is None
    assert r["phases"]["config_matched"] >= 4.0
    assert run.systemd.shows == 0
    assert len(server.paths("POST")) == 1  # no probe while the config was stale


def test_health_and_server_info_fall_back_to_older_endpoints(
    host: FakeHost, server: ScriptedServer
) -> None:
    server.behaviour.server_info = NEW_CONFIG
    server.behaviour.legacy_server_info_only = True
    server.behaviour.health_generate = None  # a build without /health_generate: 404

    run = run_module({"url": server.url, "expect": EXPECT}, host, server)

    assert not run.failed, run.msg
    assert run.result["health_endpoint"] == "/health"
    assert run.result["server_info_endpoint"] == "/get_server_info"
    assert {"/ready", "/health_generate", "/health", "/get_server_info"} <= set(server.paths())


def test_auto_health_check_prefers_ready_and_skips_the_slow_health_generate(
    host: FakeHost, server: ScriptedServer
) -> None:
    new_server(host, starts=0.0, binds=1.0, ready=3.0)

    run = run_module(restart_args(server, previous_pid=None), host, server)

    assert not run.failed, run.msg
    assert run.result["health_endpoint"] == "/ready"
    assert run.result["phases"]["healthy"] >= 3.0  # /ready said 503 during warm-up
    assert "/health_generate" not in server.paths()


def test_health_check_health_generate_is_honoured(host: FakeHost, server: ScriptedServer) -> None:
    new_server(host, starts=0.0, binds=1.0, ready=3.0)
    args = restart_args(server, previous_pid=None, health_check="health_generate")

    run = run_module(args, host, server)

    assert not run.failed, run.msg
    assert run.result["health_endpoint"] == "/health_generate"
    assert run.result["phases"]["healthy"] >= 3.0
    assert "/ready" not in server.paths()


def test_health_503_is_not_healthy_even_without_health_generate(
    host: FakeHost, server: ScriptedServer
) -> None:
    server.behaviour.server_info = NEW_CONFIG
    server.behaviour.health_generate = None
    server.behaviour.health = 503

    run = run_module({"url": server.url, "timeout": 2}, host, server)

    assert run.failed
    assert run.result["unmet"] == "healthy"
    assert "GET /health: HTTP 503" in run.msg


def test_nrestarts_reset_by_the_manual_restart_is_not_a_crash(
    host: FakeHost, server: ScriptedServer
) -> None:
    old_server_draining(host, exits_at=1.0, n_restarts=4)
    new_server(host, starts=1.05, binds=2.0, ready=2.0)
    host.at(1.05, lambda: host.set_unit(NRestarts=0))

    run = run_module(restart_args(server), host, server)

    assert not run.failed, run.msg
    assert run.result["unit_state"]["NRestarts"] == 0


@pytest.mark.parametrize("control_group", ["", "/system.slice/elsewhere.service"])
def test_port_owner_falls_back_to_main_pid_descendants_without_a_cgroup(
    host: FakeHost, server: ScriptedServer, control_group: str
) -> None:
    new_server(host, starts=0.0, binds=0.0, ready=0.0)
    host.set_unit(ControlGroup=control_group)
    (host.cgroup_dir / "cgroup.procs").unlink()

    run = run_module(restart_args(server, previous_pid=None), host, server)

    assert not run.failed, run.msg
    assert run.result["phases"]["port_bound"] == 0.0


def test_speculation_not_required_accepts_a_plain_generation(
    host: FakeHost, server: ScriptedServer
) -> None:
    server.behaviour.server_info = NEW_CONFIG
    server.behaviour.generate_meta = {"completion_tokens": 5}

    run = run_module({"url": server.url}, host, server)

    assert not run.failed, run.msg
    assert run.result["probe"]["spec_verify_ct"] is None
    assert run.result["probe"]["completion_tokens"] == 5


# ---------------------------------------------------------------------------------------------
# Crashes: fail at once, with the journal
# ---------------------------------------------------------------------------------------------


def test_crash_while_loading_fails_at_once_with_the_traceback(
    host: FakeHost, server: ScriptedServer
) -> None:
    old_server_draining(host, exits_at=1.0)
    new_server(host, starts=1.05)
    host.journal = TRACEBACK
    host.at(3.0, lambda: crash(host, 200, status=1))

    run = run_module(restart_args(server, timeout=1800), host, server)

    assert run.failed
    assert run.clock.now <= 3.0 + 0.5  # the next poll, not the 1800 s time-out
    assert "sglang.service failed" in run.msg and "Result=exit-code" in run.msg
    assert "likely cause: the server raised an exception: ValueError: drafter block" in run.msg
    assert TRACEBACK[-1] in run.msg.splitlines()  # the raw journal lines are there too
    assert run.result["journal"] == TRACEBACK
    assert (run.result["cause"], run.result["cause_detail"]) == ("crash", TRACEBACK[-1])
    assert run.systemd.journal_calls[-1][:2] == (UNIT, ["new-inv"])
    assert server.paths("POST") == []


def test_wrong_flag_for_the_dialect_fails_at_once_in_auto_restart(
    host: FakeHost, server: ScriptedServer
) -> None:
    old_server_draining(host, exits_at=1.0)
    new_server(host, starts=1.05)
    host.at(1.06, lambda: crash(host, 200, status=2, sub_state="auto-restart"))
    host.journal = [
        "usage: sglang_emulator [-h] --model-path MODEL_PATH ...",
        "sglang_emulator: error: unrecognized arguments: "
        "--speculative-dflash-draft-window-size 2048",
    ]

    run = run_module(restart_args(server), host, server)

    assert run.failed
    assert run.clock.now <= 1.06 + 0.5
    assert "SubState=auto-restart" in run.msg and "ExecMainStatus=2" in run.msg
    assert "likely cause: SGLang rejected a flag" in run.msg
    assert "unrecognized arguments: --speculative-dflash-draft-window-size 2048" in run.msg
    assert run.result["cause"] == "rejected flag"
    assert run.result["cause_flags"] == ["--speculative-dflash-draft-window-size"]


def test_the_real_servers_out_of_memory_is_the_cause_not_its_traceback(
    host: FakeHost, server: ScriptedServer
) -> None:
    """The real SGLang 0.5.23 on CPU with --max-total-tokens 0: its scheduler raises after the
    weights load (tests/fixtures/real_sglang/0.5.23/failures.json) and the unit fails."""
    real = json.loads(
        (Path(__file__).parents[1] / "fixtures/real_sglang/0.5.23/failures.json").read_text()
    )
    old_server_draining(host, exits_at=1.0)
    new_server(host, starts=1.05)
    host.journal = real["out_of_memory"][-40:]
    host.at(3.0, lambda: crash(host, 200, status=1))

    run = run_module(restart_args(server, timeout=1800), host, server)

    assert run.failed and run.clock.now <= 3.5
    not_enough = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
    assert run.result["cause"] == "out of memory"
    assert run.result["cause_detail"] == not_enough
    assert run.result["cause_flags"] == []
    assert f"likely cause: out of memory: {not_enough}" in run.msg.splitlines()


def test_crash_loop_rising_nrestarts_fails(host: FakeHost, server: ScriptedServer) -> None:
    new_server(host, starts=0.0)  # no previous_* given: the first reading is the baseline

    def restarted_by_systemd() -> None:
        host.kill(200)
        host.spawn(300)
        host.set_unit(MainPID=300, InvocationID="inv-2", NRestarts=1)

    host.at(2.0, restarted_by_systemd)

    run = run_module({"url": server.url, "unit": UNIT}, host, server)

    assert run.failed
    assert "crash-looping: NRestarts rose from 0 to 1" in run.msg
    assert run.clock.now <= 2.5


def test_crash_after_the_manual_restart_reset_nrestarts_is_a_crash_loop(
    host: FakeHost, server: ScriptedServer
) -> None:
    old_server_draining(host, exits_at=1.0, n_restarts=4)
    new_server(host, starts=1.05)
    host.at(1.05, lambda: host.set_unit(NRestarts=0))

    def crashed_and_restarted() -> None:
        host.kill(200)
        host.spawn(300)
        host.set_unit(MainPID=300, InvocationID="inv-3", NRestarts=1)

    host.at(3.0, crashed_and_restarted)

    run = run_module(restart_args(server), host, server)

    assert run.failed
    assert "crash-looping: NRestarts rose from 0 to 1" in run.msg  # 1 is still below the first 4


def test_main_pid_changing_after_it_was_seen_fails(host: FakeHost, server: ScriptedServer) -> None:
    old_server_draining(host, exits_at=0.5)
    new_server(host, starts=0.6)

    def restarted_behind_our_back() -> None:
        host.spawn(300)
        host.set_unit(MainPID=300)

    host.at(2.0, restarted_behind_our_back)

    run = run_module(restart_args(server), host, server)

    assert run.failed
    assert "main PID changed from 200 to 300" in run.msg


@pytest.mark.parametrize("how", ["gone", "zombie"])
def test_main_process_gone_while_systemd_still_names_it_fails(
    host: FakeHost, server: ScriptedServer, how: str
) -> None:
    new_server(host, starts=0.0)
    host.at(1.0, lambda: host.kill(200) if how == "gone" else host.zombie(200))

    run = run_module(restart_args(server), host, server)

    assert run.failed
    assert f"main process 200 {'is gone' if how == 'gone' else 'is a zombie'}" in run.msg


def test_main_pid_changing_during_the_probe_is_not_ready(
    host: FakeHost, server: ScriptedServer
) -> None:
    new_server(host, starts=0.0, binds=0.0, ready=0.0)
    server.behaviour.on_generate = lambda: host.set_unit(MainPID=300)

    run = run_module(restart_args(server, previous_pid=None), host, server)

    assert run.failed
    assert run.result["ready"] is False
    assert "main PID changed from 200 to 300" in run.msg


def test_new_run_exiting_cleanly_is_reported(host: FakeHost, server: ScriptedServer) -> None:
    old_server_draining(host, exits_at=0.5)
    host.at(0.6, lambda: host.set_unit(InvocationID="new-inv", ActiveState="inactive"))

    run = run_module(restart_args(server), host, server)

    assert run.failed
    assert "the new server exited" in run.msg


def test_unit_that_nobody_restarts_fails_after_a_grace_not_the_timeout(
    host: FakeHost, server: ScriptedServer
) -> None:
    host.set_unit(InvocationID="old-inv", ActiveState="failed", SubState="failed")

    run = run_module(restart_args(server, previous_pid=0), host, server)

    assert run.failed
    assert "stays failed and nothing starts it" in run.msg
    assert unit_watch.STOPPED_GRACE <= run.clock.now <= unit_watch.STOPPED_GRACE + 1


def test_start_limit_hit_fails_at_once(host: FakeHost, server: ScriptedServer) -> None:
    old_server_draining(host, exits_at=1.0)
    # The start job is refused: no new invocation, so InvocationID stays the old one.
    host.at(
        1.0,
        lambda: host.set_unit(ActiveState="failed", SubState="failed", Result="start-limit-hit"),
    )

    run = run_module(restart_args(server), host, server)

    assert run.failed
    assert "start limit hit" in run.msg and "reset-failed" in run.msg
    assert run.clock.now <= 1.5


def test_unknown_unit_fails_at_once(host: FakeHost, server: ScriptedServer) -> None:
    host.set_unit(LoadState="not-found")

    run = run_module({"url": server.url, "unit": "nope.service"}, host, server)

    assert run.failed and "not found" in run.msg and run.clock.now == 0.0


# ---------------------------------------------------------------------------------------------
# The port
# ---------------------------------------------------------------------------------------------


def test_port_held_by_a_foreign_process_is_never_ready(
    host: FakeHost, server: ScriptedServer
) -> None:
    new_server(host, starts=0.0)
    # An orphan of an old run, outside the unit's cgroup, holds the port and answers perfectly.
    host.spawn(999, cmdline=f"python3 -m sglang.launch_server --api-key {SECRET}", in_unit=False)
    host.listen(999, inode=8001)
    server.behaviour.server_info = NEW_CONFIG

    run = run_module(restart_args(server, timeout=5), host, server)

    assert run.failed
    assert run.result["unmet"] == "port_bound"
    assert "timed out after 5 s" in run.msg
    assert "held by a process outside the unit: pid 999 (python3 -m sglang.launch_server" in run.msg
    assert server.requests == []  # nothing it said could count
    assert_no_secret(run)


def test_bind_failure_reports_address_in_use(host: FakeHost, server: ScriptedServer) -> None:
    new_server(host, starts=0.0)
    host.spawn(999, in_unit=False)
    host.listen(999, inode=8001)
    host.journal = ["OSError: [Errno 98] error while attempting to bind: address already in use"]
    host.at(4.0, lambda: crash(host, 200, status=1))

    run = run_module(restart_args(server), host, server)

    assert run.failed
    assert "likely cause: the port is already in use by another process" in run.msg
    assert run.result["cause"] == "crash"
    assert run.clock.now <= 4.5


def test_unreadable_fds_fail_with_a_become_hint(
    host: FakeHost, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    new_server(host, starts=0.0, binds=0.0)

    def denied(self: Any, pid: int) -> set[int]:
        raise port_owner.ProcPermissionError(f"cannot read /proc/{pid}/fd: permission denied")

    monkeypatch.setattr(m.ProcReader, "socket_inodes", denied)

    run = run_module(restart_args(server, previous_pid=None), host, server)

    assert run.failed and "become" in run.msg and run.clock.now == 0.0


# ---------------------------------------------------------------------------------------------
# Time-outs say what was unmet
# ---------------------------------------------------------------------------------------------


def test_timeout_names_the_unmet_condition_and_the_last_observation(
    host: FakeHost, server: ScriptedServer
) -> None:
    new_server(host, starts=0.0, binds=0.0, ready=0.0, config=OLD_CONFIG)
    host.journal = ["[2026-05-01 10:00:00] The server is fired up and ready to roll!"]

    run = run_module(restart_args(server, previous_pid=None, timeout=3), host, server)

    assert run.failed
    assert run.result["unmet"] == "config_matched"
    assert "condition 'config_matched' still unmet" in run.msg
    assert "speculative_num_draft_tokens is 8, expected '16'" in run.msg
    assert "The server is fired up" in run.msg  # journal lines come with a time-out too
    assert (run.result["cause"], run.result["cause_detail"]) == ("readiness timeout", "")
    assert 3.0 <= run.result["elapsed"] <= 3.0 + 1e-6


def test_timeout_while_refused_backs_off_to_the_cap(tmp_path: Path) -> None:
    closed = ScriptedServer(listening=False)  # bound, not listening: connection refused
    try:
        host = FakeHost(tmp_path, closed.port, closed.behaviour)
        run = run_module({"url": closed.url, "timeout": 5, "max_poll_interval": 0.4}, host, closed)
    finally:
        closed.close()

    assert run.failed
    assert "GET /server_info: connection refused" in run.msg
    assert run.clock.sleeps[:5] == pytest.approx([0.1, 0.15, 0.225, 0.3375, 0.4])
    assert max(run.clock.sleeps) == pytest.approx(0.4)
    assert sum(run.clock.sleeps) == pytest.approx(5.0)


def test_require_speculation_rejects_a_generation_without_it(
    host: FakeHost, server: ScriptedServer
) -> None:
    server.behaviour.server_info = NEW_CONFIG
    server.behaviour.generate_meta = {"completion_tokens": 8}

    run = run_module({"url": server.url, "require_speculation": True, "timeout": 1}, host, server)

    assert run.failed
    assert run.result["unmet"] == "first_generation"
    assert "no speculation (spec_verify_ct=None)" in run.msg


def test_generation_without_tokens_is_not_ready(host: FakeHost, server: ScriptedServer) -> None:
    server.behaviour.server_info = NEW_CONFIG
    server.behaviour.generate_meta = {"completion_tokens": 0, "spec_verify_ct": 0}

    run = run_module({"url": server.url, "timeout": 1}, host, server)

    assert run.failed and "returned no tokens" in run.msg


def test_probe_timeout_is_honoured(host: FakeHost, server: ScriptedServer) -> None:
    server.behaviour.server_info = NEW_CONFIG
    server.behaviour.generate_delay = 1.5
    probe = {"prompt": "hi", "timeout": 0.5}

    run = run_module({"url": server.url, "timeout": 0, "probe": probe}, host, server)

    assert run.failed
    assert "POST /generate: no answer within 0.5 s" in run.msg


# ---------------------------------------------------------------------------------------------
# Check mode
# ---------------------------------------------------------------------------------------------


def test_check_mode_reads_once_and_never_generates(host: FakeHost, server: ScriptedServer) -> None:
    new_server(host, starts=0.0, binds=0.0, ready=0.0)

    run = run_module(
        restart_args(server, previous_pid=None, previous_invocation=None), host, server, True
    )

    assert not run.failed, run.msg
    assert run.result["ready"] is True and run.result["changed"] is False
    assert run.clock.sleeps == []
    assert server.paths("POST") == []
    assert "/health_generate" not in server.paths() and run.result["health_endpoint"] == "/ready"
    assert run.result["pid"] == 200 and "probe" not in run.result


def test_check_mode_uses_plain_health_instead_of_health_generate(
    host: FakeHost, server: ScriptedServer
) -> None:
    server.behaviour.server_info = NEW_CONFIG

    run = run_module({"url": server.url, "health_check": "health_generate"}, host, server, True)

    assert not run.failed and run.result["ready"] is True
    assert server.paths() == ["/server_info", "/health"]


def test_check_mode_reports_not_ready_without_failing(
    host: FakeHost, server: ScriptedServer
) -> None:
    old_server_draining(host, exits_at=100.0)

    run = run_module(restart_args(server), host, server, check_mode=True)

    assert not run.failed
    assert run.result["ready"] is False
    assert run.result["unmet"] == "old_gone"
    assert "main PID 100 is still the previous server" in run.result["detail"]
    assert run.clock.sleeps == [] and server.requests == []


def test_check_mode_reports_a_failed_unit_without_failing(
    host: FakeHost, server: ScriptedServer
) -> None:
    host.set_unit(ActiveState="failed", SubState="failed", Result="exit-code")

    run = run_module({"url": server.url, "unit": UNIT}, host, server, check_mode=True)

    assert not run.failed
    assert run.result["ready"] is False and run.result["unmet"] == "unit_state"
    assert "failed" in run.result["detail"]


# ---------------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"timeout": -1}, "timeout must be >= 0 seconds, got -1"),
        ({"timeout": "soon"}, "timeout"),
        ({"probe": {"max_new_tokens": 4}}, "missing required arguments: prompt"),
        ({"probe": {"prompt": "  "}}, "probe.prompt must be a non-empty string"),
        ({"probe": {"prompt": "x", "max_new_tokens": 0}}, "max_new_tokens must be >= 1, got 0"),
        ({"probe": {"prompt": "x", "timeout": 0}}, "probe.timeout must be > 0, got 0"),
        ({"url": "ftp://127.0.0.1:30000"}, "'ftp://127.0.0.1:30000'"),
        ({"url": "127.0.0.1:30000"}, "http:// or https://"),
        ({"url": "http://:30000"}, "with a host"),
        ({"url": "http://u:pw@127.0.0.1:1"}, "must not carry credentials"),
        ({"previous_pid": 5}, "need unit"),
        ({"unit": UNIT, "previous_pid": -3}, "previous_pid must be >= 0, got -3"),
        ({"max_poll_interval": 0}, "max_poll_interval must be > 0"),
        ({"expect": [1, 2]}, "expect"),
        ({"bogus": 1}, "bogus"),
        ({"health_check": "live"}, "health_check"),
    ],
)
def test_bad_arguments_fail_before_any_request(
    host: FakeHost, server: ScriptedServer, args: dict[str, Any], message: str
) -> None:
    run = run_module({"url": server.url, **args}, host, server)

    assert run.failed
    assert message in run.msg
    assert server.requests == [] and run.systemd.shows == 0


# ---------------------------------------------------------------------------------------------
# The API key never shows
# ---------------------------------------------------------------------------------------------


def test_api_key_absent_from_success_result(host: FakeHost, server: ScriptedServer) -> None:
    new_server(host, starts=0.0, binds=0.0, ready=0.0)
    expect = dict(EXPECT, launch_command=NEW_CONFIG["launch_command"], api_key=SECRET)

    run = run_module(restart_args(server, previous_pid=None, expect=expect), host, server)

    assert not run.failed, run.msg
    info = run.result["server_info"]
    assert info["api_key"] == "********"
    assert info["launch_command"].endswith("--api-key ******** --port 30000")
    assert_no_secret(run)


def test_api_key_absent_from_failure_messages(host: FakeHost, server: ScriptedServer) -> None:
    new_server(host, starts=0.0)
    # Even a journal that leaked it (a launcher that failed to redact) must not carry it further.
    host.journal = [f"server_args=ServerArgs(api_key='{SECRET}')", *TRACEBACK]
    host.at(1.0, lambda: crash(host, 200, status=1))

    run = run_module(restart_args(server), host, server)

    assert run.failed
    assert "api_key='********'" in run.msg
    assert_no_secret(run)


def test_api_key_is_declared_no_log() -> None:
    assert m.ARGUMENT_SPEC["api_key"]["no_log"] is True


# ---------------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("actual", "expected", "match"),
    [
        (16, "16", True),
        (16, 16.0, True),
        (0.85, "0.85", True),
        (True, "true", True),
        (False, "no", True),
        (None, "null", True),
        ("DFLASH", "DFLASH", True),
        (16, "8", False),
        (True, 1, False),
        (1, "true", False),
        ("DFLASH", "EAGLE3", False),
        (None, 0, False),
        ([1, 2], ["1", "2"], True),
        ({"a": 1}, {"a": "1"}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
    ],
)
def test_values_match_coerces_types(actual: Any, expected: Any, match: bool) -> None:
    assert expectations.values_match(actual, expected) is match


def test_lookup_follows_dotted_paths_and_list_indexes() -> None:
    info = {"a": {"b": 3}, "x.y": 1, "internal_states": [{"avg_spec_accept_length": 2.5}]}
    assert expectations.lookup(info, "a.b") == 3
    assert expectations.lookup(info, "x.y") == 1
    assert expectations.lookup(info, "internal_states.0.avg_spec_accept_length") == 2.5
    assert expectations.lookup(info, "a.c") is expectations._MISSING
    assert expectations.lookup(info, "internal_states.1.x") is expectations._MISSING
    assert expectations.expect_mismatches(info, {"a.b": "3", "a.c": 1}) == [
        "a.c is missing, expected 1"
    ]


@pytest.mark.parametrize(
    ("command", "redacted"),
    [
        ("x --api-key abc --port 1", "x --api-key ******** --port 1"),
        ("x --api-key=abc --port 1", "x --api-key=******** --port 1"),
        ("x --admin-api-key abc", "x --admin-api-key ********"),
        ("x --port 1", "x --port 1"),
    ],
)
def test_redact_command_line(command: str, redacted: str) -> None:
    assert sglang_secrets.redact_command_line(command) == redacted


def test_parse_proc_net_tcp_keeps_only_listeners_on_the_port() -> None:
    text = (
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
        "timeout inode\n"
        "   0: 00000000:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000  0 0 111 1\n"
        "   1: 0100007F:7530 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000  0 0 222 1\n"
        "   2: 00000000:7531 00000000:0000 0A 00000000:00000000 00:00000000 00000000  0 0 333 1\n"
        "   3: 00000000000000000000000000000000:7530 00000000000000000000000000000000:0000 0A "
        "00000000:00000000 00:00000000 00000000  0 0 444 1\n"
    )
    assert port_owner.parse_proc_net_tcp(text, 30000) == {111, 444}


def test_real_proc_socket_ownership() -> None:
    """The ProcReader against this machine's real /proc: our own listening socket."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        procs = m.ProcReader()
        listening = procs.listening_inodes(port)
        assert listening and listening <= procs.socket_inodes(os.getpid())
        assert server_process.observe_port(procs, port, {os.getpid()}).owned
        foreign = server_process.observe_port(procs, port, {os.getppid()})
        assert foreign.bound and not foreign.owned
        assert f"pid {os.getpid()}" in foreign.detail
    assert not server_process.observe_port(m.ProcReader(), port, {os.getpid()}).bound
    assert m.ProcReader().process_state(os.getpid()) in ("R", "S")


@pytest.mark.parametrize("layout", ["v2", "hybrid", "v1", "missing"])
def test_cgroup_pids_across_layouts(tmp_path: Path, layout: str) -> None:
    prefix = {"v2": "", "hybrid": "unified", "v1": "systemd", "missing": "cpu"}[layout]
    unit_dir = tmp_path / prefix / "system.slice" / "sglang.service"
    (unit_dir / "sub").mkdir(parents=True)
    (unit_dir / "cgroup.procs").write_text("10\n11\n")
    (unit_dir / "sub" / "cgroup.procs").write_text("12\n")

    pids = m.ProcReader(cgroup_root=str(tmp_path)).cgroup_pids("/system.slice/sglang.service")

    assert pids == (None if layout == "missing" else {10, 11, 12})


def test_systemd_reader_commands_and_journal_fallback() -> None:
    calls: list[list[str]] = []
    answers = {
        "show": (0, "MainPID=42\nInvocationID=abc\nActiveState=active\nNRestarts=2\n", ""),
        "invocation": (0, "", ""),
        # journalctl --reverse: newest first
        "since": (0, "line two\nline one\n", ""),
    }

    def run(cmd: list[str]) -> tuple[int, str, str]:
        calls.append(cmd)
        if cmd[0] == "systemctl":
            return answers["show"]
        return answers["invocation" if "--since" not in cmd else "since"]

    reader = m.SystemdReader(run)
    state = reader.show(UNIT)
    assert (state.main_pid, state.invocation, state.n_restarts) == (42, "abc", 2)
    assert calls[0][:3] == ["systemctl", "show", UNIT]
    assert "ControlGroup" in calls[0][-1] and "ExecMainStatus" in calls[0][-1]

    assert reader.journal(UNIT, ["abc", "def"], 1000.0) == ["line one", "line two"]
    assert calls[1][-2:] == ["_SYSTEMD_INVOCATION_ID=abc", "_SYSTEMD_INVOCATION_ID=def"]
    assert {"-u", "-o", "cat", "--no-pager", "-n", "40"} <= set(calls[1])
    # with --since, -n keeps the oldest lines: the fallback asks newest first and turns them back
    assert calls[2][-3:] == ["--since", "@1000", "--reverse"]

    with pytest.raises(systemd.SystemdError, match="rc=1"):
        m.SystemdReader(lambda cmd: (1, "", "Failed to connect to bus")).show(UNIT)


def test_a_failing_systemctl_show_fails_at_once(
    host: FakeHost, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    new_server(host, starts=0.0, binds=0.0)

    def failing(self: Any, unit: str) -> Any:
        raise systemd.SystemdError(f"systemctl show {unit} failed (rc=1): Failed to connect to bus")

    monkeypatch.setattr(FakeSystemd, "show", failing)

    run = run_module(restart_args(server), host, server)

    assert run.failed and run.clock.now == 0.0
    assert run.msg.startswith("systemctl show sglang.service failed (rc=1)")  # not "unexpected"
    assert "journal" in run.result


def test_explain_journal_puts_the_cause_first() -> None:
    causes = journal.explain_journal(
        ["boom", *TRACEBACK[1:], "error: unrecognized arguments: --foo", "bind: address in use"]
    )
    assert causes == [
        "likely cause: SGLang rejected a flag (wrong flag dialect for this SGLang build?): "
        "error: unrecognized arguments: --foo",
        f"likely cause: the server raised an exception: {TRACEBACK[-1]}",
    ]


def test_an_unreadable_journal_is_one_line_and_never_hides_the_failure() -> None:
    class BrokenJournal:
        def journal(self, unit: str, invocations: list[str], since_epoch: float) -> list[str]:
            raise OSError("journalctl: No such file or directory")

    lines = journal.read_journal(BrokenJournal(), UNIT, ["abc"], 0.0)

    assert lines == ["(could not read the journal: journalctl: No such file or directory)"]
    assert journal.failure_message("the unit failed", UNIT, []) == "the unit failed"
    assert journal.failure_message("the unit failed", UNIT, lines).splitlines() == [
        "the unit failed",
        f"--- last 1 journal lines of {UNIT} ---",
        *lines,
    ]


def test_documentation_matches_the_argument_spec() -> None:
    """Like prometheus-community's CI: documented options and the real spec must not drift."""
    options = yaml.safe_load(m.DOCUMENTATION)["options"]

    def compare(doc: dict[str, Any], spec: dict[str, Any], where: str) -> None:
        assert set(doc) == set(spec), where
        for name, entry in spec.items():
            assert doc[name]["type"] == entry["type"], f"{where}{name}"
            assert doc[name].get("default") == entry.get("default"), f"{where}{name}"
            assert bool(doc[name].get("required")) == bool(entry.get("required")), f"{where}{name}"
            assert doc[name].get("choices") == entry.get("choices"), f"{where}{name}"
            if "options" in entry:
                compare(doc[name]["suboptions"], entry["options"], f"{name}.")

    compare(options, m.ARGUMENT_SPEC, "")
    for block in (m.EXAMPLES, m.RETURN):
        assert yaml.safe_load(block)
