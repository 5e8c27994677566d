"""sweep.store.progress: done/total, elapsed and an ETA from measured load and bench times."""

from __future__ import annotations

import json
from pathlib import Path

from bench.records import write_json
from sweep import layout
from sweep.store import progress


def _sweep(tmp: Path, ids: list[str], started: float, hosts: int = 1) -> Path:
    sweep = tmp / "s"
    slices = {f"h{i}": ids[i::hosts] for i in range(hosts)}
    write_json(
        sweep / layout.SWEEP_FILE,
        {"name": "s", "runs": [{"started": started, "points": ids, "hosts": slices}]},
    )
    return sweep


def _done(sweep: Path, pid: str, finished: float, load: float, bench: float, over: float) -> None:
    write_json(
        sweep / pid / layout.POINT_FILE,
        {
            "status": "complete",
            "timings": {
                "finished": finished,
                "restarted": True,
                "load_s": load,
                "bench_s": bench,
                "overhead_s": over,
                "wall_s": load + bench + over,
            },
        },
    )


def test_eta_from_measured_times() -> None:
    t = [
        {"restarted": True, "load_s": 10.0, "bench_s": 20.0, "overhead_s": 2.0},
        {"restarted": False, "load_s": 0.5, "bench_s": 40.0, "overhead_s": 4.0},
    ]
    # load: only restarted points count (10); bench mean 30; overhead mean 3
    assert progress.estimate_per_point(t) == 43.0
    assert progress.estimate_per_point([]) is None


def test_line_counts_done_and_estimates_the_rest(tmp_path: Path) -> None:
    sweep = _sweep(tmp_path, ["a", "b", "c", "d"], started=1000.0, hosts=2)
    _done(sweep, "a", 1100.0, 60.0, 30.0, 10.0)
    write_json(sweep / "b" / layout.FAILURE_FILE, {"timings": {"finished": 1200.0}, "reason": "x"})
    snap = progress.snapshot(sweep, now=1300.0)
    assert (snap["done"], snap["total"], snap["failed"], snap["remaining"]) == (2, 4, 1, 2)
    assert snap["elapsed_s"] == 300.0
    assert snap["eta_s"] == 2 * 100.0 / 2  # two points of 100 s each, two hosts
    line = progress.line(sweep, "a", now=1300.0)
    assert "2/4 done (1 failed)" in line and "a complete in 1m40s" in line
    assert "ETA 1m40s" in line
    write_json(
        sweep / "b" / layout.FAILURE_FILE,
        {"timings": {"finished": 1200.0, "wall_s": 8.0}, "reason": "x", "cause": "out of memory"},
    )
    # a failed start: its seconds to failure, no load or bench split it never had
    assert "| b failed after 8s: out of memory: x |" in progress.line(sweep, "b", now=1300.0)


def test_failures_of_earlier_runs_are_not_done(tmp_path: Path) -> None:
    sweep = _sweep(tmp_path, ["a"], started=1000.0)
    write_json(sweep / "a" / layout.FAILURE_FILE, {"timings": {"finished": 500.0}})
    snap = progress.snapshot(sweep, now=1010.0)
    assert snap["done"] == 0 and snap["eta_s"] is None
    assert "ETA ?" in progress.line(sweep, now=1010.0)


def test_log_gets_whole_lines(tmp_path: Path) -> None:
    progress.append(tmp_path, "one")
    progress.append(tmp_path, "two\n")
    assert (tmp_path / layout.PROGRESS_LOG).read_text() == "one\ntwo\n"


def test_durations() -> None:
    assert progress.fmt_duration(None) == "?"
    assert progress.fmt_duration(59.4) == "59s"
    assert progress.fmt_duration(61) == "1m01s"
    assert progress.fmt_duration(3 * 3600 + 120) == "3h02m"
    assert json.dumps(progress.fmt_duration(0)) == '"0s"'
