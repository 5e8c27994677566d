"""sweep.report.report: every point x cell, speed-up vs the baseline, winner or tie per cell,
failures, plots."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from test_sweep_fakes import write_records

from bench.metrics import RequestResult, summarize
from bench.records import write_cell, write_json, write_summaries
from bench.workload import build_matrix
from sweep import layout
from sweep.__main__ import main
from sweep.report.report import write_report


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


def test_markdown_has_winner_table_and_failures(sweep: Path) -> None:
    out = write_report(sweep, with_plots=False)
    md = Path(out["report"]).read_text()
    assert "3 of 5 points complete, 1 failed, 1 not run" in md
    best = md.split("## Winner per cell")[1].split("##")[0]
    # one repetition each: the fastest cannot be told from the runner-up, a tie per cell
    assert best.count("tie: ddtree-b8-k4-w2048 ~ ddtree-b4-k4-w2048") == 4
    assert best.count("(n=1, no interval)") == 8
    assert "crash_loading" in md and "unit entered failed state" in md
    assert len(out["best"]) == 4
    assert all("tie: ddtree-b8-k4-w2048 ~ ddtree-b4-k4-w2048" in line for line in out["best"])


def test_rows_with_failed_requests_are_never_best(tmp_path: Path) -> None:
    s = tmp_path / "s"
    base = {"algorithm": "NONE", "budget": 16, "topk": 4, "window": 2048}
    _point(s, "baseline", base, 50.0, None)
    write_records(s / "fast" / "records", 500.0, 5.0, failed=1)
    write_json(s / "fast" / layout.POINT_FILE, {"status": "complete", "server": base})
    out = write_report(s, with_plots=False)
    md = Path(out["report"]).read_text()
    assert "| NO |" in md
    assert "fast" not in md.split("## Winner per cell")[1].split("\n## ")[0]
    assert [c["best"] for c in out["cells"]] == ["baseline"] * 4
    assert {c["runner_up"] for c in out["cells"]} == {None}


def test_plots_are_pngs(sweep: Path) -> None:
    out = write_report(sweep, with_plots=True)
    assert [Path(p).name for p in out["plots"]] == [
        "speedup_by_budget_topk.png",
        "throughput_vs_concurrency.png",
        "heatmap_budget_topk.png",
    ]
    for p in out["plots"]:
        assert Path(p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_partial_sweep_without_baseline_has_no_speedups(tmp_path: Path) -> None:
    s = tmp_path / "s"
    _point(s, "x", {"algorithm": "DDTREE", "budget": 4, "topk": 4, "window": 2048}, 80.0, 3.0)
    out = write_report(s, with_plots=True)
    rows = _csv(out["summary"])
    assert rows and all(r["speedup"] == "" for r in rows)
    assert [Path(p).name for p in out["plots"]] == ["throughput_vs_concurrency.png"]


def test_report_lists_the_latest_runs_points_that_are_not_complete(sweep: Path) -> None:
    write_json(
        sweep / layout.SWEEP_FILE,
        {"runs": [{"points": ["baseline", "ddtree-b16-k4-w2048", "ddtree-b2-k4-w2048"]}]},
    )
    out = write_report(sweep, with_plots=False)
    assert out["incomplete"] == ["ddtree-b16-k4-w2048", "ddtree-b2-k4-w2048"]
    assert out["stopped"] is None
    # a stop (stop_on_failure, a bench that refused): the playbook's last message gives its reason
    (sweep / layout.STOP).write_text("ddtree-b2-k4-w2048 failed on h1 and stop_on_failure is set\n")
    out = write_report(sweep, with_plots=False)
    assert out["stopped"] == "ddtree-b2-k4-w2048 failed on h1 and stop_on_failure is set"


def _results(ttft: float, tpot: float, n: int = 8, tokens: int = 64) -> list[RequestResult]:
    latency = ttft + tpot * (tokens - 1)
    return [
        RequestResult(
            index=i,
            ok=True,
            latency=latency,
            ttft=ttft,
            prompt_tokens=512,
            completion_tokens=tokens,
            chunk_times=[ttft, latency],
            chunk_tokens=[1, tokens],
        )
        for i in range(n)
    ]


def _rep_point(
    sweep: Path,
    pid: str,
    throughputs: list[float],
    tpot_s: float = 0.010,
    ttft_s: float = 0.050,
    server: dict | None = None,
    greedy_outputs: list[list[int]] | None = None,
) -> None:
    """One cell (ctx 512, c 1), a repetition per throughput, through bench's own summarize:
    8 requests of 64 tokens, the duration set so the output throughput is the one given; and
    the greedy check's answers (GREEDY_OUTPUTS unless given: every point answers alike)."""
    server = server or {"algorithm": "DDTREE", "budget": 8, "topk": 4, "window": 2048}
    out = sweep / pid / "records"
    write_greedy(out, greedy_outputs or GREEDY_OUTPUTS)
    for cell in build_matrix([512], [1], [64], ["random"], len(throughputs)):
        results = _results(ttft_s, tpot_s)
        summary = summarize(results, 8 * 64 / throughputs[cell.repetition])
        requests = [r.to_dict() for r in results]
        write_cell(out, cell.cell_id, {"cell": cell.to_dict(), "summary": summary}, requests)
    write_summaries(out)
    write_json(
        sweep / pid / layout.POINT_FILE,
        {"status": "complete", "server": server, "baseline": server["algorithm"] == "NONE"},
    )


BASE = {"algorithm": "NONE", "budget": 16, "topk": 4, "window": 2048}
GREEDY_OUTPUTS = [[7, 8, 9, i, 2] for i in range(16)]


def write_greedy(records: Path, outputs: list[list[int]]) -> None:
    """records/greedy.json as bench.greedy writes it: one answer per prompt."""
    answers = [
        {"index": i, "source": "coding", "prompt": f"p{i}", "prompt_tokens": 40, "output_ids": o}
        for i, o in enumerate(outputs)
    ]
    params = {"prompts": len(outputs), "max_tokens": 64, "temperature": 0.0, "conversations": "c"}
    write_json(records / "greedy.json", {"format": 1, "params": params, "answers": answers})


def test_difference_within_the_spread_is_a_tie_naming_both(tmp_path: Path) -> None:
    s = tmp_path / "s"
    _rep_point(s, "baseline", [100.0, 110.0, 90.0], server=BASE)
    _rep_point(s, "spec", [102.0, 96.0, 108.0])
    out = write_report(s, with_plots=False)
    [cell] = out["cells"]
    assert cell["winner"] is None and cell["significant"] is False
    assert cell["tie"] == ["spec", "baseline"]
    assert (cell["best"], cell["runner_up"]) == ("spec", "baseline")
    assert cell["best_value"] == pytest.approx(102.0)
    assert cell["runner_up_value"] == pytest.approx(100.0)
    assert cell["best_ci"] == pytest.approx([102 - 14.904, 102 + 14.904], abs=1e-2)
    # paired by repetition: differences 2, -14, 18: mean 2, s 16, t = 2 / (16 / sqrt 3), 2 df
    assert cell["p_value"] == pytest.approx(0.8487, abs=1e-3)
    assert out["best"] == [
        "ctx 512 c 1 out 64 random: tie: spec ~ baseline (102.0 ± 14.9 vs 100.0 ± 24.8 tok/s)"
    ]
    md = Path(out["report"]).read_text()
    assert "| tie: spec ~ baseline | 102.0 ± 14.9 | baseline | 100.0 ± 24.8 |" in md


def test_clear_difference_has_a_winner(tmp_path: Path) -> None:
    s = tmp_path / "s"
    _rep_point(s, "baseline", [100.0, 101.0, 99.0], server=BASE)
    _rep_point(s, "spec", [150.0, 151.0, 149.0])
    out = write_report(s, with_plots=False)
    [cell] = out["cells"]
    assert cell["winner"] == "spec" and cell["tie"] == []
    assert cell["significant"] is True and cell["runner_up"] == "baseline"
    assert out["best"] == ["ctx 512 c 1 out 64 random: spec 150.0 ± 2.5 tok/s, x1.50"]
    assert "| spec | 150.0 ± 2.5 | baseline | 100.0 ± 2.5 |" in Path(out["report"]).read_text()
    json.dumps(out)  # what `python -m sweep report --json` prints


def test_winner_table_comes_before_the_points_tables(tmp_path: Path) -> None:
    s = tmp_path / "s"
    _rep_point(s, "baseline", [100.0, 101.0, 99.0], server=BASE)
    _rep_point(s, "spec", [150.0, 151.0, 149.0])
    md = Path(write_report(s, with_plots=False)["report"]).read_text()
    head = md.index("points complete")
    assert head < md.index("## Winner per cell") < md.index("## Points")
    assert md.index("## Points") < md.index("## Every point x cell")
    assert "Student t" in md and "Welch" in md


def test_summary_csv_has_interval_columns(tmp_path: Path) -> None:
    s = tmp_path / "s"
    _rep_point(s, "baseline", [100.0, 110.0, 90.0], server=BASE)
    _rep_point(s, "spec", [150.0], tpot_s=0.005)
    rows = {r["point"]: r for r in _csv(write_report(s, with_plots=False)["summary"])}
    b = rows["baseline"]
    assert b["repetitions"] == "3"
    assert float(b["output_throughput_mean"]) == pytest.approx(100.0)
    assert float(b["output_throughput_ci_low"]) == pytest.approx(75.16, abs=1e-2)
    assert float(b["output_throughput_ci_high"]) == pytest.approx(124.84, abs=1e-2)
    assert float(b["tpot_p50_ms_ci_low"]) == pytest.approx(10.0)
    assert float(b["ttft_p50_ms_ci_high"]) == pytest.approx(50.0)
    assert b["objective"] == "throughput"
    spec = rows["spec"]
    assert spec["repetitions"] == "1" and spec["output_throughput_ci_low"] == ""
    assert float(spec["speedup_mean_ratio"]) == pytest.approx(1.5)
    assert spec["speedup_ci_low"] == ""


def test_objective_decides_the_winner(tmp_path: Path) -> None:
    s = tmp_path / "s"
    # "fast" has more tok/s but misses the TPOT SLO of 20 ms; "steady" meets it
    _rep_point(s, "fast", [200.0, 201.0, 199.0], tpot_s=0.030)
    _rep_point(s, "steady", [100.0, 101.0, 99.0], tpot_s=0.010)
    by_throughput = write_report(s, with_plots=False)["cells"][0]
    assert by_throughput["winner"] == "fast"
    out = write_report(
        s, with_plots=False, objective="goodput", slo_ttft_ms=100.0, slo_tpot_ms=20.0
    )
    [cell] = out["cells"]
    assert (cell["objective"], cell["winner"], cell["runner_up"]) == ("goodput", "steady", "fast")
    # 8 good requests over 8 * 64 / 100 s
    assert cell["best_value"] == pytest.approx(100.0 / 64, rel=1e-2)
    assert cell["runner_up_value"] == 0.0
    assert "goodput" in Path(out["report"]).read_text().split("## Points")[0]
    by_tpot = write_report(s, with_plots=False, objective="tpot")["cells"][0]
    assert (by_tpot["winner"], by_tpot["best_value"]) == ("steady", pytest.approx(10.0))


def test_bad_objective_fails_before_writing(tmp_path: Path) -> None:
    s = tmp_path / "s"
    _rep_point(s, "spec", [150.0])
    with pytest.raises(ValueError, match="needs both slo_ttft_ms and slo_tpot_ms"):
        write_report(s, with_plots=False, objective="goodput", slo_ttft_ms=100.0)
    assert not (s / "report.md").exists()


def test_cli_report_takes_the_objective(tmp_path: Path, capsys) -> None:
    s = tmp_path / "s"
    _rep_point(s, "baseline", [100.0, 101.0, 99.0], server=BASE)
    _rep_point(s, "spec", [150.0, 151.0, 149.0], tpot_s=0.030)
    argv = ["report", str(s), "--no-plots", "--json", "--objective", "goodput"]
    assert main([*argv, "--slo-ttft-ms", "100", "--slo-tpot-ms", "20"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"best", "report", "summary", "incomplete", "cells"} <= set(out)
    assert out["cells"][0]["winner"] == "baseline"
    assert main([*argv, "--slo-ttft-ms", "100"]) == 1
    assert "ValueError: objective 'goodput' needs both" in capsys.readouterr().err
    assert main(["report", str(s), "--no-plots", "--objective", "speed"]) == 1
    assert "unknown objective 'speed'" in capsys.readouterr().err


def test_points_table_names_where_a_reused_point_came_from(sweep: Path) -> None:
    meta = sweep / "ddtree-b8-k4-w2048" / layout.POINT_FILE
    data = json.loads(meta.read_text())
    data["reused_from"] = {"sweep": "resume", "point": "ddtree-b8-k4-w2048", "dir": "/x"}
    write_json(meta, data)
    md = Path(write_report(sweep, with_plots=False)["report"]).read_text()
    assert "| ddtree-b8-k4-w2048 | complete, reused from resume/ddtree-b8-k4-w2048 |" in md
    assert "| ddtree-b4-k4-w2048 | complete | DDTREE |" in md


def test_repetitions_pair_up_so_the_prompts_spread_cancels(tmp_path: Path) -> None:
    # Repetition i sends the same prompts to every point: here they swing both points by +-50
    # tok/s while spec stays 4-6 tok/s ahead in each. Unpaired (Welch) that is lost in the swing.
    s = tmp_path / "s"
    _rep_point(s, "baseline", [95.0, 146.0, 194.0], server=BASE)
    _rep_point(s, "spec", [100.0, 150.0, 200.0])
    [cell] = write_report(s, with_plots=False)["cells"]
    assert cell["winner"] == "spec" and cell["significant"] is True and cell["tie"] == []
    from sweep.results.stats import welch

    assert not welch([100.0, 150.0, 200.0], [95.0, 146.0, 194.0]).significant


RETIRED = Path(__file__).resolve().parents[1] / "fixtures" / "retired_searches"


@pytest.mark.parametrize(
    ("search", "measured"),
    [
        ("halving", ["ddtree-b48-k2-w2048", "ddtree-b48-k4-w2048"]),
        (
            "descent",
            [
                "ddtree-b32-k2-w2048",
                "ddtree-b48-k2-w2048",
                "ddtree-b48-k4-w2048",
                "ddtree-b64-k2-w2048",
                "ddtree-b64-k4-w2048",
            ],
        ),
    ],
)
def test_a_sweep_a_retired_search_recorded_still_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], search: str, measured: list[str]
) -> None:
    """search=halving and search=descent are retired (docs/search.md); the sweeps they recorded
    (tests/fixtures/retired_searches, written by their code) still report, the points they
    measured and the search they ran named."""
    import shutil

    shutil.copytree(RETIRED / search, tmp_path / search)
    s = tmp_path / search / "s"
    assert main(["report", str(s), "--no-plots", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    md = (s / "report.md").read_text()
    for pid in ["baseline", *measured]:
        assert f"| {pid} | complete |" in md  # the points table
        assert f"| {pid} | ctx512-c1-out64-random | 1 |" in md  # its results
    section = md.split("## Search")[1]
    assert f"search: {search} (retired: docs/search.md); {len(measured)} points measured" in section
    assert f"- best: {measured[-1]}\n" in section  # its rounds as it recorded them
    assert out["points"] == dict.fromkeys(["baseline", *measured], "complete")
    assert out["best"][-1].startswith(f"{search}: 5 restarts")  # its cost, as recorded
    # halving's screening run that failed (in the sibling sweep s.screen0) a rerun would retry
    assert out["incomplete"] == (["ddtree-b32-k2-w2048@L0"] if search == "halving" else [])
    assert (s / "summary.csv").is_file()
