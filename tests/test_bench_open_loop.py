"""Open-loop cells of the benchmark package against the SGLang emulator, over real HTTP."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

import bench.client
from bench import records
from bench.cli import main

FIXED = {
    "SGLANG_EMU_FIXED_TTFT_MS": "40",
    "SGLANG_EMU_FIXED_STEP_MS": "15",
    "SGLANG_EMU_FIXED_ACCEPT": "3",
}
# raw token windows, no greedy-output check: only the cells' own requests
CELL = ["--categories", "random", "--greedy-prompts", "0", "--contexts", "64"]


def _flags(model_dirs: Any) -> list[str]:
    return [
        "--model-path",
        str(model_dirs.model),
        "--context-length",
        "8192",
        "--speculative-algorithm",
        "DFLASH",
        "--speculative-draft-model-path",
        str(model_dirs.drafter),
    ]


def _run(port: int, out: Path, *extra: str) -> int:
    url = f"http://127.0.0.1:{port}"
    return main(["run", "--url", url, "--out", str(out), "--no-live", *CELL, *extra])


# The achieved rate and the send lag are the client's timings: run by make timing, never beside
# other load.
@pytest.mark.timing
def test_an_open_loop_cell_keeps_its_rate(start_emulator, model_dirs, tmp_path):
    """240 Poisson arrivals at 40 requests/s; each answer takes about 0.1 s, so about four are
    in flight: the emulator serves this easily and any shortfall is the client's."""
    emu = start_emulator(_flags(model_dirs), env=FIXED)
    out = tmp_path / "out"
    rc = _run(
        emu.port,
        out,
        "--output-len",
        "16",
        "--request-rate",
        "40",
        "--open-loop-seconds",
        "6",
        "--min-requests",
        "200",
        # The client's headroom at the default 5 ms is benchmarks/client_headroom.py's figure. Here
        # the bound only has to catch a client that does not keep its schedule (one that falls
        # behind is late by more with every arrival, seconds by the end), on a machine whose other
        # processes may take the CPU: p99 6.25 ms with both cores busy elsewhere, 20.87 ms in a CI
        # run's rerun alone, which failed a bound of 20.
        "--max-send-lag-ms",
        "50",
    )
    assert rc == 0
    (rec,) = records.load_records(out)
    assert rec["cell"]["cell_id"] == "ctx64-rate40-out16-random-r0"
    s = rec["summary"]
    assert (s["requests"], s["completed"], s["failed"], s["incomplete"]) == (240, 240, 0, 0)
    # the schedule offers exactly the rate asked (bench/arrivals.py); the client keeps it
    assert s["scheduled_rate"] == pytest.approx(40.0, rel=1e-9)
    assert s["achieved_rate"] == pytest.approx(40.0, rel=0.05)
    assert s["valid"] is True and s["invalid_reason"] is None
    assert s["send_lag_ms"]["p99"] <= s["max_send_lag_ms"] == 50.0
    assert s["peak_in_flight"] >= 2  # open loop: sent whatever was in flight
    reqs = records.load_requests(out, rec["cell"]["cell_id"])
    assert all(r["scheduled"] is not None and r["send_lag"] is not None for r in reqs)
    assert reqs[0]["scheduled"] == 0.0


def test_a_client_that_falls_behind_records_an_invalid_cell(
    start_emulator, model_dirs, tmp_path, monkeypatch, capsys
):
    real = bench.client.stream_generate

    async def slow_send(*args: Any, **kw: Any) -> None:
        time.sleep(0.01)  # a send path that costs 10 ms of the client's CPU
        await real(*args, **kw)

    monkeypatch.setattr(bench.client, "stream_generate", slow_send)
    emu = start_emulator(_flags(model_dirs), env=FIXED)
    out = tmp_path / "out"
    # a closed-loop cell beside the open-loop one: both given, both run
    rc = _run(
        emu.port,
        out,
        "--output-len",
        "4",
        "--concurrency",
        "2",
        "--request-rate",
        "200",
        "--open-loop-seconds",
        "0.2",
        "--min-requests",
        "40",
        "--warmup",
        "0",
    )
    assert rc == 0
    recs = {r["cell"]["cell_id"]: r for r in records.load_records(out)}
    assert set(recs) == {"ctx64-c2-out4-random-r0", "ctx64-rate200-out4-random-r0"}
    closed = recs["ctx64-c2-out4-random-r0"]["summary"]
    assert "valid" not in closed and "request_rate" not in closed
    s = recs["ctx64-rate200-out4-random-r0"]["summary"]
    assert s["valid"] is False and s["completed"] == 40
    assert s["send_lag_ms"]["p99"] > 5.0
    assert "the client fell behind its schedule" in s["invalid_reason"]
    assert len(records.load_requests(out, "ctx64-rate200-out4-random-r0")) == 40
    assert "INVALID: p99 send lag" in capsys.readouterr().err


def test_a_capacity_search_on_one_server_keeps_every_trial_and_replays_them(
    start_emulator, model_dirs, tmp_path
):
    """The trials are open-loop cells, all kept, and a rerun judges recorded trials against its
    own SLO without the server. (The search's figures against the analytic capacity:
    tests/test_emulator_capacity.py.)"""
    emu = start_emulator(_flags(model_dirs), env=FIXED)
    out = tmp_path / "out"
    common = ["--output-len", "8", "--capacity", "--open-loop-seconds", "1"]
    # the client's own lag is not what this tests (a busy test machine)
    common += ["--min-requests", "12", "--warmup", "0", "--max-send-lag-ms", "1000"]
    # a TPOT target no answer misses: the rate doubles until the trial bound
    first = ["--capacity-start-rate", "8", "--capacity-max-trials", "3", "--slo-tpot-ms", "1e6"]
    assert _run(emu.port, out, *common, *first) == 0
    (result,) = json.loads((out / "capacity.json").read_text())
    assert result["capacity_id"] == "ctx64-capacity-out8-random-r0"
    assert [t["rate"] for t in result["trials"]] == [8.0, 16.0, 32.0]
    assert all(t["met"] and t["valid"] and t["attainment"] == 1.0 for t in result["trials"])
    assert result["bracket"] == [32.0, None] and result["settled"] is False
    assert result["reason"] == "stopped at the bound of 3 trials"
    assert result["slo"] == {"ttft_ms": None, "tpot_ms": 1e6, "share": 0.9}
    cells = {f"ctx64-rate{r}-out8-random-r0" for r in (8, 16, 32)}
    assert {r["cell"]["cell_id"] for r in records.load_records(out)} == cells

    # the recorded trials at 32 and 16 req/s against a target every answer misses: nothing to
    # measure, so nothing is sent (nothing listens on port 9)
    second = ["--capacity-start-rate", "32", "--capacity-max-trials", "2", "--slo-tpot-ms", "1e-3"]
    assert _run(9, out, *common, *second) == 0
    (again,) = json.loads((out / "capacity.json").read_text())
    assert [(t["rate"], t["met"]) for t in again["trials"]] == [(32.0, False), (16.0, False)]
    assert again["bracket"] == [None, 16.0] and again["capacity"] is None
    assert {r["cell"]["cell_id"] for r in records.load_records(out)} == cells


def test_a_trial_the_client_fell_behind_in_is_measured_again_as_its_next_repetition(
    start_emulator, model_dirs, tmp_path
):
    """A rate whose trial the client fell behind in is measured once more, in a cell of its own
    (the next repetition), before it becomes a ceiling; a rerun replays both without the server."""
    emu = start_emulator(_flags(model_dirs), env=FIXED)
    out = tmp_path / "out"
    # a send-lag bound no client keeps: every trial is invalid
    args = ["--output-len", "4", "--capacity", "--open-loop-seconds", "1", "--min-requests", "8",
            "--warmup", "0", "--max-send-lag-ms", "0.000001", "--capacity-start-rate", "8",
            "--capacity-max-trials", "3", "--slo-tpot-ms", "1e6"]  # fmt: skip
    assert _run(emu.port, out, *args) == 0
    (result,) = json.loads((out / "capacity.json").read_text())
    assert [(t["rate"], t["valid"]) for t in result["trials"]] == [
        (8.0, False), (8.0, False), (4.0, False)
    ]  # fmt: skip
    ids = ["ctx64-rate8-out4-random-r0", "ctx64-rate8-out4-random-r1", "ctx64-rate4-out4-random-r0"]
    assert [t["cell_id"] for t in result["trials"]] == ids
    assert {r["cell"]["cell_id"] for r in records.load_records(out)} == set(ids)
    assert _run(9, out, *args) == 0  # nothing listens on port 9: all three replayed
    (again,) = json.loads((out / "capacity.json").read_text())
    assert again["trials"] == result["trials"]
