"""The host's bench venv is reinstalled when what goes into its wheel changes, and only then."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sweep.store.wheelhouse import source_hash

REPO = Path(__file__).resolve().parents[2]


def project_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "project"
    for name in ("bench", "sweep"):
        shutil.copytree(REPO / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", dest / "pyproject.toml")
    return dest


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def test_controller_code_and_tool_config_leave_the_host_wheelhouse_alone(tmp_path: Path) -> None:
    project = project_copy(tmp_path)
    before = source_hash(project)
    append(project / "sweep" / "report" / "plots.py", "\n# a plot tweak\n")
    append(project / "sweep" / "cli" / "plan.py", "\nEXTRA = 1\n")
    append(project / "pyproject.toml", '\n[tool.other]\nkey = "value"\n')
    assert source_hash(project) == before


def test_host_code_or_the_wheels_build_tables_make_a_new_wheelhouse(tmp_path: Path) -> None:
    project = project_copy(tmp_path)
    before = source_hash(project)
    append(project / "bench" / "metrics.py", "\n# a metric change\n")
    after_code = source_hash(project)
    assert after_code != before
    text = (project / "pyproject.toml").read_text()
    (project / "pyproject.toml").write_text(text.replace('version = "0.1.0"', 'version = "0.1.1"'))
    assert source_hash(project) != after_code


def test_the_archive_holds_every_wheel_flat_and_is_written_once(tmp_path: Path) -> None:
    import tarfile

    from sweep.store.wheelhouse import archive

    wh = tmp_path / "abc-cp311-x86_64"
    wh.mkdir()
    for name in ("COMPLETE", "pip-26.3-py3-none-any.whl", "x-1.0-py3-none-any.whl"):
        (wh / name).write_text(name)
    path = archive(wh)
    assert path == tmp_path / "abc-cp311-x86_64.tar"
    with tarfile.open(path) as tar:
        assert sorted(tar.getnames()) == sorted(p.name for p in wh.iterdir())
        assert tar.extractfile("x-1.0-py3-none-any.whl").read() == b"x-1.0-py3-none-any.whl"
    stamp = path.stat().st_mtime_ns
    assert archive(wh) == path and path.stat().st_mtime_ns == stamp
    assert not list(tmp_path.glob(".*"))  # no temporary file left


def test_builds_at_once_take_turns_in_the_shared_source_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two Pythons' wheelhouses built at once (two hosts of one sweep, or two controllers) run
    setuptools in the same source tree, whose build/ both would write: they take turns, and a
    build that waited for one of the same name uses it."""
    import subprocess
    import threading
    import time

    from sweep.store import wheelhouse

    active: list[int] = []
    overlaps: list[int] = []
    calls: list[str] = []
    guard = threading.Lock()

    def fake_run(cmd: list[str], check: bool) -> subprocess.CompletedProcess[bytes]:
        with guard:
            active.append(1)
            overlaps.append(len(active))
            calls.append(cmd[3])
        time.sleep(0.2)
        out = Path(cmd[cmd.index("-w" if cmd[3] == "wheel" else "-d") + 1])
        name = "sglang_specbench-0.1.0-py3-none-any.whl" if cmd[3] == "wheel" else "pip-1.whl"
        (out / name).write_text("wheel")
        with guard:
            active.pop()
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(wheelhouse.subprocess, "run", fake_run)
    project, cache = project_copy(tmp_path), tmp_path / "cache"
    results: list[tuple[Path, bool]] = []
    versions = ["3.11.7", "3.12.1", "3.11.9"]  # the last is the first's wheelhouse (3.11)
    threads = [
        threading.Thread(
            target=lambda v=v: results.append(wheelhouse.build(project, cache, v, "x86_64"))
        )
        for v in versions
    ]
    for t in threads:
        t.start()
        time.sleep(0.05)
    for t in threads:
        t.join()
    assert max(overlaps) == 1, overlaps
    assert calls.count("wheel") == 2  # 3.11 and 3.12, the second 3.11 waited and reused
    assert sorted(built for _, built in results) == [False, True, True]
    assert all((path / "COMPLETE").is_file() for path, _ in results)
