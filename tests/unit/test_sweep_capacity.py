"""Capacity and load in the report (sweep/report/capacity.py): ranking by brackets, speed-up by
offered load against the baseline, the crossover, and the report's section."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from bench.records import write_cell
from sweep.report import capacity
from sweep.report.capacity import Capacity, crossover, rank
from sweep.results.results import PointResult


def _cap(point: str, low: float | None, high: float | None, settled: bool = True) -> Capacity:
    return Capacity(
        point,
        "ctx64-capacity-out8-chat-r0",
        low if settled else None,
        low,
        high,
        settled,
        "",
        5,
        {"tpot_ms": 40.0, "share": 0.9},
    )


def test_a_clear_winner_is_above_every_other_bracket():
    ranked = rank([_cap("a", 4.0, 4.2), _cap("b", 6.0, 6.3), _cap("c", 2.0, 2.1)])
    group = ranked["ctx64-capacity-out8-chat-r0"]
    assert [c.point_id for c in group] == ["b", "a", "c"]
    assert [c.verdict for c in group] == ["winner", "", ""]


def test_overlapping_brackets_tie():
    group = rank([_cap("a", 5.9, 6.2), _cap("b", 6.0, 6.3), _cap("c", 2.0, 2.1)])[
        "ctx64-capacity-out8-chat-r0"
    ]
    assert {c.point_id: c.verdict for c in group} == {"b": "tie", "a": "tie", "c": ""}


def test_an_unsettled_best_never_wins_alone_and_refused_points_never_take_part():
    group = rank([_cap("a", 8.0, None, settled=False), _cap("b", 2.0, 2.1)])[
        "ctx64-capacity-out8-chat-r0"
    ]
    assert [c.verdict for c in group] == ["tie", ""]
    group = rank([_cap("a", 8.0, 8.2), _cap("b", 2.0, 2.1)], excluded={"a"})[
        "ctx64-capacity-out8-chat-r0"
    ]
    assert {c.point_id: c.verdict for c in group} == {"a": "", "b": "winner"}


def test_the_crossover_is_interpolated_on_a_log_rate_scale():
    # 1.5x at 2 req/s, 0.5x at 8: the speed-up falls through 1 halfway, at 4 req/s
    assert crossover([1.0, 2.0, 8.0], [2.0, 1.5, 0.5], limit=100) == pytest.approx(4.0)
    assert crossover([1.0, 2.0], [0.9, 0.8], limit=100) == 1.0  # slower from the first rate
    assert crossover([1.0, 2.0, 4.0], [1.5, 1.2, 1.1], limit=100) is None
    # a loss above the point's capacity is not its crossover
    assert crossover([1.0, 2.0, 8.0], [2.0, 1.5, 0.5], limit=3.5) is None


def _write_point(
    root: Path,
    pid: str,
    tpot_by_rate: dict[float, float],
    caps: list[dict[str, Any]],
    invalid: tuple[float, ...] = (),
) -> None:
    records = root / pid / "records"
    records.mkdir(parents=True)
    for rate, tpot in tpot_by_rate.items():
        label = f"{rate:g}"
        cid = f"ctx64-rate{label}-out8-chat-r0"
        cell = {"cell_id": cid, "request_rate": rate}
        summary = {"tpot_ms": {"median": tpot}, "valid": rate not in invalid}
        write_cell(records, cid, {"cell": cell, "summary": summary}, [])
    (records / "capacity.json").write_text(json.dumps(caps))


def _point(pid: str, baseline: bool = False) -> PointResult:
    return PointResult(pid, "complete", {}, baseline, {})


def test_speed_up_by_load_from_the_same_cells_as_the_baseline(tmp_path):
    trials = [
        {
            "capacity_id": "ctx64-capacity-out8-chat-r0",
            "capacity": 6.0,
            "bracket": [6.0, 6.2],
            "settled": True,
            "reason": "bracket within 5%",
            "trials": [{}] * 6,
            "slo": {"ttft_ms": None, "tpot_ms": 40.0, "share": 0.9},
        }
    ]
    _write_point(tmp_path, "baseline", {1: 20.0, 2: 21.0, 4: 24.0, 8: 30.0}, trials)
    # faster at low load, slower from 4 req/s on; 8 req/s was invalid (the client fell behind)
    _write_point(
        tmp_path,
        "spec",
        {1: 10.0, 2: 14.0, 4: 30.0, 8: 10.0, 16: 50.0},
        [{**trials[0], "capacity": 3.9, "bracket": [3.9, 4.1]}],
        invalid=(8,),
    )
    points = [_point("baseline", True), _point("spec")]
    caps = capacity.capacities(tmp_path, points)
    (curve,) = capacity.curves(tmp_path, points, caps, {"spec": "baseline", "baseline": "baseline"})
    assert curve.series == "ctx64-out8-chat-r0"
    assert curve.rates == [1.0, 2.0, 4.0]  # 8 invalid, 16 without a baseline cell
    assert curve.speedups == pytest.approx([2.0, 1.5, 0.8])
    expected = math.exp(math.log(2) + (0.5 / 0.7) * (math.log(4) - math.log(2)))
    assert curve.crossover == pytest.approx(expected)
    assert curve.limit == 3.9

    lines, best, plots = capacity.section(tmp_path, points, {"spec": "baseline"}, set(), True)
    text = "\n".join(lines)
    assert "TPOT <= 40 ms for 90% of requests" in text
    assert "| baseline | 6 | [6, 6.2] | 6 | winner |" in text
    assert f"| spec | ctx64-out8-chat-r0 | 2.00x | 1.50x | 0.80x | {expected:.3g} req/s |" in text
    assert best == ["ctx64-capacity-out8-chat-r0: winner baseline, capacity 6 req/s"]
    assert plots == [capacity.LOAD_PNG] and (tmp_path / capacity.LOAD_PNG).stat().st_size > 0


def test_no_capacity_and_no_open_loop_cells_add_no_section(tmp_path):
    (tmp_path / "baseline" / "records").mkdir(parents=True)
    assert capacity.section(tmp_path, [_point("baseline", True)], {}, set(), True) == ([], [], [])
