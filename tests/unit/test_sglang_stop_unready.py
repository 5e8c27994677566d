"""library/sglang_stop_unready.py: a run that never served is stopped at once, the whole cgroup; a
run that served is left to the restart's drain."""

from __future__ import annotations

from typing import Any

import pytest
from project_module_utils import use_project_module_utils
from sglang_host_loader import ROOT, load

use_project_module_utils()
m = load("sglang_stop_unready", ROOT / "library" / "sglang_stop_unready.py")

SHOW = "MainPID={pid}\nInvocationID=inv1\nActiveState={active}\nSubState={sub}\nNRestarts=0\n"
READY = "loading weights\nThe server is fired up and ready to roll!\n"


class Host:
    """systemctl and journalctl as a fake host answers them; `procs` empties on the signal that
    works (a process that ignores SIGTERM needs SIGKILL). Like systemd with Restart=on-failure, a
    run killed without a stop job is started again (a new main PID); after a stop job the unit is
    inactive once its processes are gone."""

    def __init__(
        self,
        active: str = "activating",
        pid: int = 42,
        journal: str = "",
        ignores_term: bool = False,
        sub: str = "start",
        unkillable: bool = False,
    ) -> None:
        self.active, self.sub, self.pid, self.journal = active, sub, pid, journal
        self.ignores_term, self.unkillable = ignores_term, unkillable
        self.procs = [pid, pid + 1] if pid else []
        self.stop_job = False
        self.calls: list[list[str]] = []

    def state(self) -> tuple[str, str, int]:
        if self.stop_job and not self.procs:
            return "inactive", "dead", 0
        if self.pid and not self.procs:  # killed behind systemd's back: Restart=on-failure
            self.pid, self.procs, self.sub = self.pid + 10, [self.pid + 10], "start"
        if self.stop_job:
            return "deactivating", "stop-sigterm", self.pid
        return self.active, self.sub, self.pid

    def run(self, cmd: list[str]) -> tuple[int, str, str]:
        self.calls.append(cmd)
        if cmd[:2] == ["systemctl", "show"] and "ControlGroup" in cmd:
            return 0, "/system.slice/sglang.service\n", ""
        if cmd[:2] == ["systemctl", "show"]:
            active, sub, pid = self.state()
            return 0, SHOW.format(pid=pid, active=active, sub=sub), ""
        if cmd[0] == "journalctl":
            return 0, self.journal, ""
        if cmd[:2] == ["systemctl", "stop"]:
            self.stop_job = True
        if cmd[:2] == ["systemctl", "kill"]:
            if self.unkillable:
                # the main process dies, a child in D state does not
                self.procs = [p for p in self.procs if p != self.pid]
            elif "--signal=SIGKILL" in cmd or not self.ignores_term:
                self.procs = []
            return 0, "", ""
        return 0, "", ""

    def signals(self) -> list[str]:
        return [c[3].split("=")[1] for c in self.calls if c[:2] == ["systemctl", "kill"]]

    def commands(self) -> list[str]:
        return [c[1] for c in self.calls if c[0] == "systemctl" and c[1] in ("stop", "kill")]


@pytest.fixture(autouse=True)
def cgroup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(m, "cgroup_pids", lambda run, unit: run.__self__.procs)


MARKER = "The server is fired up and ready to roll!"


def stop(host: Host, check_mode: bool = False) -> dict[str, Any]:
    return m.stop_unready(host.run, "sglang.service", MARKER, 0.5, 0.5, check_mode, lambda s: None)


def test_a_run_that_served_is_left_to_the_restarts_drain() -> None:
    host = Host(active="active", journal=READY)
    out = stop(host)
    assert out["served"] is True and out["stopped"] == "none" and not out["changed"]
    assert host.signals() == []
    assert (out["MainPID"], out["InvocationID"]) == (42, "inv1")


def test_a_loading_run_is_stopped_at_once() -> None:
    host = Host(active="activating", journal="Load weight begin\n")
    out = stop(host)
    assert out["served"] is False and out["changed"] and out["stopped"] == "SIGTERM"
    assert host.signals() == ["SIGTERM"] and host.procs == []
    assert host.state()[0] == "inactive"


def test_the_stop_job_comes_first_so_nothing_restarts_the_killed_run() -> None:
    """A crash-looping unit (Restart=on-failure): killed without a stop job, systemd starts a new
    run at once, and the restart after this module meets it while it starts (CI saw that restart
    wait out TimeoutStopSec, 300 s). With the stop job first, the unit is left stopped."""
    host = Host(active="activating", journal="usage: ...\n")
    stop(host)
    assert host.commands() == ["stop", "kill"]
    assert host.state() == ("inactive", "dead", 0)


def test_a_process_that_ignores_sigterm_is_killed_with_its_cgroup() -> None:
    host = Host(active="active", journal="Load weight begin\n", ignores_term=True)
    out = stop(host)
    assert out["stopped"] == "SIGKILL" and host.signals() == ["SIGTERM", "SIGKILL"]
    kill = next(c for c in host.calls if "--signal=SIGKILL" in c)
    assert "--kill-whom=all" in kill  # the whole cgroup, not the main process alone


def test_a_process_that_outlives_sigkill_fails_it_by_pid_before_any_restart() -> None:
    """A child stuck in the GPU driver (D state) survives SIGKILL: the module says so, with its
    PID, instead of returning as if the unit were stopped and letting the restart start a server
    beside it."""
    host = Host(active="activating", journal="Load weight begin\n", unkillable=True)
    with pytest.raises(
        m.Survivors, match=r"1 process\(es\) still there 0.5 s after SIGKILL \(PIDs 43\)"
    ):
        stop(host)
    assert host.signals() == ["SIGTERM", "SIGKILL"]


def test_a_unit_that_does_not_stop_fails_it() -> None:
    host = Host(active="activating", journal="Load weight begin\n")
    host.state = lambda: ("deactivating", "stop-sigkill", 42)  # type: ignore[method-assign]
    with pytest.raises(m.Survivors, match=r"still deactivating/stop-sigkill 0\.5 s after"):
        stop(host)


def test_a_pending_auto_restart_is_cancelled() -> None:
    """Between two runs of a crash loop: no process to signal, but the timer would start one."""
    host = Host(active="activating", sub="auto-restart", pid=0)
    out = stop(host)
    assert out["served"] is None and out["changed"] and out["stopped"] == "cancelled"
    assert host.commands() == ["stop"] and host.state()[0] == "inactive"


def test_a_stopped_unit_is_left_alone() -> None:
    for active in ("inactive", "failed"):
        host = Host(active=active, pid=0)
        out = stop(host)
        assert out["served"] is None and out["stopped"] == "none" and not out["changed"]
        assert host.commands() == []


def test_check_mode_says_it_would_stop_and_sends_nothing() -> None:
    host = Host(active="activating")
    out = stop(host, check_mode=True)
    assert out["changed"] and out["served"] is False and host.signals() == []


@pytest.mark.parametrize("hierarchy", ["unified", "v1"])
def test_the_cgroup_is_read_on_either_hierarchy(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, hierarchy: str
) -> None:
    """cgroup v2 has the unit under /sys/fs/cgroup, a v1 or hybrid host (CI's podman hosts)
    under /sys/fs/cgroup/systemd: every process is found on both, not only the main one."""
    unified, v1 = tmp_path / "unified", tmp_path / "v1"
    group = (unified if hierarchy == "unified" else v1) / "system.slice" / "sglang.service"
    group.mkdir(parents=True)
    (group / "cgroup.procs").write_text("42\n43\n44\n")
    # a fresh copy of the module: the autouse fixture replaced this one's reader
    real = load("sglang_stop_unready_real", ROOT / "library" / "sglang_stop_unready.py")
    monkeypatch.setattr(real, "CGROUP_ROOTS", (str(unified), str(v1)))
    assert real.cgroup_pids(Host().run, "sglang.service") == [42, 43, 44]
