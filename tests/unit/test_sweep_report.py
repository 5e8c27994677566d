"""sweep.report: every point x cell, speed-up vs the baseline, best point, failures, plots."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from test_sweep_fakes import write_records

from bench.records import write_json
from sweep import layout
from sweep.report import write_report


def _point(sweep: Path, pid: str, server: dict, throughput: float, accept: float | None) -> None:
    write_records(sweep / pid / "records", throughput, accept)
    write_json(
        sweep / pid / layout.POINT_FILE,
        {"status": "complete", "server": server, "baseline": server["algorithm"] == "NONE"},
    )


def _csv(path: str) -> list[dict[str, str]]:
    return list(csv.DictReader(Path(path).read_text().splitlines()))


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    s = tmp_path / "demo"
    base = {"algorithm": "NONE", "budget": 16, "topk": 4, "window": 2048}
    _point(s, "baseline", base, 50.0, None)
    _point(s, "ddtree-b4-k4-w2048", {**base, "algorithm": "DDTREE", "budget": 4}, 100.0, 3.0)
    _point(s, "ddtree-b8-k4-w2048", {**base, "algorithm": "DDTREE", "budget": 8}, 150.0, 4.5)
    write_json(
        s / "ddtree-b16-k4-w2048" / layout.FAILURE_FILE,
        {
            "status": "failed",
            "server": {**base, "algorithm": "DDTREE"},
            "reason": "unit entered failed state",
            "journal": ["Traceback: crash_loading"],
            "attempt": 1,
        },
    )
    write_json(
        s / layout.SWEEP_FILE,
        {"points": [{"id": "ddtree-b2-k4-w2048", "server": {"algorithm": "DDTREE"}}]},
    )
    return s


def test_summary_csv_has_every_point_x_cell_with_speedups(sweep: Path) -> None:
    out = write_report(sweep, with_plots=False)
    rows = _csv(out["summary"])
    complete = [r for r in rows if r["status"] == "complete"]
    assert len(complete) == 3 * 4
    b8 = [r for r in complete if r["point"] == "ddtree-b8-k4-w2048"]
    assert {float(r["speedup"]) for r in b8} == {3.0}
    assert {float(r["accept_length"]) for r in b8} == {4.5}
    assert {r["budget"] for r in rows if r["point"] == "baseline"} == {""}
    status = {r["point"]: r["status"] for r in rows}
    assert status["ddtree-b16-k4-w2048"] == "failed"
    assert status["ddtree-b2-k4-w2048"] == "not run"


def test_markdown_has_best_points_and_failures(sweep: Path) -> None:
    out = write_report(sweep, with_plots=False)
    md = Path(out["report"]).read_text()
    assert "3 of 5 points complete, 1 failed, 1 not run" in md
    best = md.split("## Best point")[1].split("##")[0]
    assert best.count("ddtree-b8-k4-w2048") == 4  # one per context x concurrency
    assert "crash_loading" in md and "unit entered failed state" in md
    assert len(out["best"]) == 4


def test_rows_with_failed_requests_are_never_best(tmp_path: Path) -> None:
    s = tmp_path / "s"
    base = {"algorithm": "NONE", "budget": 16, "topk": 4, "window": 2048}
    _point(s, "baseline", base, 50.0, None)
    write_records(s / "fast" / "records", 500.0, 5.0, failed=1)
    write_json(s / "fast" / layout.POINT_FILE, {"status": "complete", "server": base})
    md = Path(write_report(s, with_plots=False)["report"]).read_text()
    assert "| NO |" in md
    assert "fast" not in md.split("## Best point")[1]


def test_plots_are_pngs(sweep: Path) -> None:
    out = write_report(sweep, with_plots=True)
    assert len(out["plots"]) == 2
    for p in out["plots"]:
        assert Path(p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_partial_sweep_without_baseline_has_no_speedups(tmp_path: Path) -> None:
    s = tmp_path / "s"
    _point(s, "x", {"algorithm": "DDTREE", "budget": 4, "topk": 4, "window": 2048}, 80.0, 3.0)
    rows = _csv(write_report(s, with_plots=True)["summary"])
    assert rows and all(r["speedup"] == "" for r in rows)


def test_report_lists_the_latest_runs_points_that_are_not_complete(sweep: Path) -> None:
    write_json(
        sweep / layout.SWEEP_FILE,
        {"runs": [{"points": ["baseline", "ddtree-b16-k4-w2048", "ddtree-b2-k4-w2048"]}]},
    )
    out = write_report(sweep, with_plots=False)
    assert out["incomplete"] == ["ddtree-b16-k4-w2048", "ddtree-b2-k4-w2048"]
