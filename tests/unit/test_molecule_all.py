"""scripts/molecule-all.sh's own logic, run for real in a copy of its tree with stand-ins for
podman, molecule and the two image builds: how it fills its lanes while the real-SGLang image is
still to build, and what it does when that build fails (only the scenarios on that image fail,
with the build's output, and the others still run)."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REALHOST = "localhost/sglang-realhost:cpu"

# big runs on the real-SGLang image; the others on the test image. Longest first over three
# lanes: [big] [x] [y s2 s1]; with the image to build, s1 and s2 (50 s) fit in its 60 s.
DURATIONS = "big 500\nx 200\ny 150\ns1 20\ns2 30\nrealhost-image 60\n"
SCENARIOS = ("big", "x", "y", "s1", "s2")


def _script(path: Path, body: str) -> None:
    path.write_text("#!/usr/bin/env bash\n" + body, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the script's tree: its scenarios, durations and stand-in image builds."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    for name in ("molecule-all.sh", "timed.py"):
        shutil.copy(ROOT / "scripts" / name, repo / "scripts" / name)
    (repo / "scripts/molecule-durations.txt").write_text(DURATIONS, encoding="utf-8")
    _script(repo / "scripts/test-image.sh", "exit 0\n")
    _script(
        repo / "scripts/real-sglang-image.sh",
        'echo "stand-in build: step 1"\n[ "${BUILD_FAILS:-0}" = 1 ] && exit 3\nexit 0\n',
    )
    (repo / ".config/molecule").mkdir(parents=True)
    (repo / ".config/molecule/config.yml").write_text(
        "platforms:\n  - name: sglang-${MOLECULE_SCENARIO_NAME}\n", encoding="utf-8"
    )
    for name in SCENARIOS:
        (repo / "molecule" / name).mkdir(parents=True)
        image = REALHOST if name == "big" else "localhost/sglang-testhost:bookworm"
        (repo / "molecule" / name / "molecule.yml").write_text(
            f"platforms:\n  - name: sglang-{name}\n    image: {image}\n", encoding="utf-8"
        )
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # podman: the real-SGLang image exists where REALHOST_PRESENT=1; no container, none published
    _script(
        bin_dir / "podman",
        'case "$1 $2" in\n'
        '  "image exists") [ "${REALHOST_PRESENT:-0}" = 1 ]; exit ;;\n'
        '  "container exists") exit 1 ;;\n'
        "esac\nexit 0\n",
    )
    # molecule test -s NAME: records NAME, fails the scenarios named in FAIL
    _script(
        bin_dir / "molecule",
        'echo "$3" >>"$MOLECULE_CALLS"\n'
        'echo "stand-in molecule: $3"\n'
        '[[ " ${FAIL:-} " == *" $3 "* ]] && exit 1\nexit 0\n',
    )
    return repo


def _run(repo: Path, **env: str) -> tuple[int, str, list[str]]:
    calls = repo.parent / "calls"
    calls.touch()
    # not the suite's own settings: one port would mean one lane, and SUITE_* move the output
    unset = ("CI", "SUITE_TIMES", "SUITE_WHY", "SGLANG_TESTHOST_PORT")
    environ = {k: v for k, v in os.environ.items() if k not in unset}
    environ.update(
        PATH=f"{repo.parent / 'bin'}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}"
        + os.environ["PATH"],
        MOLECULE_CALLS=str(calls),
        MOLECULE_JOBS="3",
        **env,
    )
    proc = subprocess.run(
        ["bash", "scripts/molecule-all.sh"],
        cwd=repo,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = proc.stdout + proc.stderr
    return proc.returncode, out, calls.read_text(encoding="utf-8").split()


def _lanes(out: str) -> list[list[str]]:
    return [line.split() for line in re.findall(r"^=== lane \d+ \([^)]*\): (.*)$", out, re.M)]


def test_while_the_image_builds_its_lane_runs_the_shortest_scenarios_first(tree: Path) -> None:
    rc, out, calls = _run(tree)
    assert rc == 0, out
    assert sorted(_lanes(out)) == sorted([["s1", "s2", "big"], ["x"], ["y"]]), out
    assert "real-SGLang host image ready after" in out
    assert sorted(calls) == sorted(SCENARIOS)
    assert "molecule: 5 passed, 0 failed" in out


def test_with_the_image_there_lanes_are_longest_first(tree: Path) -> None:
    rc, out, calls = _run(tree, REALHOST_PRESENT="1")
    assert rc == 0, out
    assert sorted(_lanes(out)) == sorted([["big"], ["x"], ["y", "s2", "s1"]]), out
    assert sorted(calls) == sorted(SCENARIOS)


def test_a_failed_image_build_fails_only_the_scenarios_on_it(tree: Path) -> None:
    rc, out, calls = _run(tree, BUILD_FAILS="1", FAIL="x")
    assert rc != 0
    # the build's own output, and its verdict, in the log
    assert "stand-in build: step 1" in out
    assert "real-SGLang host image did not build: big cannot run" in out, out
    assert "=== big: FAILED (its host image did not build)" in out
    # the part of the log sure to be shown says why big failed, with the build's last lines
    why = out[out.index("=== big: why it failed") :]
    assert "its host image localhost/sglang-realhost:cpu did not build" in why
    assert "stand-in build: step 1" in why
    assert "No such file" not in out, out
    # big never ran; the others did, and x's own failure is reported beside it
    assert "big" not in calls and sorted(calls) == ["s1", "s2", "x", "y"]
    assert "molecule: 3 passed, 2 failed" in out
    assert re.search(r"molecule-all: failed: .*\bbig\b", out)
    assert re.search(r"molecule-all: failed: .*\bx\b", out)
