"""sweep.runner: -e parsing like ansible-playbook, and status read from the artifacts."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweep import runner


def test_extravars_like_ansible_playbook() -> None:
    got = runner.parse_extravars(['{"budget": [4, 8]}', "topk=2,4", "sweep_name=a=b"])
    assert got == {"budget": [4, 8], "topk": "2,4", "sweep_name": "a=b"}
    with pytest.raises(ValueError, match="key=value"):
        runner.parse_extravars(["budget"])


def test_status_from_artifacts(tmp_path: Path) -> None:
    assert runner.status(tmp_path, "x")["state"] == "unknown"
    art = tmp_path / "artifacts" / "x"
    art.mkdir(parents=True)
    assert runner.status(tmp_path, "x")["state"] == "running"
    (art / "stdout").write_text(
        "TASK [x]\n    msg: '[2026-01-01 10:00:00] sweep s: 1/3 done | elapsed 5s | ETA 10s'\n"
        "    msg: '[2026-01-01 10:01:00] sweep s: 2/3 done | elapsed 65s | ETA 5s'\n"
    )
    (art / "status").write_text("failed")
    (art / "rc").write_text("2")
    st = runner.status(tmp_path, "x")
    assert (st["state"], st["rc"]) == ("failed", 2)
    assert st["last_progress"].startswith("[2026-01-01 10:01:00] sweep s: 2/3 done")
