"""The host's bench venv is reinstalled when what goes into its wheel changes, and only then."""

from __future__ import annotations

import shutil
from pathlib import Path

from sweep.wheelhouse import source_hash

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
    append(project / "sweep" / "plots.py", "\n# a plot tweak\n")
    append(project / "sweep" / "plan.py", "\nEXTRA = 1\n")
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

    from sweep.wheelhouse import archive

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
