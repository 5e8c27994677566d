import csv
import json
import os

import pytest

from bench import records
from bench.metrics import RequestResult, summarize
from bench.workload import build_matrix


def _record(cell, ttft=0.1):
    r = RequestResult(
        index=0,
        ok=True,
        ttft=ttft,
        latency=1.0,
        chunk_times=[ttft, 1.0],
        chunk_tokens=[1, 10],
        completion_tokens=10,
        prompt_tokens=cell.context,
    )
    return {"cell": cell.to_dict(), "summary": summarize([r], 1.0)}, [r.to_dict()]


def test_write_atomic_leaves_no_temp_files_and_replaces(tmp_path):
    p = tmp_path / "a.json"
    records.write_atomic(p, "one")
    records.write_atomic(p, "two")
    assert p.read_text() == "two"
    assert os.listdir(tmp_path) == ["a.json"]


def test_write_atomic_keeps_old_file_when_writing_fails(tmp_path):
    p = tmp_path / "a.json"
    records.write_json(p, {"v": 1})
    with pytest.raises(TypeError):
        records.write_atomic(p, object())  # type: ignore[arg-type]
    assert json.loads(p.read_text()) == {"v": 1}
    assert os.listdir(tmp_path) == ["a.json"]


def test_cell_is_done_only_when_its_record_exists(tmp_path):
    cell = build_matrix([512], [1], [16], ["random"], 1)[0]
    rec, reqs = _record(cell)
    # a crash after the requests file and before the record: not done
    records.write_jsonl(records.requests_path(tmp_path, cell.cell_id), reqs)
    assert not records.is_done(tmp_path, cell.cell_id)
    records.write_cell(tmp_path, cell.cell_id, rec, reqs)
    assert records.is_done(tmp_path, cell.cell_id)
    assert records.load_requests(tmp_path, cell.cell_id)[0]["completion_tokens"] == 10


def test_summaries_regenerated_from_all_records(tmp_path):
    cells = build_matrix([512], [1, 4], [16], ["random"], repetitions=3)
    for i, cell in enumerate(cells):
        rec, reqs = _record(cell, ttft=0.1 * (1 + i % 3))
        records.write_cell(tmp_path, cell.cell_id, rec, reqs)
    (tmp_path / "junk.json").write_text("{not json")
    agg = records.write_summaries(tmp_path)
    rows = list(csv.DictReader((tmp_path / "summary.csv").open()))
    assert len(rows) == 6
    assert {r["cell_id"] for r in rows} == {c.cell_id for c in cells}
    assert len(agg) == 2
    assert all(a["repetitions"] == 3 for a in agg)
    assert agg[0]["ttft_median_ms_median"] == pytest.approx(200.0)
    arows = list(csv.DictReader((tmp_path / "aggregate.csv").open()))
    assert [r["point_id"] for r in arows] == sorted({c.point_id for c in cells})


def test_open_loop_columns_in_the_summaries(tmp_path):
    cells = build_matrix([512], [1], [16], ["random"], 1, request_rates=[2.0])
    for cell in cells:
        rec, reqs = _record(cell)
        if cell.open_loop:
            rec["summary"].update(
                achieved_rate=1.9,
                send_lag_ms={"p99": 7.5},
                valid=False,
                invalid_reason="p99 send lag 7.50 ms > max_send_lag_ms 5: ...",
            )
        records.write_cell(tmp_path, cell.cell_id, rec, reqs)
    agg = records.write_summaries(tmp_path)
    rows = {r["cell_id"]: r for r in csv.DictReader((tmp_path / "summary.csv").open())}
    closed, opened = rows["ctx512-c1-out16-random-r0"], rows["ctx512-rate2-out16-random-r0"]
    assert (closed["request_rate"], closed["valid"], closed["send_lag_p99_ms"]) == ("", "", "")
    assert (opened["request_rate"], opened["achieved_rate"]) == ("2.0", "1.9")
    assert (opened["send_lag_p99_ms"], opened["valid"]) == ("7.5", "False")
    assert opened["invalid_reason"].startswith("p99 send lag 7.50 ms")
    by_point = {a["point_id"]: a for a in agg}
    assert by_point["ctx512-rate2-out16-random"]["request_rate"] == 2.0
    assert by_point["ctx512-rate2-out16-random"]["invalid"] == 1
    assert by_point["ctx512-c1-out16-random"]["invalid"] == 0
