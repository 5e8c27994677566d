"""Run sweep.yml through ansible-runner, in the foreground or detached, and inspect a run from
its artifacts (artifacts/<ident>/status, rc, stdout) and the sweep's progress lines.

    python -m sweep run --detach -e budget=4,8 -e topk=2,4    # prints the ident
    python -m sweep status <ident>                            # state, rc, last progress line
    tail -F artifacts/<ident>/stdout
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[1]
_PROGRESS = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] sweep \S+: .*")


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


def run_foreground(
    extravars: dict[str, Any],
    private_dir: Path,
    ident: str,
    inventory: str | None = None,
    project: Path = PROJECT,
) -> int:
    import ansible_runner

    kwargs: dict[str, Any] = {
        "private_data_dir": str(private_dir),
        "project_dir": str(project),
        "playbook": str(project / "sweep.yml"),
        "extravars": extravars,
        "ident": ident,
        "quiet": False,
    }
    if inventory:
        kwargs["inventory"] = str(Path(inventory).resolve())
    result = ansible_runner.run(**kwargs)
    return int(result.rc or 0)


def run_detached(
    extravars: dict[str, Any], private_dir: Path, ident: str, inventory: str | None = None
) -> int:
    """Starts the sweep in its own session (it survives the shell); returns the child's PID."""
    private_dir.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "sweep", "run", "--ident", ident]
    argv += ["--private-dir", str(private_dir), "-e", json.dumps(extravars)]
    if inventory:
        argv += ["--inventory", str(Path(inventory).resolve())]
    log = open(private_dir / f"{ident}.console.log", "ab")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(
        argv, cwd=PROJECT, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
    )
    return proc.pid


def status(private_dir: Path, ident: str) -> dict[str, Any]:
    art = private_dir / "artifacts" / ident
    if not art.is_dir():
        return {"ident": ident, "state": "unknown", "artifacts": str(art)}

    def read(name: str) -> str | None:
        p = art / name
        return p.read_text(errors="replace").strip() if p.is_file() else None

    stdout = read("stdout") or ""
    progress = _PROGRESS.findall(stdout)
    rc = read("rc")
    return {
        "ident": ident,
        "state": read("status") or "running",
        "rc": int(rc) if rc not in (None, "") else None,
        "last_progress": progress[-1].rstrip('\x27"') if progress else None,
        "artifacts": str(art),
    }
