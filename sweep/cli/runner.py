"""Run sweep.yml through ansible-runner, in the foreground or detached, and inspect a run from
its artifacts (artifacts/<ident>/status, rc, stdout) and the sweep's progress lines.

    python -m sweep run --detach -e budget=4,8 -e topk=2,4    # prints the ident
    python -m sweep status <ident>                            # state, rc, last progress line
    tail -F artifacts/<ident>/stdout

A detached run is ansible-runner's own `ansible-runner start` (its daemon, which survives the
shell), in a private data directory of its own, <private dir>/detached/<ident>: the extra
variables go in as its env/extravars, its pidfile (`pid`) and `daemon.log` (anything that failed
before the playbook started) come out there. Its artifacts land where a foreground run's do,
<private dir>/artifacts/<ident>. `status` asks `ansible-runner is-alive` whether the daemon still
runs, so a run killed before it could write its status reads "dead", not "running" forever.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[2]
DETACHED = "detached"  # <private dir>/detached/<ident>: a detached run's private data directory
PIDFILE = "pid"  # ansible-runner start's pidfile, in the private data directory
DAEMON_LOG = "daemon.log"  # ansible-runner start's error log, in the private data directory
_PROGRESS = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] sweep \S+: .*")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # ansible colours its output on runner's terminal
# roles/sglang_server/tasks/balancer_rejoin.yml's line (ansible may wrap it)
_REJOINED = re.compile(
    r"(\S+)\s+back\s+in\s+its\s+load\s+balancer\s+after\s+([0-9.]+)\s+s\s+out\s+of\s+the\s+pool"
)


class RunnerError(RuntimeError):
    pass


def parse_extravars(pairs: list[str]) -> dict[str, Any]:
    """`-e` values as ansible-playbook takes them: key=value or a JSON object."""
    out: dict[str, Any] = {}
    for item in pairs:
        text = item.strip()
        if text.startswith("{"):
            out.update(json.loads(text))
        elif "=" in text:
            key, value = text.split("=", 1)
            out[key.strip()] = value
        else:
            raise ValueError(f"-e {item!r}: expected key=value or a JSON object")
    return out


def new_ident() -> str:
    return time.strftime("sweep-%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


def _path_env() -> dict[str, str]:
    """The environment with this interpreter's bin directory first on PATH: ansible-runner looks
    ansible-playbook up on PATH, and `.venv/bin/python -m sweep run` must find the venv's."""
    bindir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": os.pathsep.join([bindir, os.environ.get("PATH", os.defpath)])}


def run_foreground(
    extravars: dict[str, Any],
    private_dir: Path,
    ident: str,
    inventory: str | None = None,
    project: Path = PROJECT,
) -> int:
    import ansible_runner

    private_dir.mkdir(parents=True, exist_ok=True)  # ansible-runner wants it there
    kwargs: dict[str, Any] = {
        "private_data_dir": str(private_dir),
        "project_dir": str(project),
        "playbook": str(project / "sweep.yml"),
        "extravars": extravars,
        "ident": ident,
        "quiet": False,
        "envvars": {"PATH": _path_env()["PATH"]},
    }
    if inventory:
        kwargs["inventory"] = str(Path(inventory).resolve())
    result = ansible_runner.run(**kwargs)
    return int(result.rc or 0)


def _ansible_runner(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ansible_runner", *args],
        cwd=cwd,
        env=_path_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )


def run_dir(private_dir: Path, ident: str) -> Path:
    """The private data directory of the detached run `ident`."""
    return private_dir / DETACHED / ident


def is_alive(private_dir: Path, ident: str) -> bool | None:
    """`ansible-runner is-alive` of the detached run `ident`; None when no run of that ident was
    detached (a foreground run, or none)."""
    rdir = run_dir(private_dir, ident)
    if not rdir.is_dir():
        return None
    return _ansible_runner("is-alive", str(rdir), cwd=rdir).returncode == 0


def _read_pid(rdir: Path) -> int | None:
    try:
        return int((rdir / PIDFILE).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def run_detached(
    extravars: dict[str, Any],
    private_dir: Path,
    ident: str,
    inventory: str | None = None,
    project: Path = PROJECT,
    wait_s: float = 30.0,
) -> int:
    """Starts the sweep with `ansible-runner start` (it survives the shell); returns the daemon's
    PID, from its pidfile."""
    rdir = run_dir(private_dir, ident)
    if is_alive(private_dir, ident):
        raise RunnerError(f"run {ident} is already running (pid {_read_pid(rdir)})")
    (rdir / PIDFILE).unlink(missing_ok=True)  # a killed run's: the daemon would wait on it forever
    (rdir / DAEMON_LOG).unlink(missing_ok=True)
    (rdir / "env").mkdir(mode=0o700, parents=True, exist_ok=True)
    extra = rdir / "env" / "extravars"
    extra.touch(mode=0o600)
    extra.write_text(json.dumps(extravars), encoding="utf-8")
    args = ["start", str(rdir), "--ident", ident, "--project-dir", str(project)]
    args += ["--playbook", str(project / "sweep.yml")]
    args += ["--artifact-dir", str(private_dir / "artifacts")]
    if inventory:
        args += ["--inventory", str(Path(inventory).resolve())]
    started = _ansible_runner(*args, cwd=project)
    if started.returncode != 0:
        raise RunnerError(f"ansible-runner start: {(started.stderr or started.stdout).strip()}")
    # the daemon writes its pidfile right after it detaches, before it does anything else
    deadline = time.monotonic() + wait_s
    while (pid := _read_pid(rdir)) is None:
        log = rdir / DAEMON_LOG
        if time.monotonic() > deadline or (log.is_file() and log.stat().st_size):
            text = log.read_text(errors="replace").strip() if log.is_file() else ""
            raise RunnerError(f"run {ident} did not start: {text or 'no pidfile in ' + str(rdir)}")
        time.sleep(0.05)
    return pid


def status(private_dir: Path, ident: str) -> dict[str, Any]:
    art = private_dir / "artifacts" / ident
    alive = is_alive(private_dir, ident)
    detached: dict[str, Any] = {}
    if alive is not None:
        rdir = run_dir(private_dir, ident)
        detached = {"pid": _read_pid(rdir) if alive else None, "daemon_log": str(rdir / DAEMON_LOG)}
    if not art.is_dir() and not alive:
        state = "unknown" if alive is None else "dead"
        return {"ident": ident, "state": state, "artifacts": str(art), **detached}

    def read(name: str) -> str | None:
        p = art / name
        return p.read_text(errors="replace").strip() if p.is_file() else None

    stdout = _ANSI.sub("", read("stdout") or "")
    progress = _PROGRESS.findall(stdout)
    rc = read("rc")
    # no status written yet: running, unless the detached daemon is gone (killed before the end)
    state = read("status") or ("dead" if alive is False else "running")
    return {
        "ident": ident,
        "state": state,
        "rc": int(rc) if rc not in (None, "") else None,
        "last_progress": progress[-1].rstrip('\x27"') if progress else None,
        # each host's time out of its load balancer at its last restart of the run
        "out_of_pool_s": {host: float(s) for host, s in _REJOINED.findall(stdout)},
        "artifacts": str(art),
        **detached,
    }
