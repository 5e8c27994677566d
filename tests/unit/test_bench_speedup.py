import pytest

from bench import records
from bench.metrics import RequestResult, summarize
from bench.speedup import compute, format_table
from bench.workload import build_matrix


def _write_run(out, step_s: float, reps: int = 3, failed: bool = False, verify=None):
    for cell in build_matrix([512], [1, 4], [11], ["random"], repetitions=reps):
        rs = [
            RequestResult(
                index=i,
                ok=True,
                ttft=0.1,
                latency=0.1 + 10 * step_s,
                chunk_times=[0.1, 0.1 + 10 * step_s],
                chunk_tokens=[1, 11],
                completion_tokens=11,
                prompt_tokens=512,
                spec_verify_ct=verify,
            )
            for i in range(4)
        ]
        if failed:
            rs.append(RequestResult(index=9, error="boom"))
        rec = {"cell": cell.to_dict(), "summary": summarize(rs, duration=4 * (0.1 + 10 * step_s))}
        records.write_cell(out, cell.cell_id, rec, [])


def test_speedup_per_point(tmp_path):
    _write_run(tmp_path / "base", step_s=0.03)
    _write_run(tmp_path / "spec", step_s=0.01, verify=4)
    rows = compute(tmp_path / "base", tmp_path / "spec")
    assert len(rows) == 2
    r = rows[0]
    assert r["speedup_tpot"] == pytest.approx(3.0)
    assert r["speedup_output_throughput"] == pytest.approx(0.4 / 0.2)
    assert r["spec_accept_length"] == pytest.approx(11 / 4)
    assert r["valid"] is True
    assert "ctx512-c1-out11-random" in format_table(rows)


def test_failures_make_a_point_invalid_and_unmatched_points_are_skipped(tmp_path):
    _write_run(tmp_path / "base", step_s=0.03, failed=True)
    _write_run(tmp_path / "spec", step_s=0.01)
    (tmp_path / "base" / "ctx512-c4-out11-random-r0.json").unlink()
    (tmp_path / "base" / "ctx512-c4-out11-random-r1.json").unlink()
    (tmp_path / "base" / "ctx512-c4-out11-random-r2.json").unlink()
    rows = compute(tmp_path / "base", tmp_path / "spec")
    assert [r["point_id"] for r in rows] == ["ctx512-c1-out11-random"]
    assert rows[0]["valid"] is False
