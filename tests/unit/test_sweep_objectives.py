"""sweep.config.objectives: throughput, TPOT and goodput per repetition; clear errors for bad
input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.metrics import RequestResult, summarize
from bench.records import load_records, write_cell
from bench.workload import build_matrix
from sweep.config import objectives
from sweep.config.objectives import goodput, meets_slo


def _request(ttft: float, tpot: float, tokens: int = 64, **kw: Any) -> dict[str, Any]:
    """A request as bench writes it to <cell-id>.requests.jsonl (times in seconds)."""
    latency = ttft + tpot * (tokens - 1)
    r = RequestResult(
        index=0,
        ok=kw.pop("ok", True),
        latency=latency,
        ttft=ttft,
        completion_tokens=tokens,
        chunk_times=[ttft, latency],
        chunk_tokens=[1, tokens],
        **kw,
    )
    return r.to_dict()


def test_requests_jsonl_fields_are_seconds() -> None:
    r = _request(0.25, 0.02)
    assert r["ttft"] == 0.25 and r["tpot"] == pytest.approx(0.02)
    assert r["ok"] is True


def test_goodput_counts_successful_requests_within_both_slos() -> None:
    requests = [
        _request(0.10, 0.010),  # good
        _request(0.20, 0.019),  # good
        _request(0.25, 0.010),  # good: TTFT exactly at the SLO
        _request(0.30, 0.010),  # TTFT too slow
        _request(0.10, 0.030),  # TPOT too slow
        _request(0.40, 0.030),  # both too slow
        _request(0.10, 0.010, ok=False, error="HTTP 500"),  # failed
        _request(0.10, 0.010, ok=False, incomplete=True),  # incomplete
        _request(0.10, 0.0, tokens=1),  # good: one token, no TPOT (vLLM counts it as 0)
        {"index": 9, "ok": True, "ttft": None, "tpot": None},  # no TTFT: not good
    ]
    assert [meets_slo(r, 250.0, 20.0) for r in requests] == [
        True, True, True, False, False, False, False, False, True, False
    ]  # fmt: skip
    assert goodput(requests, 2.0, 250.0, 20.0) == pytest.approx(4 / 2.0)
    assert goodput(requests, 2.0, 1000.0, 1000.0) == pytest.approx(7 / 2.0)
    with pytest.raises(ValueError, match="duration"):
        goodput(requests, 0.0, 250.0, 20.0)


def _write_cells(out: Path, ttfts: list[float], duration: float) -> None:
    """One cell, one repetition per ttft, 4 requests each (TPOT 10 ms) of which one is slow."""
    for cell in build_matrix([512], [1], [64], ["random"], len(ttfts)):
        reqs = [_request(ttfts[cell.repetition], 0.010) for _ in range(3)]
        reqs.append(_request(1.0, 0.010))
        results = [RequestResult(index=i, ok=True) for i in range(4)]
        summary = summarize(results, duration)
        write_cell(out, cell.cell_id, {"cell": cell.to_dict(), "summary": summary}, reqs)


def test_goodput_objective_reads_each_repetitions_requests(tmp_path: Path) -> None:
    _write_cells(tmp_path, [0.05, 0.5, 0.05], duration=2.0)
    obj = objectives.make("goodput", slo_ttft_ms=200, slo_tpot_ms=20)
    obs = obj.observations(tmp_path, load_records(tmp_path))
    assert obs == {"ctx512-c1-out64-random": [1.5, 0.0, 1.5]}
    assert obj.higher_is_better and obj.unit == "req/s"
    assert "TTFT <= 200 ms" in obj.describe() and "TPOT <= 20 ms" in obj.describe()


def test_goodput_skips_a_repetition_without_requests_file(tmp_path: Path) -> None:
    _write_cells(tmp_path, [0.05, 0.05], duration=2.0)
    (tmp_path / "ctx512-c1-out64-random-r1.requests.jsonl").unlink()
    obj = objectives.make("goodput", slo_ttft_ms=200, slo_tpot_ms=20)
    assert obj.observations(tmp_path, load_records(tmp_path)) == {"ctx512-c1-out64-random": [1.5]}


def test_throughput_and_tpot_come_from_the_summary() -> None:
    record = {"summary": {"output_throughput": 123.0, "tpot_ms": {"median": 7.5}}, "cell": {}}
    tp, tpot = objectives.make(), objectives.make("tpot")
    assert tp.name == "throughput" and tp.value(Path("."), record) == 123.0
    assert tpot.value(Path("."), record) == 7.5
    assert tp.better(2.0, 1.0) and not tp.better(1.0, 2.0)
    assert tpot.better(1.0, 2.0) and not tpot.higher_is_better


@pytest.mark.parametrize(
    "args, message",
    [
        (("speed",), "unknown objective 'speed'"),
        (("goodput",), "needs both slo_ttft_ms and slo_tpot_ms"),
        (("goodput", 200.0), "slo_tpot_ms=None"),
        (("goodput", 0.0, 20.0), "slo_ttft_ms must be a positive number.*got 0.0"),
        (("goodput", 200.0, -5.0), "slo_tpot_ms must be a positive number.*got -5.0"),
        (("goodput", float("nan"), 20.0), "slo_ttft_ms must be a positive number.*nan"),
        (("throughput", -1.0, None), "slo_ttft_ms must be a positive"),
    ],
)
def test_bad_objectives_are_clear_errors(args: tuple[Any, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        objectives.make(*args)
