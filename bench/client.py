"""Streaming /generate client (aiohttp) and the load generators of one cell: closed loop (a
fixed number of requests in flight) and open loop (requests sent on a schedule).

Kept cheap per chunk: one perf_counter() at read arrival, a regex for the token count, two
list appends. Kept cheap per open-loop send: bodies are encoded before the cell starts, and
each arrival is a timer of the event loop that starts one task. Everything else is computed
after the cell by bench.metrics.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import deque
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

import aiohttp

from bench.metrics import RequestResult

_DATA = b"data:"
_DONE = b"[DONE]"
_ERROR = b'{"error"'
_CT_KEY = b'"completion_tokens":'
_CT_RE = re.compile(rb'"completion_tokens":\s*(\d+)')


async def _on_body_sent(
    session: aiohttp.ClientSession, ctx: SimpleNamespace, params: object
) -> None:
    holder = ctx.trace_request_ctx
    if isinstance(holder, list) and not holder:
        holder.append(time.perf_counter())


# SGLang's uvicorn closes a connection idle for 5 s (SGLANG_TIMEOUT_KEEP_ALIVE, srt/environ.py of
# 0.5.11); aiohttp keeps one 15 s, and a request sent on a connection the server has closed is
# lost (a POST is not sent again): the pool lets go of them first
KEEPALIVE_S = 4.0


def make_session(
    connections: int | None, request_timeout: float, idle_timeout: float
) -> aiohttp.ClientSession:
    """One session for the whole run; the connection pool must not cap the concurrency
    (`connections` None: no limit, for open-loop cells without a cap)."""
    limit = 0 if connections is None else max(connections, 1) + 4
    connector = aiohttp.TCPConnector(
        limit=limit, limit_per_host=0, ttl_dns_cache=300, keepalive_timeout=KEEPALIVE_S
    )
    timeout = aiohttp.ClientTimeout(total=request_timeout, sock_read=idle_timeout)
    # aiohttp calls this right before it writes the request body to the socket: the moment a
    # request's clock starts (see stream_generate).
    trace = aiohttp.TraceConfig()
    trace.on_request_chunk_sent.append(_on_body_sent)
    return aiohttp.ClientSession(
        connector=connector,
        timeout=timeout,
        read_bufsize=2**18,
        cookie_jar=aiohttp.DummyCookieJar(),
        trace_configs=[trace],
    )


def generate_payload(
    prompt_part: dict[str, Any],
    output_len: int,
    temperature: float,
    rid: str | None,
    ignore_eos: bool = True,
    stream: bool = True,
) -> dict[str, Any]:
    """A /generate body: `output_len` tokens exactly (`ignore_eos`), or up to the model's own
    end of turn with `output_len` as the cap."""
    payload: dict[str, Any] = {
        **prompt_part,
        "sampling_params": {
            "max_new_tokens": output_len,
            "ignore_eos": ignore_eos,
            "temperature": temperature,
        },
        "stream": stream,
    }
    if rid is not None:
        payload["rid"] = rid
    return payload


def encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, separators=(",", ":")).encode()


def _finish_type(fr: Any) -> str | None:
    if isinstance(fr, dict):
        return str(fr.get("type")) if fr.get("type") is not None else None
    return None if fr is None else str(fr)


async def stream_generate(
    session: aiohttp.ClientSession,
    url: str,
    headers: dict[str, str],
    payload: dict[str, Any],
    result: RequestResult,
    body: bytes | None = None,
) -> None:
    """Send one streaming /generate and fill `result` (`body`: the payload already encoded).
    Never raises for request failures."""
    params = payload["sampling_params"]
    expected = params["max_new_tokens"]
    # without ignore_eos the model may end its turn before the cap: any length is complete
    natural = not params.get("ignore_eos")
    # Encoded before the clock starts: 32k input_ids take milliseconds to serialize, which
    # is client work, not server latency.
    if body is None:
        body = encode(payload)
    headers = {**headers, "Content-Type": "application/json"}
    times = result.chunk_times
    counts = result.chunk_tokens
    last = 0
    meta: dict[str, Any] = {}
    last_data = b""
    done = False
    perf = time.perf_counter
    sent: list[float] = []
    st = perf()
    try:
        async with session.post(url, data=body, headers=headers, trace_request_ctx=sent) as resp:
            # The clock starts when the body is handed to the socket, not when aiohttp starts
            # building the request: in a burst of N requests the last one is built after the
            # other N-1 (about 0.3 ms each), which is client time, not server latency.
            if sent:
                st = sent[0]
            result.start = st
            if resp.status != 200:
                text = (await resp.text())[:300]
                result.error = f"HTTP {resp.status}: {text}"
                return
            buf = b""
            # Raw reads, split here: one aiohttp call per network read instead of two per
            # event; events that arrived in the same read share its arrival time.
            async for piece in resp.content.iter_any():
                now = perf()
                lines = (buf + piece).split(b"\n")
                buf = lines.pop()
                for line in lines:
                    if not line.startswith(_DATA):
                        continue
                    data = line[5:].strip()
                    if data == _DONE:
                        done = True
                        break
                    if data.startswith(_ERROR):
                        last_data = data
                        done = False
                        break
                    # Cheap per chunk: the token count only; the last chunk is parsed in full
                    # once, at the end. In a JSON string quotes are escaped, so generated text
                    # cannot fake the key.
                    m = _CT_RE.match(data, max(data.rfind(_CT_KEY), 0))
                    if m is None:
                        continue
                    ct = int(m.group(1))
                    last_data = data
                    if ct > last:
                        times.append(now - st)
                        counts.append(ct)
                        last = ct
                else:
                    continue
                break
            end = perf()
    except asyncio.CancelledError:
        raise
    except Exception as e:  # any transport failure is a counted failure, never an abort
        result.error = f"{type(e).__name__}: {e}"[:300]
        end = perf()
    if last_data:
        try:
            obj = json.loads(last_data)
        except ValueError as e:
            obj = {"error": f"bad JSON chunk: {e}"}
        if "error" in obj and result.error is None:
            err = obj["error"]
            result.error = str(err.get("message") if isinstance(err, dict) else err)
        meta = obj.get("meta_info") or {}
    result.latency = end - st
    result.rid = meta.get("id", result.rid)
    result.prompt_tokens = meta.get("prompt_tokens")
    result.cached_tokens = meta.get("cached_tokens")
    result.spec_verify_ct = meta.get("spec_verify_ct")
    result.finish_reason = _finish_type(meta.get("finish_reason"))
    result.completion_tokens = last
    result.ttft = times[0] if times else None
    if result.error is None and result.finish_reason == "abort":
        result.error = f"aborted by server: {meta.get('finish_reason')}"
    short = last < 1 if natural else last < expected
    if result.error is None and (not done or short or result.finish_reason is None):
        result.error = f"incomplete stream: {last}/{expected} tokens, done={done}"
    result.incomplete = result.error is not None and last > 0
    result.ok = result.error is None


async def run_closed_loop(
    session: aiohttp.ClientSession,
    url: str,
    headers: dict[str, str],
    payloads: list[dict[str, Any]],
    concurrency: int,
    on_change: Callable[[int, int], None] | None = None,
) -> tuple[list[RequestResult], float, int]:
    """Keep `concurrency` requests in flight until all payloads are sent.

    Returns (results in payload order, wall duration in seconds, most requests seen in flight).
    `on_change(done, in_flight)` is called on every start and finish (for the progress display).
    """
    results = [RequestResult(index=i, rid=p.get("rid")) for i, p in enumerate(payloads)]
    next_i = 0
    in_flight = 0
    peak = 0
    finished = 0
    t0 = time.perf_counter()

    async def worker() -> None:
        nonlocal next_i, in_flight, peak, finished
        while next_i < len(payloads):
            i = next_i
            next_i += 1
            in_flight += 1
            peak = max(peak, in_flight)
            if on_change:
                on_change(finished, in_flight)
            results[i].start = time.perf_counter()
            await stream_generate(session, url, headers, payloads[i], results[i])
            results[i].start -= t0
            in_flight -= 1
            finished += 1
            if on_change:
                on_change(finished, in_flight)

    await asyncio.gather(*(worker() for _ in range(min(concurrency, len(payloads)))))
    return results, time.perf_counter() - t0, peak


# An open-loop client sleeps to this much before each send, then stays awake until it is due. A
# loop asleep in epoll wakes late: its timeouts are whole milliseconds, and an idle (virtual)
# CPU takes its time to resume; at 10 requests/s the send lag was 2.9 ms at the median, 4.8 at
# p99 on this project's 2-core VMs, more than at 200/s (1.2, 2.8), where the loop never idles.
# Awake, it costs at most this share of a core per request per second (0.2 % at 1/s).
WAKE_AHEAD_S = 0.002


async def run_open_loop(
    session: aiohttp.ClientSession,
    url: str,
    headers: dict[str, str],
    payloads: list[dict[str, Any]],
    offsets: Sequence[float],
    max_concurrency: int | None = None,
    on_change: Callable[[int, int], None] | None = None,
) -> tuple[list[RequestResult], float, int]:
    """Send payload i at `offsets[i]` seconds after the start, whatever is in flight.

    Each send is due at start + its offset, an absolute time, so lateness never accumulates;
    the loop wakes WAKE_AHEAD_S before it and stays awake until then. `results[i].scheduled`
    is the offset and `results[i].start` the actual send (when aiohttp writes the body), both
    from the start.

    With `max_concurrency` N, an arrival that finds N requests in flight waits for a slot
    (first come, first served) and is sent when one frees: that wait is part of its send lag,
    so a server slower than the offered rate makes the cell invalid (bench.metrics), as a
    client that falls behind does.

    Returns (results in payload order, wall duration in seconds, most requests seen in flight);
    `on_change(done, in_flight)` as in run_closed_loop.
    """
    if len(offsets) != len(payloads):
        raise ValueError(f"{len(payloads)} payloads but {len(offsets)} send times")
    results = [
        RequestResult(index=i, rid=p.get("rid"), scheduled=off)
        for i, (p, off) in enumerate(zip(payloads, offsets, strict=True))
    ]
    bodies = [encode(p) for p in payloads]
    headers = {**headers, "Content-Type": "application/json"}
    loop = asyncio.get_running_loop()
    all_done: asyncio.Future[None] = loop.create_future()
    waiting: deque[int] = deque()
    tasks: set[asyncio.Task[None]] = set()
    in_flight = peak = finished = 0

    async def send(i: int) -> None:
        nonlocal in_flight, finished
        try:
            await stream_generate(session, url, headers, payloads[i], results[i], bodies[i])
        except BaseException as e:  # stream_generate raises only when cancelled
            if not all_done.done():
                all_done.set_exception(e)
            raise
        results[i].start -= t0
        in_flight -= 1
        finished += 1
        if waiting:
            launch(waiting.popleft())
        if on_change:
            on_change(finished, in_flight)
        if finished == len(payloads) and not all_done.done():
            all_done.set_result(None)

    def launch(i: int) -> None:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        task = loop.create_task(send(i))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        if on_change:
            on_change(finished, in_flight)

    def arrive(i: int) -> None:
        if max_concurrency and in_flight >= max_concurrency:
            waiting.append(i)
        else:
            launch(i)

    async def pace() -> None:
        perf = time.perf_counter
        for i, off in enumerate(offsets):
            due = t0 + off
            early = due - WAKE_AHEAD_S - perf()
            if early > 0:
                await asyncio.sleep(early)
            while perf() < due:
                await asyncio.sleep(0)  # awake, and the answers being read keep flowing
            arrive(i)

    def paced(task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() and not all_done.done():
            all_done.set_exception(task.exception())  # type: ignore[arg-type]

    if not payloads:
        return results, 0.0, 0
    t0 = time.perf_counter()
    pacer = loop.create_task(pace())
    pacer.add_done_callback(paced)
    try:
        await all_done
    finally:
        pacer.cancel()
        for task in list(tasks):
            task.cancel()
    return results, time.perf_counter() - t0, peak
