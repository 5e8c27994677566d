"""sweep.report.plots: error bars from the intervals, and the budget x topk speed-up heatmap."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

from sweep.report import plots

PNG = b"\x89PNG\r\n\x1a\n"


def _size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _row(
    budget: int | None,
    topk: int | None,
    speedup: float | None,
    *,
    algorithm: str = "DDTREE",
    window: int | None = 2048,
    context: int = 512,
    concurrency: int = 1,
    ci: bool = True,
) -> dict[str, Any]:
    tput = 100.0 * (speedup or 1.0)
    return {
        "point": f"{algorithm}-b{budget}-k{topk}-w{window}",
        "algorithm": algorithm,
        "budget": budget,
        "topk": topk,
        "window": window,
        "cell": f"ctx{context}-c{concurrency}",
        "context": context,
        "concurrency": concurrency,
        "output_len": 64,
        "category": "random",
        "repetitions": 3 if ci else 1,
        "output_throughput": tput,
        "output_throughput_mean": tput,
        "output_throughput_ci_low": tput - 5.0 if ci else None,
        "output_throughput_ci_high": tput + 5.0 if ci else None,
        "speedup": speedup,
        "speedup_mean_ratio": speedup,
        "speedup_ci_low": speedup - 0.1 if ci and speedup else None,
        "speedup_ci_high": speedup + 0.1 if ci and speedup else None,
    }


def _grid_rows(windows: tuple[int, ...] = (2048,), ci: bool = True) -> list[dict[str, Any]]:
    base = [
        _row(None, None, 1.0, algorithm="NONE", window=None, context=c, concurrency=k, ci=ci)
        for c in (512, 4096)
        for k in (1, 8)
    ]
    spec = [
        _row(b, t, 1.0 + b * t / 32, window=w, context=c, concurrency=k, ci=ci)
        for w in windows
        for b in (4, 8)
        for t in (2, 4)
        for c in (512, 4096)
        for k in (1, 8)
    ]
    return base + spec


def test_heatmap_for_a_2x2_budget_topk_grid_with_baseline(tmp_path: Path) -> None:
    path = tmp_path / plots.HEATMAP_PNG
    assert plots.heatmap_plot(_grid_rows(), path)
    one_window = _size(path)
    assert plots.heatmap_plot(_grid_rows(windows=(1024, 2048)), path)
    two_windows = _size(path)
    # the window is a facet: a second window adds a row of panels, no column
    assert two_windows[0] == pytest.approx(one_window[0], abs=4)
    assert two_windows[1] > 1.8 * one_window[1]


def test_heatmap_annotates_value_and_interval() -> None:
    assert plots._annotation(_row(4, 2, 1.25)) == "1.25\n[1.15, 1.35]"
    assert plots._annotation(_row(4, 2, 1.25, ci=False)) == "1.25\nn=1"


def test_no_heatmap_without_baseline_and_no_crash(tmp_path: Path) -> None:
    rows = [{**r, "speedup": None, "speedup_mean_ratio": None} for r in _grid_rows()]
    rows = [r for r in rows if r["algorithm"] != "NONE"]
    assert plots.write_plots(tmp_path, rows) == [plots.THROUGHPUT_PNG]
    assert not (tmp_path / plots.HEATMAP_PNG).exists()


def test_single_point_single_repetition_and_gaps(tmp_path: Path) -> None:
    # one speculative point, n=1 (no intervals), the other budget x topk pairs untested
    rows = [_row(None, None, 1.0, algorithm="NONE", window=None, ci=False)]
    rows.append(_row(8, 4, 1.7, ci=False))
    names = plots.write_plots(tmp_path, rows)
    assert names == [plots.SPEEDUP_PNG, plots.THROUGHPUT_PNG, plots.HEATMAP_PNG]
    for n in names:
        assert (tmp_path / n).read_bytes()[:8] == PNG
    # a grid with a missing pair and a slower-than-baseline cell
    rows = [_row(4, 2, 0.8), _row(8, 4, 1.3), _row(8, 2, 1.1, context=4096)]
    rows.append(_row(8, 4, 1.2, concurrency=8))  # ctx 4096 c 8: an empty panel
    assert plots.heatmap_plot(rows, tmp_path / "gaps.png")
    # nothing at all, or only the baseline
    assert plots.write_plots(tmp_path / "empty", []) == []
    base_only = [_row(None, None, 1.0, algorithm="NONE", window=None, ci=False)]
    (tmp_path / "b").mkdir()
    assert plots.write_plots(tmp_path / "b", base_only) == [plots.THROUGHPUT_PNG]


def test_series_carry_error_bars() -> None:
    rows = [_row(4, 2, 1.25), _row(8, 2, 1.5, ci=False)]
    [(key, pts)] = plots._series(
        rows, 512, ("algorithm", "topk"), "budget", "speedup_mean_ratio", "speedup"
    )
    assert key == ("DDTREE", 2)
    assert pts[0] == (4, 1.25, pytest.approx(0.1), pytest.approx(0.1))
    assert pts[1] == (8, 1.5, 0.0, 0.0)


def test_open_loop_cells_are_plotted_against_their_request_rate(tmp_path: Path) -> None:
    """An open-loop cell's load is its offered rate: it gets the rate plot, not the concurrency
    one (whose x axis it has no place on); a sweep with no open-loop cell gets no rate plot."""
    closed = _grid_rows()
    opened = []
    for rate, tput in ((0.5, 50.0), (2.0, 180.0), (8.0, 420.0)):
        for point in ("baseline", "ddtree-b8-k4-w2048"):
            opened.append(
                {
                    **_row(8, 4, None),
                    "point": point,
                    "cell": f"ctx512-rate{rate:g}",
                    "concurrency": None,
                    "request_rate": rate,
                    "output_throughput_mean": tput,
                    "output_throughput_ci_low": tput - 4.0,
                    "output_throughput_ci_high": tput + 4.0,
                }
            )
    assert plots.rate_plot(closed + opened, tmp_path / "rate.png")
    assert _size(tmp_path / "rate.png")[0] > 0
    assert not plots.rate_plot(closed, tmp_path / "none.png")
    assert not (tmp_path / "none.png").exists()
    assert plots.throughput_plot(closed + opened, tmp_path / "conc.png")
    assert not plots.throughput_plot(opened, tmp_path / "conc-none.png")
    names = plots.write_plots(tmp_path, closed + opened)
    assert plots.RATE_PNG in names and plots.THROUGHPUT_PNG in names
