"""A killed molecule run leaves no sweep behind: a real `molecule test` (default driver, the
controller itself as its host) starts a stand-in sweep the way sweep-hosts and sweep-resume do
(molecule/shared/files/bound_to_molecule.py, in the background) and another in the foreground; the
test SIGKILLs molecule and every one of them, and the playbook that started them, must be gone."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BOUND = ROOT / "molecule/shared/files/bound_to_molecule.py"
MOLECULE = shutil.which("molecule", path=str(Path(sys.executable).parent)) or shutil.which(
    "molecule"
)

SCENARIO = """\
driver:
  name: default
  options:
    managed: false
platforms:
  - name: localhost
provisioner:
  name: ansible
  inventory:
    host_vars:
      localhost:
        ansible_connection: local
        ansible_python_interpreter: {python}
scenario:
  test_sequence: [verify]
verifier:
  name: ansible
"""

# Two stand-ins for a sweep, each a process group with a child (a playbook and its workers): one
# in the background whose group id is written down, one in the foreground the play waits on.
VERIFY = """\
- name: Start stand-in sweeps bound to this molecule run
  hosts: localhost
  gather_facts: false
  tasks:
    - name: In the background
      ansible.builtin.command:
        argv: [{python}, {bound}, --background, --log, {out}/bg.log, --rc-file, {out}/bg.rc, --,
               sh, -c, "sleep 300 & sleep 300"]
      register: bg
    - name: Write its group down
      ansible.builtin.copy:
        content: "{{{{ bg.stdout }}}}"
        dest: {out}/bg.pgid
        mode: "0644"
    - name: In the foreground
      ansible.builtin.command:
        argv: [{python}, {bound}, --, sh, -c, "echo $$ > {out}/fg.pgid; sleep 300 & sleep 300"]
"""


def _group(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid:
                    members.append(int(entry.name))
            except ProcessLookupError:
                continue
    return members


def _wait_for(path: Path, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.is_file() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.2)
    raise AssertionError(f"{path} not written within {timeout} s")


def _molecule_project(tmp_path: Path) -> tuple[Path, Path]:
    out = tmp_path / "out"
    out.mkdir()
    scenario = tmp_path / "project/molecule/kill"
    scenario.mkdir(parents=True)
    python, fmt = sys.executable, {"bound": BOUND, "out": out}
    (scenario / "molecule.yml").write_text(SCENARIO.format(python=python))
    (scenario / "verify.yml").write_text(VERIFY.format(python=python, **fmt))
    return tmp_path / "project", out


@pytest.mark.skipif(MOLECULE is None, reason="molecule is not installed")
def test_a_killed_molecule_run_leaves_no_sweep_behind(tmp_path: Path) -> None:
    project, out = _molecule_project(tmp_path)
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1", "PATH": path}
    log = (tmp_path / "molecule.log").open("w")
    molecule = subprocess.Popen(
        [str(MOLECULE), "test", "-s", "kill"], cwd=project, env=env, stdout=log, stderr=log
    )
    try:
        bg = int(_wait_for(out / "bg.pgid", 60))
        fg = int(_wait_for(out / "fg.pgid", 60))
        assert len(_group(bg)) >= 2 and len(_group(fg)) >= 2, (_group(bg), _group(fg))
        playbooks = subprocess.run(
            ["pgrep", "-f", f"{project}/molecule/kill/verify.yml"], capture_output=True, text=True
        ).stdout.split()
        assert playbooks, "the verify playbook is not running"
    finally:
        molecule.send_signal(signal.SIGKILL)
        molecule.wait()
    deadline = time.monotonic() + 15
    left: dict[str, list[int]] = {}
    while time.monotonic() < deadline:
        running = [p for p in playbooks if Path(f"/proc/{p}").exists()]
        left = {"background": _group(bg), "foreground": _group(fg), "playbook": running}
        if not any(left.values()):
            break
        time.sleep(0.5)
    assert not any(left.values()), f"outlived molecule: {left}"
    # killed, not ended: no exit status is written for it
    assert not (out / "bg.rc").exists()


def test_a_command_that_ends_first_leaves_its_status(tmp_path: Path) -> None:
    """By hand (no molecule above: the outermost ansible-playbook owns it), ending on its own."""
    out = tmp_path / "out"
    out.mkdir()
    playbook = tmp_path / "bg.yml"
    playbook.write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.command:\n"
        f"        argv: [{sys.executable}, {BOUND}, --background, --log, {out}/log,"
        f" --rc-file, {out}/rc, --, sh, -c, 'echo done; exit 3']\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOLECULE_")}
    run = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
         "-e", f"ansible_python_interpreter={sys.executable}", str(playbook)],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert _wait_for(out / "rc", 15) == "3"
    assert (out / "log").read_text() == "done\n"


def test_an_orphaned_playbook_of_a_killed_run_starts_nothing(tmp_path: Path) -> None:
    """Under molecule's variables with no molecule above: refused, naming the command."""
    env = {**os.environ, "MOLECULE_EPHEMERAL_DIRECTORY": str(tmp_path)}
    run = subprocess.run(
        [sys.executable, str(BOUND), "--", "touch", str(tmp_path / "started")],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert run.returncode == 2
    assert "not starting touch" in run.stderr
    assert not (tmp_path / "started").exists()
