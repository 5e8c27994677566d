"""library/sglang_ready.py: expect_env (/proc/PID/environ) and api_key_from_unit.

Same drivers as test_sglang_ready.py (ready_fakes): a FakeHost /proc tree with environ files, a
fake systemctl behind the module's real SystemdReader.environment, a real HTTP server on
127.0.0.1. Every result and failure the module hands to exit_json/fail_json is serialised and
searched for the key.
"""

from __future__ import annotations

import builtins
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from project_module_utils import module_utils
from ready_fakes import BASE_ENVIRON, UNIT, FakeHost, Run, ScriptedServer, load_module, run_module

m = load_module()
systemd = module_utils("sglang_systemd")
readiness = module_utils("sglang_readiness")
server_process = module_utils("sglang_server_process")
unit_watch = module_utils("sglang_unit_watch")

KEY = "sk-unit-7f3a-never-print-me"
TOPK = "SGLANG_DDTREE_MAX_TOPK"
CONFIG: dict[str, Any] = {
    "version": "0.5.23",
    "model_path": "/models/target",
    "tp_size": 1,
    "speculative_algorithm": "DDTREE",
    "speculative_ddtree_budget": 8,
    "speculative_draft_window_size": 2048,
    # What the real /server_info has: no field for the topk read from the environment.
}
EXPECT = {"speculative_algorithm": "DDTREE", "speculative_ddtree_budget": "8"}


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    srv = ScriptedServer()
    yield srv
    srv.close()


@pytest.fixture
def host(tmp_path: Path, server: ScriptedServer) -> FakeHost:
    return FakeHost(tmp_path / "host", server.port, server.behaviour)


def serving(
    host: FakeHost,
    server_env: Mapping[str, str],
    launcher_env: Mapping[str, str] | None = None,
    pid: int = 200,
) -> None:
    """Launcher `pid` (the unit's MainPID) and its child pid+1, SGLang, serving on the port.

    Like sglang-launch.py: the child gets the launcher's environment minus SGLANG_API_KEY.
    """
    launcher = {**BASE_ENVIRON, **server_env, "SGLANG_API_KEY": KEY}
    host.spawn(pid, env=launcher if launcher_env is None else launcher_env)
    host.spawn(pid + 1, ppid=pid, env={**BASE_ENVIRON, **server_env})
    host.listen(pid + 1, inode=9000 + pid)
    host.set_unit(MainPID=pid, InvocationID="new-inv", ActiveState="active", SubState="running")
    host.http.server_info = CONFIG
    host.http.health_generate = host.http.health = host.http.ready = 200


def env_files(host: FakeHost, tmp_path: Path, *files: tuple[str, str | None, bool]) -> list[Path]:
    """Writes EnvironmentFiles (name, text or None for absent, optional) and the unit property."""
    paths, lines = [], []
    for name, text, optional in files:
        path = tmp_path / name
        if text is not None:
            path.write_text(text)
        paths.append(path)
        lines.append(f"{path} (ignore_errors={'yes' if optional else 'no'})")
    host.unit_env["EnvironmentFiles"] = "\n".join(lines) + ("\n" if lines else "")
    return paths


def unit_args(server: ScriptedServer, **extra: Any) -> dict[str, Any]:
    return {
        "url": server.url,
        "unit": UNIT,
        "expect": EXPECT,
        "require_speculation": True,
        "timeout": 60,
        **extra,
    }


def assert_never_shows(run: Run, *secrets: str) -> None:
    """Everything exit_json/fail_json received (msg, journal, exception text...), serialised."""
    text = json.dumps(run.result, default=str)
    for secret in secrets:
        assert secret not in text


def auth_headers(server: ScriptedServer) -> set[str | None]:
    return {r.headers.get("Authorization") for r in server.requests}


# ---------------------------------------------------------------------------------------------
# expect_env: verified in the server process, never in /server_info
# ---------------------------------------------------------------------------------------------


def test_env_is_read_from_the_port_owner_not_the_launcher(
    host: FakeHost, server: ScriptedServer
) -> None:
    # A launcher whose own value differs proves which process was read.
    serving(host, {TOPK: "4"}, launcher_env={**BASE_ENVIRON, TOPK: "6"})

    run = run_module(unit_args(server, expect_env={TOPK: "4"}), host, server)

    assert not run.failed, run.msg
    r = run.result
    assert (r["environ_pid"], r["environ_process"]) == (201, "port_owner")
    assert r["pid"] == 200  # the launcher stays the unit's main PID in the result
    assert r["verified"] == {
        "server_info": sorted(EXPECT),
        "environ": [TOPK],
        "unverified": [],
    }
    assert r["phases"]["port_bound"] <= r["phases"]["env_matched"] <= r["phases"]["config_matched"]
    # Nothing env-based was looked for in /server_info, which has no such field.
    assert TOPK not in r["server_info"] and "speculative_ddtree_max_topk" not in r["server_info"]


def test_numbers_in_expect_env_compare_as_their_text(
    host: FakeHost, server: ScriptedServer
) -> None:
    serving(host, {TOPK: "4"})

    run = run_module(unit_args(server, expect_env={TOPK: 4}), host, server)

    assert not run.failed, run.msg
    assert run.result["verified"]["environ"] == [TOPK]


@pytest.mark.parametrize(
    ("server_env", "message"),
    [
        ({TOPK: "2"}, f"{TOPK} is '2', expected '4'"),
        ({}, f"{TOPK} is not set, expected '4'"),
        ({TOPK: "4 "}, f"{TOPK} is '4 ', expected '4'"),  # exact text, no trimming
    ],
    ids=["wrong-value", "absent", "not-trimmed"],
)
def test_env_mismatch_is_final_and_fails_at_once(
    host: FakeHost, server: ScriptedServer, server_env: dict[str, str], message: str
) -> None:
    serving(host, server_env, launcher_env={**BASE_ENVIRON, TOPK: "4"})
    host.journal = ["[2026-05-01 10:00:00] Load weight begin."]

    run = run_module(unit_args(server, expect_env={TOPK: "4"}, timeout=1800), host, server)

    assert run.failed
    assert run.clock.now == 0.0 and run.clock.sleeps == []  # no waiting for what cannot change
    assert message in run.msg
    assert "server process 201 (owner of port" in run.msg and "final" in run.msg
    assert "Load weight begin." in run.msg  # the journal comes with it, as for a crash
    r = run.result
    assert r["unmet"] == "env_matched" and message in r["detail"]
    assert (r["environ_pid"], r["environ_process"]) == (201, "port_owner")
    assert r["verified"]["environ"] == [] and TOPK in r["verified"]["unverified"]
    assert server.requests == []  # env comes before /server_info and the probe


def test_env_mismatch_in_check_mode_reports_without_failing(
    host: FakeHost, server: ScriptedServer
) -> None:
    serving(host, {TOPK: "2"})

    run = run_module(unit_args(server, expect_env={TOPK: "4"}), host, server, check_mode=True)

    assert not run.failed
    assert run.result["ready"] is False and run.result["unmet"] == "env_matched"
    assert f"{TOPK} is '2', expected '4'" in run.result["detail"]


def test_env_match_in_check_mode_is_verified(host: FakeHost, server: ScriptedServer) -> None:
    serving(host, {TOPK: "4"})

    run = run_module(unit_args(server, expect_env={TOPK: "4"}), host, server, check_mode=True)

    assert not run.failed and run.result["ready"] is True
    assert run.result["verified"]["environ"] == [TOPK]
    assert server.paths("POST") == []


def test_env_waits_for_the_new_server_to_own_the_port(
    host: FakeHost, server: ScriptedServer
) -> None:
    # The launcher starts at once; its child only binds at t=3 (loading the model).
    host.spawn(200, env={**BASE_ENVIRON, TOPK: "4"})
    host.set_unit(MainPID=200, InvocationID="new-inv", ActiveState="active", SubState="running")

    def bind() -> None:
        host.spawn(201, ppid=200, env={**BASE_ENVIRON, TOPK: "4"})
        host.listen(201, inode=9200)
        host.http.server_info = CONFIG

    host.at(3.0, bind)

    run = run_module(unit_args(server, expect_env={TOPK: "4"}), host, server)

    assert not run.failed, run.msg
    assert run.result["phases"]["env_matched"] >= 3.0
    assert run.result["environ_pid"] == 201


def test_unreadable_environ_fails_at_once_saying_root_is_needed(
    host: FakeHost, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    serving(host, {TOPK: "4"})
    real_open = builtins.open

    def denied(path: Any, *args: Any, **kwargs: Any) -> Any:
        if str(path).endswith("/environ"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    # Tests run as root here, for whom chmod 000 changes nothing: deny it at open().
    monkeypatch.setattr(server_process, "open", denied, raising=False)

    run = run_module(unit_args(server, expect_env={TOPK: "4"}), host, server)

    assert run.failed and run.clock.now == 0.0
    assert "201/environ: permission denied" in run.msg
    assert "must run as root on the host (become: true)" in run.msg
    assert run.result["unmet"] == "env_matched"

    checked = run_module(unit_args(server, expect_env={TOPK: "4"}), host, server, True)
    assert not checked.failed and checked.result["unmet"] == "env_matched"


def test_url_only_mode_reports_env_as_unverified_with_a_warning(
    host: FakeHost, server: ScriptedServer
) -> None:
    server.behaviour.server_info = CONFIG
    args = {"url": server.url, "expect": EXPECT, "expect_env": {TOPK: "4", "OTHER": "x"}}

    run = run_module(args, host, server)

    assert not run.failed, run.msg
    r = run.result
    assert r["verified"] == {
        "server_info": sorted(EXPECT),
        "environ": [],
        "unverified": ["OTHER", TOPK],
    }
    assert r["environ_pid"] is None and r["environ_process"] is None
    assert r["phases"]["env_matched"] is None
    assert any("expect_env not verified" in w and TOPK in w for w in run.warnings)


def test_no_expect_env_reads_no_environ(host: FakeHost, server: ScriptedServer) -> None:
    serving(host, {TOPK: "4"})

    run = run_module(unit_args(server), host, server)

    assert not run.failed, run.msg
    assert run.result["environ_pid"] is None and run.result["phases"]["env_matched"] is None
    assert run.result["verified"] == {
        "server_info": sorted(EXPECT),
        "environ": [],
        "unverified": [],
    }
    assert run.warnings == []


def test_timeout_lists_what_was_not_verified(host: FakeHost, server: ScriptedServer) -> None:
    serving(host, {TOPK: "4"})
    server.behaviour.server_info = dict(CONFIG, speculative_ddtree_budget=16)

    run = run_module(unit_args(server, expect_env={TOPK: "4"}, timeout=2), host, server)

    assert run.failed and run.result["unmet"] == "config_matched"
    assert run.result["verified"] == {
        "server_info": [],
        "environ": [TOPK],
        "unverified": sorted(EXPECT),
    }


def test_secret_like_variables_are_compared_but_never_shown(
    host: FakeHost, server: ScriptedServer
) -> None:
    serving(host, {"HF_TOKEN": "hf-real-token-value", TOPK: "4"})
    expect_env = {"HF_TOKEN": "hf-expected-token", "SGLANG_API_KEY": "whatever-key", TOPK: "4"}

    run = run_module(unit_args(server, expect_env=expect_env), host, server)

    assert run.failed
    assert "HF_TOKEN differs from the expected value (not shown" in run.msg
    # The launcher's key was popped for the child, as sglang-launch.py does.
    assert "SGLANG_API_KEY is not set, expected a value (not shown)" in run.msg
    assert_never_shows(run, "hf-real-token-value", "hf-expected-token", "whatever-key", KEY)


def test_main_pid_is_the_fallback_when_no_port_owner_is_known(host: FakeHost) -> None:
    host.spawn(200, env={**BASE_ENVIRON, TOPK: "4"})
    settings = m.Settings(
        url="http://127.0.0.1:1",
        port=1,
        unit=UNIT,
        previous_pid=None,
        previous_invocation=None,
        expect={},
        timeout=0,
        prompt="x",
        max_new_tokens=1,
        probe_timeout=1.0,
        require_speculation=False,
        max_poll_interval=0.5,
        check_mode=True,
        expect_env={TOPK: "4"},
    )
    deps = m.Dependencies(
        systemd=None,  # type: ignore[arg-type]
        procs=m.ProcReader(str(host.proc_root), str(host.cgroup_root)),
        http=m.HttpClient(settings.url, None, True),
    )
    checker = readiness.ReadinessChecker(settings, deps)
    state = systemd.parse_systemctl_show("MainPID=200\nActiveState=active\n")

    checker.check_env(state)

    assert (checker.environ_pid, checker.environ_process, checker.env_ok) == (200, "main_pid", True)
    host.set_environ(200, {TOPK: "3"})
    checker._env_verified_pid = None
    with pytest.raises(
        unit_watch.UnitFailure, match="the unit's main process 200 was started with"
    ):
        checker.check_env(state)


def test_a_process_gone_before_its_environ_was_read_is_not_ready_yet(host: FakeHost) -> None:
    procs = m.ProcReader(str(host.proc_root), str(host.cgroup_root))
    host.spawn(300, env={TOPK: "4"})
    host.set_environ(300, b"")
    host.zombie(300)
    assert procs.environ(300, [TOPK]) is None  # a zombie reads empty: not "unset"
    assert procs.environ(301, [TOPK]) is None  # no such process
    host.spawn(302, env={})
    assert procs.environ(302, [TOPK]) == {}  # alive with an empty environment: really unset


@pytest.mark.parametrize(
    ("expect_env", "message"),
    [
        ({TOPK: True}, f"expect_env.{TOPK} must be a string or a number, got bool"),
        ({TOPK: None}, "must be a string or a number, got NoneType"),
        ({TOPK: [4]}, "must be a string or a number, got list"),
        ({"A=B": "1"}, "'A=B' is not an environment variable name"),
    ],
)
def test_bad_expect_env_fails_before_any_request(
    host: FakeHost, server: ScriptedServer, expect_env: dict[str, Any], message: str
) -> None:
    run = run_module(unit_args(server, expect_env=expect_env), host, server)

    assert run.failed and message in run.msg
    assert server.requests == [] and run.systemd.shows == 0


def test_parse_environ_keeps_only_the_asked_names_first_one_wins() -> None:
    raw = b"PATH=/bin\0A=1\0B=x=y\0A=2\0NOEQUALS\0C=\xff\0SGLANG_API_KEY=k\0"
    assert server_process.parse_environ(raw, ["A", "B", "C", "D"]) == {
        "A": "1",
        "B": "x=y",
        "C": "\ufffd",
    }


def test_real_proc_environ_of_a_child_process() -> None:
    """ProcReader.environ against this machine's real /proc."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin"), TOPK: "4", "SGLANG_API_KEY": KEY}
    code = "import time; print('up', flush=True); time.sleep(30)"
    child = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"up\n"  # exec'd by now
        assert m.ProcReader().environ(child.pid, [TOPK, "ABSENT"]) == {TOPK: "4"}
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    assert m.ProcReader().environ(child.pid, [TOPK]) is None


# ---------------------------------------------------------------------------------------------
# api_key_from_unit: read on the host, never returned
# ---------------------------------------------------------------------------------------------


def test_key_from_several_environment_files_with_systemd_precedence(
    host: FakeHost, server: ScriptedServer, tmp_path: Path
) -> None:
    serving(host, {TOPK: "4"})
    host.unit_env["Environment"] = 'HOME=/var/lib/sglang "SGLANG_API_KEY=inline-loses"\n'
    _, first, last = env_files(
        host,
        tmp_path,
        ("optional-missing.env", None, True),
        ("first.env", "SGLANG_API_KEY=first-loses\n", False),
        (
            "last.env",
            "# Ansible managed\n"
            "; another comment\n"
            "OTHER='not it'\n"
            f'  SGLANG_API_KEY = "{KEY}"   \n'
            "TRAILING=1\n",
            False,
        ),
    )

    run = run_module(unit_args(server, api_key_from_unit=True), host, server)

    assert not run.failed, run.msg
    assert auth_headers(server) == {f"Bearer {KEY}"}
    assert run.result["api_key_source"] == str(last)
    assert KEY in run.no_log_values
    assert run.systemd.commands == [
        ["systemctl", "show", "-p", "Environment", "--value", UNIT],
        ["systemctl", "show", "-p", "EnvironmentFiles", "--value", UNIT],
    ]
    assert_never_shows(run, KEY)
    assert first.exists()


def test_key_from_the_environment_property_alone(
    host: FakeHost, server: ScriptedServer, tmp_path: Path
) -> None:
    serving(host, {})
    # systemd >= 246 shell-quotes words that need it.
    host.unit_env["Environment"] = 'A=1 "SGLANG_API_KEY=two words \\"q\\"" B=2\n'

    run = run_module(unit_args(server, api_key_from_unit=True), host, server)

    assert not run.failed, run.msg
    assert auth_headers(server) == {'Bearer two words "q"'}
    assert run.result["api_key_source"] == "Environment="
    assert_never_shows(run, 'two words \\"q\\"', 'two words "q"')


def test_key_variable_can_be_renamed(
    host: FakeHost, server: ScriptedServer, tmp_path: Path
) -> None:
    serving(host, {})
    env_files(host, tmp_path, ("k.env", f"SGLANG_API_KEY=no\nMY_KEY='{KEY}'\n", False))

    run = run_module(unit_args(server, api_key_from_unit=True, api_key_env="MY_KEY"), host, server)

    assert not run.failed, run.msg
    assert auth_headers(server) == {f"Bearer {KEY}"}


def test_empty_key_means_no_key(host: FakeHost, server: ScriptedServer, tmp_path: Path) -> None:
    serving(host, {})
    env_files(host, tmp_path, ("k.env", "SGLANG_API_KEY=\n", False))

    run = run_module(unit_args(server, api_key_from_unit=True), host, server)

    assert not run.failed, run.msg
    assert auth_headers(server) == {None}


def test_missing_variable_fails_naming_variable_and_files(
    host: FakeHost, server: ScriptedServer, tmp_path: Path
) -> None:
    serving(host, {})
    host.unit_env["Environment"] = "SGLANG_API_KEYS=near-miss\n"
    (path,) = env_files(host, tmp_path, ("k.env", "# SGLANG_API_KEY=commented-out\n", False))

    run = run_module(unit_args(server, api_key_from_unit=True), host, server)

    assert run.failed
    assert "SGLANG_API_KEY is set neither in Environment= nor in any EnvironmentFile=" in run.msg
    assert str(path) in run.msg and UNIT in run.msg
    assert server.requests == [] and run.systemd.shows == 0
    assert_never_shows(run, "near-miss", "commented-out")


@pytest.mark.parametrize("how", ["missing", "unreadable", "no-glob-match"])
def test_unreadable_or_missing_file_fails_naming_the_file(
    host: FakeHost,
    server: ScriptedServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    serving(host, {})
    if how == "no-glob-match":
        env_files(host, tmp_path, ("nothing-*.env", None, False))
        expected = f"EnvironmentFile {tmp_path / 'nothing-*.env'} of {UNIT} matches no file"
    else:
        (path,) = env_files(
            host,
            tmp_path,
            ("k.env", None if how == "missing" else f"SGLANG_API_KEY={KEY}\n", False),
        )
        expected = f"EnvironmentFile {path} of {UNIT}"
        if how == "unreadable":
            real_open = builtins.open

            def denied(p: Any, *args: Any, **kwargs: Any) -> Any:
                if str(p) == str(path):
                    raise PermissionError(13, "Permission denied", str(p))
                return real_open(p, *args, **kwargs)

            monkeypatch.setattr(systemd, "open", denied, raising=False)

    run = run_module(unit_args(server, api_key_from_unit=True), host, server)

    assert run.failed
    assert expected in run.msg and "SGLANG_API_KEY" in run.msg
    assert {
        "missing": "does not exist",
        "unreadable": "permission denied",
        "no-glob-match": "matches no file",
    }[how] in run.msg
    if how == "unreadable":
        assert "become" in run.msg
    assert server.requests == []
    assert_never_shows(run, KEY)


def test_glob_environment_files_are_read_in_order(
    host: FakeHost, server: ScriptedServer, tmp_path: Path
) -> None:
    serving(host, {})
    (tmp_path / "10-a.env").write_text("SGLANG_API_KEY=loses\n")
    (tmp_path / "20-b.env").write_text(f"SGLANG_API_KEY={KEY}\n")
    host.unit_env["EnvironmentFiles"] = f"{tmp_path}/*.env (ignore_errors=no)\n"

    run = run_module(unit_args(server, api_key_from_unit=True), host, server)

    assert not run.failed, run.msg
    assert run.result["api_key_source"] == str(tmp_path / "20-b.env")


def test_systemctl_failure_is_reported(host: FakeHost, server: ScriptedServer) -> None:
    serving(host, {})
    host.unit_env_error = "Failed to connect to bus: Host is down"

    run = run_module(unit_args(server, api_key_from_unit=True), host, server)

    assert run.failed
    assert (
        "systemctl show -p Environment sglang.service failed (rc=1): Failed to connect" in run.msg
    )


def test_key_that_cannot_be_a_header_fails_without_showing_it(
    host: FakeHost, server: ScriptedServer, tmp_path: Path
) -> None:
    serving(host, {})
    env_files(host, tmp_path, ("k.env", f'SGLANG_API_KEY="{KEY}\nsecond-line"\n', False))

    run = run_module(unit_args(server, api_key_from_unit=True), host, server)

    assert run.failed
    assert "SGLANG_API_KEY of sglang.service contains a control character" in run.msg
    assert f"{KEY}\nsecond-line" in run.no_log_values
    assert_never_shows(run, KEY, "second-line")
    assert server.requests == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"api_key": "k-1234"}, "mutually exclusive: api_key|api_key_from_unit"),
        ({"unit": None}, "api_key_from_unit is True but all of the following are missing: unit"),
        ({"unit": ""}, "api_key_from_unit needs unit"),
        ({"api_key_env": "A=B"}, "api_key_env must be a variable name"),
    ],
)
def test_api_key_from_unit_argument_rules(
    host: FakeHost, server: ScriptedServer, args: dict[str, Any], message: str
) -> None:
    full = {**unit_args(server, api_key_from_unit=True), **args}
    run = run_module({k: v for k, v in full.items() if v is not None}, host, server)

    assert run.failed and message in run.msg
    assert run.systemd.commands == [] and server.requests == []


def test_api_key_from_unit_false_with_api_key_is_fine(
    host: FakeHost, server: ScriptedServer
) -> None:
    serving(host, {})

    run = run_module(unit_args(server, api_key=KEY, api_key_from_unit=False), host, server)

    assert not run.failed, run.msg
    assert auth_headers(server) == {f"Bearer {KEY}"} and run.systemd.commands == []


# ---------------------------------------------------------------------------------------------
# Parsers
# ---------------------------------------------------------------------------------------------


def test_parse_env_file_follows_systemd() -> None:
    text = (
        "# comment\n"
        "; also a comment\n"
        "A=1\n"
        "  B = two words  \n"
        'C="x \\"y\\" \\$z \\\\ \\q"\n'
        "D='single $x \\n'\n"
        "E=a\\\n"
        "b\n"
        "F=\n"
        "noequals\n"
        'G="multi\nline"\n'
        "H=x # not a comment\n"
        "I=crlf\r\n"
        "A=2\n"
        'J="quoted"tail\n'
        "K=last-without-newline"
    )
    assert systemd.parse_env_file(text) == {
        "A": "2",
        "B": "two words",
        "C": 'x "y" $z \\ \\q',
        "D": "single $x \\n",
        "E": "ab",
        "F": "",
        "G": "multi\nline",
        "H": "x # not a comment",
        "I": "crlf",
        "J": "quotedtail",
        "K": "last-without-newline",
    }


def test_parse_environment_files_property() -> None:
    text = (
        "/etc/sglang/sglang.env (ignore_errors=no)\n"
        "/etc/my dir/extra.env (ignore_errors=yes)\n"
        "\n"
        "-/etc/sglang/optional.env\n"
        "/etc/plain.env\n"
    )
    assert systemd.parse_environment_files_property(text) == [
        ("/etc/sglang/sglang.env", False),
        ("/etc/my dir/extra.env", True),
        ("/etc/sglang/optional.env", True),
        ("/etc/plain.env", False),
    ]


def test_parse_environment_property() -> None:
    assert systemd.parse_environment_property("") == {}
    assert systemd.parse_environment_property('A=1 "B=two words" C=x=y\n') == {
        "A": "1",
        "B": "two words",
        "C": "x=y",
    }
    # Old systemd printed words unquoted; an odd quote must not break the parse.
    assert systemd.parse_environment_property("A=it's B=2") == {"A": "it's", "B": "2"}


def test_systemd_reader_environment_commands() -> None:
    calls: list[list[str]] = []

    def run(cmd: list[str]) -> tuple[int, str, str]:
        calls.append(cmd)
        if "Environment" in cmd:
            return 0, "A=1\n", ""
        return 0, "/etc/x.env (ignore_errors=yes)\n", ""

    assert m.SystemdReader(run).environment(UNIT) == ({"A": "1"}, [("/etc/x.env", True)])
    assert calls == [
        ["systemctl", "show", "-p", "Environment", "--value", UNIT],
        ["systemctl", "show", "-p", "EnvironmentFiles", "--value", UNIT],
    ]


# ---------------------------------------------------------------------------------------------
# The key never shows: every result and failure, serialised
# ---------------------------------------------------------------------------------------------


def _success(host: FakeHost, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    serving(host, {TOPK: "4"})


def _env_mismatch(host: FakeHost, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    serving(host, {TOPK: "2"})


def _crash_with_leaky_journal(
    host: FakeHost, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    host.spawn(200, env={**BASE_ENVIRON, "SGLANG_API_KEY": KEY})
    host.set_unit(MainPID=200, InvocationID="new-inv", ActiveState="active", SubState="running")
    host.journal = [
        f"server_args=ServerArgs(api_key='{KEY}')",
        f"python3 -m sglang.launch_server --api-key {KEY}",
        "Traceback (most recent call last):",
        f"RuntimeError: bad key {KEY}",
    ]

    def crashed() -> None:
        host.kill(200)
        host.set_unit(MainPID=0, ActiveState="failed", SubState="failed", Result="exit-code")

    host.at(1.0, crashed)


def _foreign_port_holder(
    host: FakeHost, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    host.spawn(200, env={**BASE_ENVIRON, TOPK: "4"})
    host.set_unit(MainPID=200, InvocationID="new-inv", ActiveState="active", SubState="running")
    host.spawn(999, cmdline=f"python3 -m sglang.launch_server --api-key={KEY}", in_unit=False)
    host.listen(999, inode=8001)


def _server_echoes_the_key(
    host: FakeHost, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    serving(host, {TOPK: "4"})
    # A server that answers with the key everywhere (it knows it, after all).
    host.http.server_info = dict(CONFIG, api_key=KEY, speculative_ddtree_budget=f"8 {KEY}")
    host.http.generate_status = 500


def _unexpected_exception(
    host: FakeHost, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    serving(host, {TOPK: "4"})
    original = m.HttpClient.get

    def boom(self: Any, path: str, timeout: float) -> Any:
        if path == "/ready":
            raise RuntimeError(f"unforeseen failure while using {KEY}")
        return original(self, path, timeout)

    monkeypatch.setattr(m.HttpClient, "get", boom)


SCENARIOS = {
    "success": _success,
    "env-mismatch": _env_mismatch,
    "crash-journal": _crash_with_leaky_journal,
    "foreign-port": _foreign_port_holder,
    "server-echoes-key": _server_echoes_the_key,
    "unexpected-exception": _unexpected_exception,
}


@pytest.mark.parametrize("check_mode", [False, True], ids=["run", "check"])
@pytest.mark.parametrize("key_from", ["unit", "api_key"])
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_key_is_in_no_result_and_no_failure(
    host: FakeHost,
    server: ScriptedServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    scenario: str,
    key_from: str,
    check_mode: bool,
) -> None:
    SCENARIOS[scenario](host, server, monkeypatch)
    env_files(host, tmp_path, ("sglang.env", f"SGLANG_API_KEY='{KEY}'\n", False))
    key_args = {"api_key_from_unit": True} if key_from == "unit" else {"api_key": KEY}
    args = unit_args(server, expect_env={TOPK: "4"}, timeout=3, **key_args)

    run = run_module(args, host, server, check_mode=check_mode)

    expected_failure = scenario == "unexpected-exception" or (
        scenario != "success" and not check_mode
    )
    assert run.failed is expected_failure, run.msg
    assert run.result  # something was returned, and it is clean:
    assert_never_shows(run, KEY)
    assert KEY in run.no_log_values
    if scenario == "unexpected-exception":
        assert "unforeseen failure while using ********" in run.msg
        assert KEY not in str(run.result.get("exception", ""))
        assert "RuntimeError" in str(run.result.get("exception", ""))
    assert {f"Bearer {KEY}"} >= auth_headers(server)  # every request carried it
