"""tests/podman/mux.py, the test hosts' shared `podman exec`, against a fake podman that runs the
agent here: what a command gets and gives back, one podman start for many commands, commands side by
side, and what the caller is told when there is no container or it goes away mid-command."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]

# `podman exec -i CONTAINER ARGV...` run here; the container "gone" does not exist. Each start is
# logged.
FAKE_PODMAN = """#!/bin/sh
echo "$1 $2 $3" >> "$0.log"
[ "$1" = exec ] || exit 125
shift
[ "$1" = -i ] && shift
if [ "$1" = gone ]; then echo "Error: no such container gone" >&2; exit 125; fi
shift
exec "$@"
"""


@pytest.fixture
def mux(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("podman_mux", ROOT / "tests/podman/mux.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # the agent runs here, not in a container: this interpreter, not the test image's path
    monkeypatch.setattr(module, "AGENT_PYTHON", sys.executable)
    # a Unix socket's path has at most 107 bytes, and pytest's own temporary paths can be longer
    short = Path(tempfile.mkdtemp(prefix="mux", dir="/tmp"))
    monkeypatch.setattr("tempfile.tempdir", str(short))
    yield module
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            ours = any(str(short).encode() in a for a in argv[:3])
            if ours and b"mux.py" in b" ".join(argv[:2]):
                os.kill(int(proc.name), signal.SIGKILL)
    shutil.rmtree(short, ignore_errors=True)


@pytest.fixture
def podman(tmp_path: Path) -> list[str]:
    fake = tmp_path / "podman"
    fake.write_text(FAKE_PODMAN)
    fake.chmod(0o755)
    return [str(fake)]


def starts(podman: list[str]) -> list[str]:
    log = Path(podman[0] + ".log")
    return log.read_text().splitlines() if log.exists() else []


def test_a_command_gets_its_stdin_and_gives_back_status_stdout_and_stderr(mux, podman):
    argv = ["/bin/sh", "-c", "cat; echo to-stderr >&2; exit 3"]
    assert mux.run_command(podman, "c1", argv, b"module \x00 payload") == (
        3,
        b"module \x00 payload",
        b"to-stderr\n",
    )
    # without data its stdin is empty, as `podman exec` without -i
    empty = mux.run_command(podman, "c1", ["/bin/sh", "-c", "cat; echo $?"], None)
    assert empty == (0, b"0\n", b"")


def test_a_missing_program_is_127_as_podman_exec_gives(mux, podman):
    rc, out, err = mux.run_command(podman, "c1", ["/no/such/program"], None)
    assert (rc, out) == (127, b"")
    assert b"/no/such/program" in err


def test_one_podman_start_serves_every_command_and_each_container_has_its_own(mux, podman):
    for _ in range(5):
        assert mux.run_command(podman, "c1", ["true"], None) == (0, b"", b"")
    assert mux.run_command(podman, "c2", ["false"], None)[0] == 1
    assert [line.split()[:3] for line in starts(podman)] == [
        ["exec", "-i", "c1"],
        ["exec", "-i", "c2"],
    ]


def test_commands_run_side_by_side(mux, podman):
    mux.run_command(podman, "c1", ["true"], None)
    slow: list[object] = []
    thread = threading.Thread(
        target=lambda: slow.append(mux.run_command(podman, "c1", ["sleep", "2"], None))
    )
    thread.start()
    time.sleep(0.3)
    began = time.monotonic()
    assert mux.run_command(podman, "c1", ["echo", "quick"], None) == (0, b"quick\n", b"")
    assert time.monotonic() - began < 1.5
    assert slow == []
    thread.join()
    assert slow == [(0, b"", b"")]


def test_no_container_leaves_the_command_to_podman_exec(mux, podman):
    assert mux.run_command(podman, "gone", ["true"], None) is None
    assert not mux.socket_path(podman, "gone").exists()


def test_an_agent_that_ends_mid_command_loses_that_command_and_the_next_starts_anew(mux, podman):
    mux.run_command(podman, "c1", ["true"], None)
    path = mux.socket_path(podman, "c1")
    assert path.exists()
    # the command's parent is the agent: killing it is the container going away
    with pytest.raises(mux.LostCommand, match="container c1: no answer"):
        mux.run_command(podman, "c1", ["/bin/sh", "-c", "kill -9 $PPID; sleep 5"], None)
    deadline = time.monotonic() + 5
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not path.exists()
    assert mux.run_command(podman, "c1", ["echo", "again"], None) == (0, b"again\n", b"")
    assert len(starts(podman)) == 2


def test_an_idle_multiplexer_ends_and_the_next_command_starts_another(mux, podman, monkeypatch):
    monkeypatch.setenv("PODMAN_MUX_IDLE_SECONDS", "0.5")
    assert mux.run_command(podman, "c1", ["true"], None) == (0, b"", b"")
    path = mux.socket_path(podman, "c1")
    assert path.exists()
    # busy past the idle time: a running command keeps it
    assert mux.run_command(podman, "c1", ["sleep", "1.2"], None) == (0, b"", b"")
    assert len(starts(podman)) == 1
    deadline = time.monotonic() + 5
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not path.exists()
    assert mux.run_command(podman, "c1", ["true"], None) == (0, b"", b"")
    assert len(starts(podman)) == 2
