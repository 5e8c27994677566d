"""sweep.cli.runner: -e parsing like ansible-playbook, status read from the artifacts, and detached
runs through ansible-runner's own start and is-alive."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sweep.cli import runner


def test_extravars_like_ansible_playbook() -> None:
    got = runner.parse_extravars(['{"budget": [4, 8]}', "topk=2,4", "sweep_name=a=b"])
    assert got == {"budget": [4, 8], "topk": "2,4", "sweep_name": "a=b"}
    with pytest.raises(ValueError, match="key=value"):
        runner.parse_extravars(["budget"])


def test_status_from_artifacts(tmp_path: Path) -> None:
    assert runner.status(tmp_path, "x")["state"] == "unknown"
    art = tmp_path / "artifacts" / "x"
    art.mkdir(parents=True)
    assert runner.status(tmp_path, "x")["state"] == "running"
    (art / "stdout").write_text(
        "TASK [x]\n    msg: '[2026-01-01 10:00:00] sweep s: 1/3 done | elapsed 5s | ETA 10s'\n"
        "\x1b[0;32m    msg: '[2026-01-01 10:01:00] sweep s: 2/3 done | elapsed 65s | ETA 5s'"
        "\x1b[0m\n"
        "    msg: gpu-01 back in its load balancer after 41.0 s out of the pool; requests\n"
        "    msg: gpu-02 back in its load balancer after 12.5 s out\n      of the pool\n"
        "    msg: gpu-01 back in its load balancer after 39.5 s out of the pool\n"
    )
    (art / "status").write_text("failed")
    (art / "rc").write_text("2")
    st = runner.status(tmp_path, "x")
    assert (st["state"], st["rc"]) == ("failed", 2)
    assert st["last_progress"] == (
        "[2026-01-01 10:01:00] sweep s: 2/3 done | elapsed 65s | ETA 5s"
    )  # ansible's colours left out
    assert "pid" not in st  # a foreground run: no daemon to ask
    # each host's last time out of its load balancer, a wrapped line too
    assert st["out_of_pool_s"] == {"gpu-01": 39.5, "gpu-02": 12.5}


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_detached_run_killed_before_its_end_is_dead(tmp_path: Path) -> None:
    rdir = runner.run_dir(tmp_path, "x")
    rdir.mkdir(parents=True)
    (rdir / runner.PIDFILE).write_text(f"{_dead_pid()}\n")
    st = runner.status(tmp_path, "x")
    assert (st["state"], st["pid"]) == ("dead", None)
    assert st["daemon_log"] == str(rdir / runner.DAEMON_LOG)
    (tmp_path / "artifacts" / "x").mkdir(parents=True)  # it got as far as the playbook
    assert runner.status(tmp_path, "x")["state"] == "dead"


def test_a_run_that_cannot_start_says_why(tmp_path: Path) -> None:
    with pytest.raises(runner.RunnerError, match="inventory"):
        runner.run_detached({}, tmp_path, "x", str(tmp_path / "no-such-inventory.yml"))


PLAYBOOK = """\
- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.debug:
        msg: "[2026-01-01 10:00:00] sweep s: 1/2 done | budget {{ budget | to_json }}"
    - ansible.builtin.wait_for:
        path: "{{ go }}"
        timeout: 120
    - ansible.builtin.debug:
        msg: "[2026-01-01 10:00:03] sweep s: 2/2 done"
"""


def _status_until(
    private: Path, done: Callable[[dict[str, Any]], bool], timeout: float = 120.0
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while not done(st := runner.status(private, "x")) and time.monotonic() < deadline:
        time.sleep(0.5)
    return st


def _project(tmp_path: Path) -> tuple[Path, Path]:
    """A project whose sweep.yml waits for a file, and an inventory of this machine."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "sweep.yml").write_text(PLAYBOOK)
    inventory = project / "hosts.yml"
    inventory.write_text(
        "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n"
        f"      ansible_python_interpreter: {sys.executable}\n"
    )
    return project, inventory


def _without_the_venv_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """As `.venv/bin/python -m sweep run` from a shell that did not activate the venv."""
    bindir = str(Path(sys.executable).parent)
    path = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and d != bindir]
    monkeypatch.setenv("PATH", os.pathsep.join(path or ["/usr/bin", "/bin"]))


def test_foreground_run_in_a_fresh_private_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _without_the_venv_on_path(monkeypatch)
    project, inventory = _project(tmp_path)
    (go := tmp_path / "go").touch()
    private = tmp_path / "fresh" / "private"  # not there yet
    extravars = {"budget": 3, "go": str(go)}
    assert runner.run_foreground(extravars, private, "f", str(inventory), project=project) == 0
    st = runner.status(private, "f")
    assert (st["state"], st["rc"]) == ("successful", 0)
    assert st["last_progress"] == "[2026-01-01 10:00:03] sweep s: 2/2 done"


def test_detached_run_through_ansible_runner_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _without_the_venv_on_path(monkeypatch)
    project, inventory = _project(tmp_path)
    private = tmp_path / "private"
    go = tmp_path / "go"
    # a pidfile left by a killed run of the same ident does not keep the new one waiting
    rdir = runner.run_dir(private, "x")
    rdir.mkdir(parents=True)
    (rdir / runner.PIDFILE).write_text(f"{_dead_pid()}\n")

    pid = runner.run_detached(
        {"budget": [4, 8], "go": str(go)}, private, "x", str(inventory), project=project
    )
    try:
        st = runner.status(private, "x")
        assert (st["state"], st["pid"], st["rc"]) == ("running", pid, None)
        assert runner.is_alive(private, "x") is True
        with pytest.raises(runner.RunnerError, match="already running"):
            runner.run_detached({}, private, "x", project=project)
        # the extra variables went in as ansible-runner's env/extravars, readable by us only
        extravars = rdir / "env" / "extravars"
        assert json.loads(extravars.read_text()) == {"budget": [4, 8], "go": str(go)}
        assert stat.S_IMODE(extravars.stat().st_mode) == 0o600
        first = _status_until(private, lambda s: bool(s["last_progress"]))
        assert first["last_progress"] == "[2026-01-01 10:00:00] sweep s: 1/2 done | budget [4, 8]"
        go.touch()
        done = _status_until(private, lambda s: s["state"] != "running")
    finally:
        go.touch()
    assert (done["state"], done["rc"], done["pid"]) == ("successful", 0, None)
    assert done["last_progress"] == "[2026-01-01 10:00:03] sweep s: 2/2 done"
    assert done["artifacts"] == str(private / "artifacts" / "x")  # where a foreground run's go
    assert runner.is_alive(private, "x") is False
    assert not (rdir / runner.PIDFILE).exists()
