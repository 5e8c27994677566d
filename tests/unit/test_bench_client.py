"""The streaming client against a small in-process aiohttp server with scripted streams."""

import asyncio
import json
import time

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

import bench.client
from bench.client import (
    generate_payload,
    make_session,
    run_closed_loop,
    run_open_loop,
    stream_generate,
)
from bench.metrics import RequestResult, open_loop_summary, send_lag

IN_FLIGHT = {"now": 0, "peak": 0}  # requests the fake server is answering
SLOW_S = {"slow": 0.2, "slow-1s": 1.0}  # rid -> seconds before the fake server answers


def _chunk(ct: int, finish=None, **meta) -> bytes:
    m = {"id": "r", "prompt_tokens": 7, "completion_tokens": ct, "finish_reason": finish, **meta}
    return b"data: " + json.dumps({"text": "x" * ct, "meta_info": m}).encode() + b"\n\n"


async def _generate(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    mode = body.get("rid", "ok")
    if mode == "http500":
        return web.Response(status=500, text="server exploded")
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    n = body["sampling_params"]["max_new_tokens"]
    if mode in SLOW_S:  # answers after a while, counting what it serves at once
        IN_FLIGHT["now"] += 1
        IN_FLIGHT["peak"] = max(IN_FLIGHT["peak"], IN_FLIGHT["now"])
        await asyncio.sleep(SLOW_S[mode])
        IN_FLIGHT["now"] -= 1
        mode = "ok"
    if mode == "ok":
        # one token, then chunks of 2 tokens (like a 2-token accept length)
        await resp.write(_chunk(1))
        for ct in range(3, n, 2):
            await asyncio.sleep(0.01)
            await resp.write(_chunk(ct))
        await resp.write(_chunk(n, {"type": "length", "length": n}, spec_verify_ct=(n + 1) // 2))
        await resp.write(b"data: [DONE]\n\n")
    elif mode == "cut":
        await resp.write(_chunk(1))
        await resp.write(_chunk(2))
        return resp  # connection ends without finish or [DONE]
    elif mode == "error":
        await resp.write(b'data: {"error": {"message": "bad input", "code": 400}}\n\n')
        await resp.write(b"data: [DONE]\n\n")
    elif mode == "eot":  # the model ends its turn after 4 tokens, the end of turn counted
        await resp.write(_chunk(1))
        await resp.write(_chunk(4, {"type": "stop", "matched": 2}))
        await resp.write(b"data: [DONE]\n\n")
    elif mode == "abort":
        await resp.write(_chunk(1, {"type": "abort", "message": "x"}))
        await resp.write(b"data: [DONE]\n\n")
    await resp.write_eof()
    return resp


@pytest.fixture
async def fake_url():
    app = web.Application()
    app.router.add_post("/generate", _generate)
    server = TestServer(app)
    await server.start_server()
    yield str(server.make_url("/generate"))
    await server.close()


async def _one(url: str, rid: str, n: int = 9, ignore_eos: bool = True) -> RequestResult:
    r = RequestResult(index=0)
    payload = generate_payload({"input_ids": [1, 2]}, n, 0.0, rid, ignore_eos=ignore_eos)
    async with make_session(1, 30, 10) as s:
        await stream_generate(s, url, {}, payload, r)
    return r


async def test_a_natural_output_may_end_before_its_cap(fake_url):
    r = await _one(fake_url, "eot", ignore_eos=False)
    assert r.ok and r.completion_tokens == 4 and r.finish_reason == "stop"
    # a fixed length asked for (ignore_eos) and not delivered is incomplete
    r = await _one(fake_url, "eot")
    assert not r.ok and r.incomplete and "4/9 tokens" in r.error


async def test_complete_stream(fake_url):
    r = await _one(fake_url, "ok")
    assert r.ok and r.error is None
    assert r.completion_tokens == 9 and r.prompt_tokens == 7
    assert r.chunk_tokens == [1, 3, 5, 7, 9]
    assert r.ttft == r.chunk_times[0]
    assert r.latency >= r.chunk_times[-1] > r.ttft
    assert r.spec_verify_ct == 5 and r.finish_reason == "length"
    d = r.to_dict()
    assert len(d["itl"]) == 8
    assert d["accept_length"] == pytest.approx(9 / 5)


async def test_http_error_is_a_failure(fake_url):
    r = await _one(fake_url, "http500")
    assert not r.ok and not r.incomplete
    assert r.error.startswith("HTTP 500") and "exploded" in r.error


async def test_cut_stream_is_incomplete(fake_url):
    r = await _one(fake_url, "cut")
    assert not r.ok and r.incomplete and r.completion_tokens == 2


async def test_error_event_and_abort_are_failures(fake_url):
    r = await _one(fake_url, "error")
    assert not r.ok and r.error == "bad input"
    r = await _one(fake_url, "abort")
    assert not r.ok and "abort" in r.error


async def test_unreachable_is_a_failure_not_an_exception():
    r = await _one("http://127.0.0.1:9/generate", "ok")
    assert not r.ok and r.error and r.completion_tokens == 0


async def test_closed_loop_keeps_concurrency_and_order(fake_url):
    payloads = [generate_payload({"text": "a"}, 9, 0.0, "ok") for _ in range(10)]
    seen = []
    async with make_session(4, 30, 10) as s:
        results, duration, peak = await run_closed_loop(
            s, fake_url, {}, payloads, 4, lambda d, f: seen.append(f)
        )
    assert [r.index for r in results] == list(range(10))
    assert all(r.ok for r in results)
    assert peak == 4 and max(seen) == 4
    assert duration > 0


def _slow_payloads(n: int, rid: str = "slow") -> list[dict]:
    return [generate_payload({"text": "a"}, 3, 0.0, rid) for _ in range(n)]


# The fake server shares the client's event loop, and the tests below measure that loop's timing
# in milliseconds: run alone (make timing). In the parallel unit lane, beside lint, one CI run
# stalled this process for 0.2 s.
@pytest.mark.timing
async def test_open_loop_sends_on_schedule_whatever_is_in_flight(fake_url):
    offsets = [i * 0.02 for i in range(15)]
    IN_FLIGHT.update(now=0, peak=0)
    async with make_session(None, 30, 10) as s:
        payloads = _slow_payloads(15, "slow-1s")
        results, duration, peak = await run_open_loop(s, fake_url, {}, payloads, offsets)
    assert all(r.ok for r in results) and [r.index for r in results] == list(range(15))
    assert [r.scheduled for r in results] == offsets
    # each answer takes 1 s and a request is due every 20 ms: all 15 in flight, not 1
    assert peak >= 12 and IN_FLIGHT["peak"] >= 12
    # a client that waited for an answer before sending would be about 1 s late
    lags = [send_lag(r) for r in results]
    assert all(lag is not None and -0.001 <= lag < 0.5 for lag in lags), lags
    assert duration >= offsets[-1] + 1.0


@pytest.mark.timing
async def test_max_concurrency_caps_in_flight_and_the_wait_is_send_lag(fake_url):
    seen: list[int] = []
    IN_FLIGHT.update(now=0, peak=0)
    async with make_session(None, 30, 10) as s:
        results, _, peak = await run_open_loop(
            s, fake_url, {}, _slow_payloads(9), [0.0] * 9, 3, lambda d, f: seen.append(f)
        )
    assert all(r.ok for r in results)
    assert peak == 3 and max(seen) == 3 and IN_FLIGHT["peak"] == 3
    # three waves: the last three waited for two answers of 0.2 s each
    lags = sorted(send_lag(r) or 0.0 for r in results)
    assert lags[-1] >= 0.38 and lags[0] < 0.1
    summary = open_loop_summary(results, 50.0, 1.0, 3)
    assert not summary["valid"] and "max_concurrency 3" in summary["invalid_reason"]


async def _fake_send(session, url, headers, payload, result, body=None, block_s=0.0):
    """Sends nothing: marks the request sent now, after blocking the loop for `block_s`."""
    if block_s:
        time.sleep(block_s)  # a client whose send path costs CPU
    result.start = time.perf_counter()
    result.ok = True


@pytest.mark.timing
async def test_the_schedule_is_absolute_a_stall_is_not_carried_forward(monkeypatch):
    monkeypatch.setattr(bench.client, "stream_generate", _fake_send)
    stalled = []

    def stall_once(done: int, in_flight: int) -> None:
        if not stalled:
            stalled.append(True)
            time.sleep(0.08)  # the loop is blocked through the next 8 arrivals

    offsets = [i * 0.01 for i in range(30)]
    payloads = [generate_payload({"text": "a"}, 3, 0.0, None) for _ in offsets]
    results, _, _ = await run_open_loop(None, "", {}, payloads, offsets, None, stall_once)
    lags = [send_lag(r) or 0.0 for r in results]
    assert max(lags[:8]) >= 0.05  # the stalled ones were late ...
    assert max(lags[15:]) < 0.03  # ... and the later ones on time again, not 80 ms late each


async def test_a_slow_client_makes_the_cell_invalid_with_the_reason(monkeypatch):
    async def slow(*args, **kw):
        await _fake_send(*args, **kw, block_s=0.006)

    monkeypatch.setattr(bench.client, "stream_generate", slow)
    offsets = [i * 0.002 for i in range(100)]  # 500 requests/s, each costing 6 ms
    payloads = [generate_payload({"text": "a"}, 3, 0.0, None) for _ in offsets]
    results, _, _ = await run_open_loop(None, "", {}, payloads, offsets)
    s = open_loop_summary(results, 500.0, 1.0, None, max_send_lag_ms=5.0)
    assert s["valid"] is False
    assert s["send_lag_ms"]["p99"] > 5.0
    assert "fell behind its schedule" in s["invalid_reason"]
    assert "measured the client, not the server" in s["invalid_reason"]
    assert s["achieved_rate"] < 250  # the client sent about one per 6 ms
    assert len(results) == 100 and all(r.ok for r in results)


@pytest.mark.timing
async def test_a_fast_client_keeps_its_schedule(monkeypatch):
    monkeypatch.setattr(bench.client, "stream_generate", _fake_send)
    offsets = [i * 0.005 for i in range(60)]
    payloads = [generate_payload({"text": "a"}, 3, 0.0, None) for _ in offsets]
    results, _, _ = await run_open_loop(None, "", {}, payloads, offsets)
    # a generous bound: the client's headroom is benchmarks/client_headroom.py's figure
    s = open_loop_summary(results, 200.0, 1.0, None, max_send_lag_ms=30.0)
    assert s["valid"] and s["invalid_reason"] is None
    assert s["scheduled_rate"] == pytest.approx(200.0)
    assert s["achieved_rate"] == pytest.approx(200.0, rel=0.1)


async def test_open_loop_needs_a_send_time_per_payload():
    with pytest.raises(ValueError, match="send times"):
        await run_open_loop(None, "", {}, [generate_payload({"text": "a"}, 3, 0.0, None)], [])


async def test_the_pool_lets_go_of_a_connection_before_sglang_closes_it():
    """SGLang's uvicorn closes a keep-alive connection idle for 5 s; the bench's pool must not
    hold one longer, or a request goes out on a connection the server has closed."""
    from bench.client import KEEPALIVE_S

    async with make_session(4, 30, 10) as s:
        connector = s.connector
        assert connector is not None
        assert connector._keepalive_timeout == KEEPALIVE_S < 5.0
