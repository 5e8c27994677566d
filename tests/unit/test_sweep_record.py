"""sweep.store.record: a point appears whole or not at all; failures are retried and counted."""

from __future__ import annotations

import io
import json
import stat
import tarfile
from pathlib import Path
from typing import Any

import pytest
from test_sweep_fakes import archive, evil_archive, info

from sweep import layout
from sweep.store import record

SERVER = {"algorithm": "DDTREE", "budget": 8, "topk": 4, "window": 2048, "env": {}}


def test_finish_point_writes_the_files_and_marker(tmp_path: Path) -> None:
    sweep = tmp_path / "s"
    arc = archive(tmp_path, 100.0, 4.0)
    target = record.finish_point(sweep, arc, info("p", SERVER, started=1000.0))
    assert target == sweep / "p"
    for name in ("server_info.json", "sglang.service", "journal.log", "records/summary.csv"):
        assert (target / name).is_file(), name
    point = json.loads((target / "point.json").read_text())
    assert point["status"] == "complete"
    assert len(point["cells"]) == 4
    assert point["timings"]["bench_s"] == pytest.approx(20.5)
    assert point["timings"]["load_s"] == pytest.approx(6.0)
    t = point["timings"]
    assert t["overhead_s"] == pytest.approx(t["wall_s"] - 26.5, abs=0.01)
    assert layout.point_status(sweep, "p") == "complete"
    assert not any((sweep / layout.STAGING).iterdir())
    assert not arc.exists()


def test_the_benchs_decisions_on_more_repetitions_are_kept_and_are_no_cell(
    tmp_path: Path,
) -> None:
    more = {"rule": {"objective": "throughput"}, "steps": [{"repetitions": 1, "more": False}]}
    arc = archive(tmp_path, 100.0, 4.0, more=more)
    target = record.finish_point(tmp_path / "s", arc, info("p", SERVER, started=1000.0))
    assert json.loads((target / "records" / "more.json").read_text()) == more
    cells = json.loads((target / "point.json").read_text())["cells"]
    assert len(cells) == 4 and "more" not in cells


def test_an_archive_without_records_is_not_a_point(tmp_path: Path) -> None:
    import tarfile

    empty = tmp_path / "empty.tar.gz"
    with tarfile.open(empty, "w:gz"):
        pass
    with pytest.raises(record.RecordError, match="no bench records"):
        record.finish_point(tmp_path / "s", empty, info("p", SERVER, 0.0))
    assert layout.point_status(tmp_path / "s", "p") == "pending"


def test_members_escaping_the_point_are_refused(tmp_path: Path) -> None:
    with pytest.raises(record.RecordError, match="refusing"):
        record.finish_point(tmp_path / "s", evil_archive(tmp_path), info("p", SERVER, 0.0))
    assert not (tmp_path / "s" / "escape.txt").exists()


def test_failure_then_success(tmp_path: Path) -> None:
    sweep = tmp_path / "s"
    fail = info("p", SERVER, 0.0, reason="server crashed", journal="a\nb\n", task="wait")
    record.fail_point(sweep, {**fail, "host_class": "8x H200"})
    # the class a verdict holds on (sweep/store/failures.py failure_of)
    assert json.loads((sweep / "p" / "failure.json").read_text())["host_class"] == "8x H200"
    record.fail_point(sweep, fail)
    failure = json.loads((sweep / "p" / "failure.json").read_text())
    assert failure["attempt"] == 2
    assert failure["host_class"] == ""  # the second attempt's host published none
    assert failure["journal"] == ["a", "b"]
    assert layout.point_status(sweep, "p") == "failed"
    # the plan's one reading of the directories (layout.recorded) says the same
    (sweep / "q").mkdir()
    (sweep / "q" / "failure.json").write_text("{not json")  # unreadable: failed all the same
    seen = layout.recorded(sweep, ["p", "q", "r"])
    assert (seen["p"].dir, seen["p"].failure["attempt"]) == (sweep / "p", 2)
    assert seen["p"].failed_at == failure["timings"]["finished"] > 0
    assert [seen[x].status for x in "pqr"] == ["failed", "failed", "pending"]
    assert (seen["q"].failure, seen["q"].failed_at, seen["r"].point) == ({}, 0.0, {})
    record.finish_point(sweep, archive(tmp_path, 100.0, 4.0), info("p", SERVER, 0.0))
    assert layout.point_status(sweep, "p") == "complete"
    assert not (sweep / "p" / "failure.json").exists()
    assert json.loads((sweep / "p" / "point.json").read_text())["failed_attempts"] == 2
    assert len(list((sweep / layout.ATTEMPTS).iterdir())) == 1


def test_staging_left_by_a_killed_run_is_cleared_and_not_a_point(tmp_path: Path) -> None:
    sweep = tmp_path / "s"
    half = sweep / layout.STAGING / "p.123"
    half.mkdir(parents=True)
    (half / "point.json").write_text('{"status": "complete"}')
    assert layout.point_status(sweep, "p") == "pending"
    layout.clear_staging(sweep)
    assert not (sweep / layout.STAGING).exists()


def test_load_info_needs_a_point_id() -> None:
    with pytest.raises(record.RecordError):
        record.load_info('{"point": {}}')
    assert record.load_info('{"point": {"id": "x"}}')["point"]["id"] == "x"


def _tar_with(tmp: Path, *members: tuple[str, bytes | None, Any]) -> Path:
    """An archive of the bench's records plus `members`: (name, data or None, TarInfo setup)."""
    path = tmp / "odd.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        records = tarfile.TarInfo("records/c.json")
        records.size = 2
        tar.addfile(records, io.BytesIO(b"{}"))
        for name, data, setup in members:
            m = tarfile.TarInfo(name)
            setup(m)
            if data is not None:
                m.size = len(data)
            tar.addfile(m, io.BytesIO(data) if data is not None else None)
    return path


def _kind(kind: bytes, linkname: str = "") -> Any:
    def setup(m: tarfile.TarInfo) -> None:
        m.type, m.linkname = kind, linkname

    return setup


@pytest.mark.parametrize(
    "name, data, setup",
    [
        ("../escape.txt", b"x", _kind(tarfile.REGTYPE)),
        ("/tmp/absolute.txt", b"x", _kind(tarfile.REGTYPE)),
        ("records/../../escape.txt", b"x", _kind(tarfile.REGTYPE)),
        ("link", None, _kind(tarfile.SYMTYPE, "records/c.json")),  # inside: still refused
        ("out", None, _kind(tarfile.SYMTYPE, "/etc/passwd")),
        ("hard", None, _kind(tarfile.LNKTYPE, "records/c.json")),
        ("dev", None, _kind(tarfile.CHRTYPE)),
        ("fifo", None, _kind(tarfile.FIFOTYPE)),
    ],
    ids=["parent", "absolute", "dotdot", "symlink", "symlink-out", "hardlink", "device", "fifo"],
)
def test_archive_members_other_than_plain_files_inside_are_refused(
    tmp_path: Path, name: str, data: bytes | None, setup: Any
) -> None:
    arc = _tar_with(tmp_path, (name, data, setup))
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(record.RecordError, match="refusing member"):
        record.extract(arc, dest)
    assert not any(dest.iterdir())  # refused before anything was extracted
    assert not (tmp_path / "escape.txt").exists()
    sweep = tmp_path / "s"
    with pytest.raises(record.RecordError, match="refusing member"):
        record.finish_point(sweep, arc, info("p", SERVER, 0.0))
    assert layout.point_status(sweep, "p") == "pending"
    assert not any((sweep / layout.STAGING).iterdir())


def test_extraction_takes_python_s_data_filter_modes(tmp_path: Path) -> None:
    def setuid(m: tarfile.TarInfo) -> None:
        m.mode = 0o6777

    arc = _tar_with(tmp_path, ("journal.log", b"ready\n", setuid))
    dest = tmp_path / "dest"
    dest.mkdir()
    record.extract(arc, dest)
    assert (dest / "journal.log").read_bytes() == b"ready\n"
    # no set-id bits, no write for group or others (tarfile's data filter)
    assert stat.S_IMODE((dest / "journal.log").stat().st_mode) == 0o755
