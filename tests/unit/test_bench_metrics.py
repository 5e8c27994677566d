import math

import pytest

from bench.metrics import (
    RequestResult,
    aggregate_repetitions,
    distribution,
    itl,
    median_mad,
    open_loop_summary,
    percentile,
    summarize,
    tpot,
)


def _req(i: int, ttft: float, times: list[float], tokens: list[int], latency: float, **kw):
    return RequestResult(
        index=i,
        ok=True,
        ttft=ttft,
        latency=latency,
        chunk_times=times,
        chunk_tokens=tokens,
        completion_tokens=tokens[-1],
        prompt_tokens=kw.pop("prompt_tokens", 100),
        **kw,
    )


def test_itl_spreads_a_chunk_gap_over_its_tokens():
    # chunk 2 brings 3 tokens 0.3 s after chunk 1: three ITLs of 0.1 s
    assert itl([0.5, 0.8, 0.9], [1, 4, 5]) == pytest.approx([0.1, 0.1, 0.1, 0.1])


def test_itl_ignores_chunks_without_new_tokens():
    assert itl([0.5, 0.6, 0.9], [2, 2, 3]) == pytest.approx([0.4])


def test_tpot_excludes_first_token():
    r = _req(0, 0.2, [0.2, 1.2], [1, 11], latency=1.2)
    assert tpot(r) == pytest.approx(0.1)
    assert tpot(_req(1, 0.2, [0.2], [1], latency=0.2)) is None


def test_percentile_interpolates_like_numpy():
    v = [1.0, 2.0, 3.0, 4.0]
    assert percentile(v, 50) == pytest.approx(2.5)
    assert percentile(v, 90) == pytest.approx(3.7)
    assert percentile([5.0], 99) == 5.0


def test_distribution_scales_and_counts():
    d = distribution([0.001, 0.003], 1000.0)
    assert d["count"] == 2
    assert d["mean"] == pytest.approx(2.0)
    assert d["max"] == pytest.approx(3.0)
    assert distribution([])["median"] is None


def test_median_mad():
    assert median_mad([1.0, 2.0, 3.0, 4.0, 100.0]) == (3.0, 1.0)


def test_accept_length_is_weighted_by_verify_count():
    a = _req(0, 0.1, [0.1, 0.2], [1, 10], 0.2, spec_verify_ct=2)  # 5.0 per request
    b = _req(1, 0.1, [0.1, 0.2], [1, 30], 0.2, spec_verify_ct=15)  # 2.0 per request
    s = summarize([a, b], duration=1.0)
    # weighted: 40 / 17, not the plain mean 3.5
    assert s["accept_length"] == pytest.approx(40 / 17)
    assert s["accept_length_dist"]["mean"] == pytest.approx(3.5)
    assert s["accept_length_requests"] == 2


def test_failures_are_counted_not_dropped():
    ok = _req(0, 0.1, [0.1, 0.3], [1, 3], 0.3)
    failed = RequestResult(index=1, error="HTTP 500: boom")
    partial = RequestResult(index=2, error="incomplete", incomplete=True, completion_tokens=2)
    s = summarize([ok, failed, partial], duration=2.0)
    assert (s["requests"], s["completed"], s["failed"], s["incomplete"]) == (3, 1, 1, 1)
    assert s["errors"] == {"HTTP 500: boom": 1, "incomplete": 1}
    assert s["output_throughput"] == pytest.approx(1.5)
    assert s["request_throughput"] == pytest.approx(0.5)
    assert s["ttft_ms"]["count"] == 1


def test_concurrency_reached_and_throughput():
    rs = [_req(i, 0.1, [0.1, 1.0], [1, 10], 1.0, prompt_tokens=50) for i in range(4)]
    s = summarize(rs, duration=2.0)
    assert s["concurrency_reached"] == pytest.approx(2.0)
    assert s["total_token_throughput"] == pytest.approx((40 + 200) / 2.0)
    assert s["accept_length"] is None


def test_aggregate_repetitions_median_and_mad():
    sums = [summarize([_req(0, t, [t, t + 1], [1, 11], t + 1)], 1.0) for t in (0.1, 0.2, 0.6)]
    agg = aggregate_repetitions(sums)
    assert agg["repetitions"] == 3
    assert agg["ttft_median_ms_median"] == pytest.approx(200.0)
    assert agg["ttft_median_ms_mad"] == pytest.approx(100.0)
    assert not math.isnan(agg["tpot_median_ms_median"])


def test_by_source_splits_accept_length_speed_and_tpot():
    code = _req(0, 0.1, [0.1, 0.5], [1, 40], 0.5, spec_verify_ct=8, source="coding")
    chat = _req(1, 0.1, [0.1, 1.1], [1, 20], 1.1, spec_verify_ct=10, source="chat")
    failed = RequestResult(index=2, ok=False, error="HTTP 500", source="chat")
    s = summarize([code, chat, failed], duration=1.2)
    by = s["by_source"]
    assert list(by) == ["coding", "chat"]
    assert by["coding"]["accept_length"] == pytest.approx(5.0)
    assert by["chat"]["accept_length"] == pytest.approx(2.0)
    assert (by["chat"]["requests"], by["chat"]["completed"]) == (2, 1)
    # per request: the source's tokens over its own requests' latencies
    assert by["coding"]["request_output_throughput"] == pytest.approx(40 / 0.5)
    assert by["chat"]["request_output_throughput"] == pytest.approx(20 / 1.1)
    assert by["coding"]["tpot_ms"]["median"] == pytest.approx(1000 * 0.4 / 39)
    # the cell's own figures still cover every request
    assert s["accept_length"] == pytest.approx(60 / 18)


def _sent(i: int, scheduled: float, lag: float) -> RequestResult:
    return RequestResult(index=i, ok=True, start=scheduled + lag, scheduled=scheduled)


def test_open_loop_figures_and_the_lag_bound():
    # due every 0.1 s; sent 1 ms late, the last one 30 ms late
    rs = [_sent(i, 0.1 * i, 0.001) for i in range(100)]
    rs[-1] = _sent(99, 9.9, 0.030)
    s = open_loop_summary(rs, 10.0, 1.0, None, max_send_lag_ms=5.0)
    assert s["request_rate"] == 10.0 and s["scheduled_rate"] == pytest.approx(10.0)
    # (n - 1) gaps over the span of the actual sends: 99 / (9.930 - 0.001)
    assert s["achieved_rate"] == pytest.approx(99 / 9.929)
    assert s["send_lag_ms"]["median"] == pytest.approx(1.0)
    assert s["send_lag_ms"]["max"] == pytest.approx(30.0)
    assert s["send_lag_ms"]["p99"] == pytest.approx(1.0 + 0.01 * 29.0)  # interpolated
    assert s["valid"] and s["invalid_reason"] is None and s["max_send_lag_ms"] == 5.0
    late = open_loop_summary(rs, 10.0, 1.0, None, max_send_lag_ms=1.1)
    assert late["valid"] is False
    assert late["invalid_reason"].startswith("p99 send lag 1.29 ms > max_send_lag_ms 1.1")
    assert "measured the client, not the server" in late["invalid_reason"]


def test_send_lag_in_request_records_and_closed_summaries_unchanged():
    assert _sent(0, 0.5, 0.002).to_dict()["send_lag"] == pytest.approx(0.002)
    closed = _req(0, 0.1, [0.1, 1.0], [1, 10], 1.0)
    assert closed.to_dict()["send_lag"] is None and closed.to_dict()["scheduled"] is None
    s = summarize([closed], 1.0)
    assert not {"request_rate", "achieved_rate", "valid", "send_lag_ms"} & set(s)


def test_repetitions_count_invalid_open_loop_cells():
    ok = [_sent(i, 0.1 * i, 0.001) for i in range(10)]
    bad = [_sent(i, 0.1 * i, 0.5) for i in range(10)]
    sums = [
        {**summarize(rs, 1.0), **open_loop_summary(rs, 10.0, 1.0, None)} for rs in (ok, bad, ok)
    ]
    assert aggregate_repetitions(sums)["invalid"] == 1
    assert aggregate_repetitions([summarize(ok, 1.0)])["invalid"] == 0
