"""scripts/timing.sh's rerun, run for real in a copy of its tree with a stand-in pytest whose first
run fails: the failed tests run once more, and under make test (TIMING_RERUN_AFTER) only once the
host images' background build has ended, so that the rerun has the machine to itself."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# the first run fails one test; the rerun (--last-failed) passes and records when it started
PYTEST = """#!/usr/bin/env bash
if [[ " $* " == *" --last-failed "* ]]; then
  date +%s.%N >>"$CALLS"; echo "1 passed"; exit 0
fi
echo "FAILED tests/unit/test_x.py::test_y - assert (False)"; exit 1
"""


def _run(tmp_path: Path, **env: str) -> tuple[int, str, list[float]]:
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "timing.sh", repo / "scripts" / "timing.sh")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "pytest").write_text(PYTEST, encoding="utf-8")
    (bin_dir / "pytest").chmod(0o755)
    calls = tmp_path / "calls"
    environ = {k: v for k, v in os.environ.items() if k != "TIMING_RERUN_AFTER"}
    environ.update(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", CALLS=str(calls), **env)
    proc = subprocess.run(
        ["bash", "scripts/timing.sh"],
        cwd=repo,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    reruns = [float(t) for t in calls.read_text().split()] if calls.exists() else []
    return proc.returncode, proc.stdout + proc.stderr, reruns


def test_a_failed_test_runs_again_and_the_first_failure_is_printed(tmp_path: Path) -> None:
    rc, out, reruns = _run(tmp_path)
    assert rc == 0, out
    assert len(reruns) == 1
    assert "timing: first run: FAILED tests/unit/test_x.py::test_y" in out
    assert "timing: the failed tests passed when run again" in out
    assert "waiting for the host images' build" not in out


def test_under_make_test_the_rerun_waits_for_the_image_build_to_end(tmp_path: Path) -> None:
    done = tmp_path / "images.done"
    ended: list[float] = []

    def build() -> None:  # the background build, ending 1.5 s in
        time.sleep(1.5)
        ended.append(time.time())
        done.touch()

    builder = threading.Thread(target=build)
    builder.start()
    rc, out, reruns = _run(tmp_path, TIMING_RERUN_AFTER=str(done))
    builder.join()
    assert rc == 0, out
    assert "timing: waiting for the host images' build to end before the rerun" in out
    assert len(reruns) == 1 and reruns[0] >= ended[0], (reruns, ended)
