"""The streaming client against a small in-process aiohttp server with scripted streams."""

import asyncio
import json

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bench.client import generate_payload, make_session, run_closed_loop, stream_generate
from bench.metrics import RequestResult


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
