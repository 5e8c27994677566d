"""library/sglang_file.py: a small file written from given content, in one module call."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
from sglang_host_loader import ROOT, load, run_module

m = load("sglang_file", ROOT / "library" / "sglang_file.py")

UNIT = "[Unit]\nDescription=SGLang\n\n[Service]\nExecStart=/bin/true\n"


def run(monkeypatch: pytest.MonkeyPatch, **args: Any) -> tuple[dict[str, Any], bool]:
    return run_module(m, args, monkeypatch)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_writes_then_leaves_an_equal_file_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unit = tmp_path / "sglang.service"
    result, failed = run(monkeypatch, path=str(unit), content=UNIT, mode="0644")
    assert not failed and result["changed"] and result["content_changed"]
    assert unit.read_text() == UNIT and mode(unit) == 0o644
    inode = unit.stat().st_ino
    result, failed = run(monkeypatch, path=str(unit), content=UNIT, mode="0644")
    assert not failed and not result["changed"] and not result["content_changed"]
    assert unit.stat().st_ino == inode  # not rewritten
    assert [p.name for p in tmp_path.iterdir()] == ["sglang.service"]  # no temporary left


def test_new_content_replaces_the_file_and_attributes_are_enforced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unit = tmp_path / "sglang.service"
    unit.write_text(UNIT)
    unit.chmod(0o600)
    result, _ = run(monkeypatch, path=str(unit), content=UNIT, mode="0644")
    assert result["changed"] and not result["content_changed"] and mode(unit) == 0o644
    result, _ = run(monkeypatch, path=str(unit), content=UNIT + "Restart=always\n", mode="0644")
    assert result["changed"] and result["content_changed"]
    assert unit.read_text().endswith("Restart=always\n")


def test_check_mode_reports_without_writing_and_diff_shows_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    unit = tmp_path / "sglang.service"
    flags = {"_ansible_check_mode": True, "_ansible_diff": True}
    result, _ = run(monkeypatch, path=str(unit), content=UNIT, mode="0644", **flags)
    assert result["changed"] and not unit.exists()
    assert result["diff"]["before_header"] == "(absent)" and result["diff"]["after"] == UNIT
    unit.write_text("old\n")
    result, _ = run(monkeypatch, path=str(unit), content=UNIT, **flags)
    assert result["changed"] and unit.read_text() == "old\n"
    assert result["diff"]["before"] == "old\n"
    unit.write_text(UNIT)
    os.chmod(unit, 0o644)
    result, _ = run(monkeypatch, path=str(unit), content=UNIT, mode="0644", **flags)
    assert not result["changed"]


def test_a_missing_directory_or_a_directory_path_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, failed = run(monkeypatch, path=str(tmp_path / "nope" / "x.service"), content=UNIT)
    assert failed and "its directory" in result["msg"] and str(tmp_path / "nope") in result["msg"]
    result, failed = run(monkeypatch, path=str(tmp_path), content=UNIT)
    assert failed and result["msg"] == f"path={tmp_path}: is a directory"
