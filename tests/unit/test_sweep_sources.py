"""sweep.results.sources and the report's per-source section: accept length, output tok/s per
request and TPOT per source with intervals, and the winner or tie per source beside the overall
one."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_sweep_report import BASE, GREEDY_OUTPUTS, write_greedy

from bench.metrics import RequestResult, summarize
from bench.records import write_cell, write_json, write_summaries
from bench.workload import build_matrix
from sweep import layout
from sweep.config import objectives
from sweep.report.report import write_report
from sweep.results import sources
from sweep.results.results import load_points

SPEC = {"algorithm": "DDTREE", "budget": 8, "topk": 4, "window": 2048}


def _requests(source: str, tpot: float, accept: float | None, n: int = 4) -> list[RequestResult]:
    tokens, ttft = 64, 0.05
    latency = ttft + tpot * (tokens - 1)
    return [
        RequestResult(
            index=i,
            ok=True,
            latency=latency,
            ttft=ttft,
            prompt_tokens=512,
            completion_tokens=tokens,
            spec_verify_ct=None if accept is None else round(tokens / accept),
            chunk_times=[ttft, latency],
            chunk_tokens=[1, tokens],
            source=source,
        )
        for i in range(n)
    ]


def point(sweep: Path, pid: str, server: dict, per_source: dict[str, tuple[float, float | None]]):
    """A point of one chat cell (ctx 512, c 4), 3 repetitions; per source its TPOT in seconds
    (a little noise per repetition) and accept length."""
    out = sweep / pid / "records"
    for cell in build_matrix([512], [4], [64], ["chat"], 3):
        wobble = 1.0 + 0.01 * (cell.repetition - 1)
        results = [
            r for src, (tpot, acc) in per_source.items() for r in _requests(src, tpot * wobble, acc)
        ]
        summary = summarize(results, 2.0)
        requests = [r.to_dict() for r in results]
        write_cell(out, cell.cell_id, {"cell": cell.to_dict(), "summary": summary}, requests)
    write_summaries(out)
    write_greedy(out, GREEDY_OUTPUTS)
    write_json(
        sweep / pid / layout.POINT_FILE,
        {"status": "complete", "server": server, "baseline": server["algorithm"] == "NONE"},
    )


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    s = tmp_path / "s"
    point(s, "baseline", BASE, {"coding": (0.020, None), "chat": (0.020, None)})
    # speculation pays on code (accept 5), not on chat (accept 1.2: verify costs more)
    point(s, "spec", SPEC, {"coding": (0.008, 5.0), "chat": (0.025, 1.2)})
    layout.write_sweep(s, {"name": "s", "runs": []})
    return s


def test_rows_carry_each_sources_figures_with_intervals(sweep: Path) -> None:
    obj = objectives.make()
    table = sources.rows(sweep, load_points(sweep, obj), obj)
    spec = {r["source"]: r for r in table if r["point"] == "spec"}
    assert set(spec) == {"coding", "chat"}
    est = spec["coding"]["estimates"]
    assert est["accept_length"].mean == pytest.approx(64 / 13)  # round(64 / 5) verify steps
    assert est["tok_s"].n == 3 and est["tok_s"].ci_low is not None
    assert est["tpot_p50_ms"].mean == pytest.approx(8.0, rel=0.02)
    assert spec["coding"]["objective_values"] == pytest.approx(
        [64 / (0.05 + 0.008 * w * 63) for w in (0.99, 1.0, 1.01)]
    )
    assert sources.mixed(table)


def test_the_winner_per_source_differs_from_source_to_source(sweep: Path) -> None:
    obj = objectives.make()
    table = sources.rows(sweep, load_points(sweep, obj), obj)
    decided = {d["source"]: d for d in sources.winners(table, obj)}
    assert decided["coding"]["winner"] == "spec"
    assert decided["chat"]["winner"] == "baseline"
    tpot = objectives.make("tpot")
    decided = {
        d["source"]: d
        for d in sources.winners(sources.rows(sweep, load_points(sweep, tpot), tpot), tpot)
    }
    assert decided["chat"]["winner"] == "baseline" and decided["coding"]["winner"] == "spec"
    # a point the greedy check refused takes no part
    refused = {d["source"]: d for d in sources.winners(table, obj, {"spec"})}
    assert refused["coding"]["winner"] == "baseline" and refused["coding"]["runner_up"] is None


def test_the_report_shows_the_section(sweep: Path) -> None:
    out = write_report(sweep, with_plots=False)
    md = Path(out["report"]).read_text()
    section = md.split("## Per source")[1].split("\n## ")[0]
    assert "### ctx512-c4-out64-chat" in section
    assert "| coding | spec | 4.92 ± 0.00 |" in section
    assert "By source (throughput): chat: baseline (" in section
    assert "coding: spec (" in section


def test_one_source_per_cell_has_no_section(tmp_path: Path) -> None:
    s = tmp_path / "s"
    point(s, "baseline", BASE, {"code": (0.02, None)})
    layout.write_sweep(s, {"name": "s", "runs": []})
    md = Path(write_report(s, with_plots=False)["report"]).read_text()
    assert "## Per source" not in md
