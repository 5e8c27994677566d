"""Client headroom: the highest Poisson request rate a client keeps to its schedule.

Ours (`bench.client.run_open_loop`, as `python -m bench run --request-rate` drives it) and
sglang's own (`sglang.bench_serving` 0.5.23: its `get_request` generator and `benchmark()`),
side by side, against the same local stub server: a raw asyncio HTTP server in its own process
that answers SGLang's streaming `/generate` (what both clients send by default here; it is also
sglang.bench_serving's default backend, `sglang`) and the OpenAI-style streaming
`/v1/completions` (`--sglang-backend sglang-oai`) with a few tiny SSE chunks, almost at once.

A client sustains a rate when every request succeeds and its p99 send lag is at most
`--bound-ms` (5: the bench's default `max_send_lag_ms`). Send lag = the moment aiohttp writes a
request's body (its `on_request_chunk_sent` trace, for both clients) minus the moment the
request was due:

- ours: the cell's start + its scheduled offset (bench.arrivals, Poisson);
- sglang's: the start of its `get_request` generator + the sum of the exponential gaps it drew
  before that request (recorded by wrapping `numpy.random.exponential`, which it calls once
  per request; its generator sleeps each gap after yielding, so its lateness accumulates, and
  that is what it does). The request function is wrapped only to know which request a trace
  belongs to (a context variable); its body, its own session per request, is run as is.

Each client runs in its own process (sglang's in `--sglang-python`), fed one rate at a time.
The search doubles the rate from `--start-rate` while the client sustains it, then bisects
(geometric midpoints) between the last rate sustained and the first one not, `--bisect-steps`
times. `--rounds` searches per client, alternating which goes first; prints each round, the
medians and the ratio ours / sglang's.

    .venv/bin/python benchmarks/client_headroom.py [--rounds 3] \\
        [--sglang-python /tmp/sglv/bin/python]

About 17 minutes with 3 rounds on a 2-core machine: sglang's searches go down to `--min-rate`
(1/s: 200 s a trial), where its accumulating lag still misses the bound.

sglang.benchmark.serving imports `datasets` for its MMMU loader at import time; when that
package is missing, the worker puts an empty module in its place (that loader is never used)
and says so. Without the sglang interpreter, or when it cannot import sglang.bench_serving, the
script says so and exits 2: there is no figure to compare with.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
MARK = "HEADROOM "  # prefix of the workers' answer lines (sglang prints much else)


# --- the stub server --------------------------------------------------------------------------


class _StubProtocol(asyncio.Protocol):
    """HTTP/1.1 keep-alive, chunked streaming answers; one request at a time per connection."""

    def __init__(self, chunks: int, gap_s: float) -> None:
        self.chunks = chunks
        self.gap_s = gap_s
        self.buf = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buf[:end].decode("latin-1").split("\r\n")
            length = 0
            for line in head[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            if len(self.buf) < end + 4 + length:
                return
            body = self.buf[end + 4 : end + 4 + length]
            self.buf = self.buf[end + 4 + length :]
            method, path = head[0].split(" ")[:2]
            self.answer(method, path, body)

    def answer(self, method: str, path: str, body: bytes) -> None:
        if method == "GET" and path == "/v1/models":
            return self.json({"object": "list", "data": [{"id": "stub", "object": "model"}]})
        if method == "POST" and path in ("/generate", "/v1/completions"):
            req = json.loads(body)
            events = (_generate_events if path == "/generate" else _completion_events)(
                req, self.chunks
            )
            return self.stream(events)
        return self.json({"error": f"no {method} {path} here"}, 404)

    def json(self, obj: Any, status: int = 200) -> None:
        data = json.dumps(obj).encode()
        reason = "OK" if status == 200 else "Not Found"
        head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
        self.write(head.encode() + f"Content-Length: {len(data)}\r\n\r\n".encode() + data)

    def stream(self, events: list[bytes]) -> None:
        self.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        loop = asyncio.get_running_loop()
        for i, event in enumerate(events):
            loop.call_later(self.gap_s * i, self.write, b"%x\r\n%s\r\n" % (len(event), event))
        loop.call_later(self.gap_s * len(events), self.write, b"0\r\n\r\n")

    def write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)


def _sse(obj: Any) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def _split(total: int, chunks: int) -> list[int]:
    """Cumulative token counts of `chunks` events that end at `total`."""
    n = max(1, min(chunks, total))
    return [math.ceil(total * (i + 1) / n) for i in range(n)]


def _generate_events(req: dict[str, Any], chunks: int) -> list[bytes]:
    total = int(req["sampling_params"]["max_new_tokens"])
    prompt = len(req.get("input_ids") or []) or 1
    out = []
    for ct in _split(total, chunks):
        finish = {"type": "length", "length": total} if ct == total else None
        meta = {
            "id": req.get("rid") or "stub",
            "prompt_tokens": prompt,
            "completion_tokens": ct,
            "cached_tokens": 0,
            "finish_reason": finish,
        }
        out.append(_sse({"text": " tok" * ct, "output_ids": [7] * ct, "meta_info": meta}))
    return [*out, b"data: [DONE]\n\n"]


def _completion_events(req: dict[str, Any], chunks: int) -> list[bytes]:
    total = int(req.get("max_tokens") or 1)
    out, last = [], 0
    for ct in _split(total, chunks):
        done = ct == total
        usage = {"prompt_tokens": 1, "completion_tokens": ct, "total_tokens": ct + 1}
        choice = {
            "index": 0,
            "text": " tok" * (ct - last),
            "finish_reason": "length" if done else None,
        }
        event = {"id": "cmpl-stub", "object": "text_completion", "model": "stub"}
        out.append(_sse({**event, "choices": [choice], "usage": usage if done else None}))
        last = ct
    return [*out, b"data: [DONE]\n\n"]


def serve(port: int, chunks: int, gap_ms: float) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(
            lambda: _StubProtocol(chunks, gap_ms / 1000), "127.0.0.1", port, backlog=4096
        )
        async with server:
            await server.serve_forever()

    asyncio.run(main())


# --- our client's worker ----------------------------------------------------------------------


def ours_worker(url: str, input_len: int, output_len: int) -> None:
    """Reads {"rate", "n", "seed"} lines; answers each with the trial's figures."""
    sys.path.insert(0, str(ROOT))
    from bench import arrivals
    from bench.client import generate_payload, make_session, run_open_loop
    from bench.metrics import open_loop_summary
    from bench.server import Server

    async def trial(session: Any, rate: float, n: int, seed: int) -> dict[str, Any]:
        server = Server(session, url, None)
        payloads = [
            generate_payload({"input_ids": _prompt(i, input_len)}, output_len, 0.0, f"r{i}")
            for i in range(n)
        ]
        # as the runner does: the connections of the first second's arrivals, opened ahead
        await server.open_connections(min(n, math.ceil(rate)))
        offsets = arrivals.schedule(n, rate, 1.0, seed)
        cpu = time.process_time()
        results, _, _ = await run_open_loop(session, url + "/generate", {}, payloads, offsets)
        cpu = time.process_time() - cpu
        s = open_loop_summary(results, rate, 1.0, None)
        lag = s["send_lag_ms"]
        return {
            "ok": sum(r.ok for r in results),
            "p50_ms": lag["median"],
            "p99_ms": lag["p99"],
            "max_ms": lag["max"],
            "achieved": s["achieved_rate"],
            "cpu_ms": 1000 * cpu / n,
            "errors": sorted({r.error or "" for r in results if not r.ok})[:3],
        }

    async def main() -> None:
        async with make_session(None, 60, 30) as session:
            print(MARK + json.dumps({"ready": True}), flush=True)
            for line in sys.stdin:
                job = json.loads(line)
                out = await trial(session, job["rate"], job["n"], job["seed"])
                print(MARK + json.dumps({**job, **out}), flush=True)

    asyncio.run(main())


def _prompt(i: int, input_len: int) -> list[int]:
    return [1000 + (i * 7 + j) % 20000 for j in range(input_len)]


# --- sglang's worker (run by --sglang-python) -------------------------------------------------

_SGLANG_WORKER = r"""
import asyncio, contextvars, importlib.util, json, sys, tempfile, time, types
MARK = "HEADROOM "
url, backend, input_len, output_len = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
if importlib.util.find_spec("datasets") is None:
    # imported at module level for the MMMU loader only, which this never uses
    print("note: package datasets missing; an empty module stands in", file=sys.stderr)
    stub = types.ModuleType("datasets")
    stub.load_dataset = None
    sys.modules["datasets"] = stub
import aiohttp
import numpy as np
import sglang.bench_serving  # the entry point as users run it (it re-exports the module below)
import sglang.benchmark.serving as s

class Tok:  # counts words: only calculate_metrics asks, after the run
    init_kwargs = {}
    def encode(self, text, add_special_tokens=False):
        return text.split()

ROWS = []
INTERVALS = []  # the exponential gaps get_request drew, in order
T0 = [0.0]
YIELDED = []  # perf_counter when get_request handed out each request
CPU = [0.0, 0.0]  # process_time when the schedule started, when the last request ended
INDEX = {}  # id(prompt) -> position in the schedule
SENT = {}  # position -> perf_counter when aiohttp wrote its body
CURRENT = contextvars.ContextVar("current", default=None)

exponential = np.random.exponential
def recorded_exponential(*a, **k):
    x = exponential(*a, **k)
    INTERVALS.append(float(x))
    return x
np.random.exponential = recorded_exponential

get_request = s.get_request
async def traced_get_request(input_requests, request_rate, *a, **k):
    T0[0] = time.perf_counter()
    CPU[0] = CPU[1] = time.process_time()
    i = 0
    async for r in get_request(input_requests, request_rate, *a, **k):
        YIELDED.append(time.perf_counter())
        INDEX[id(r.prompt)] = i
        i += 1
        yield r
s.get_request = traced_get_request

request_func = s.ASYNC_REQUEST_FUNCS[backend]
async def traced_request(request_func_input, pbar=None):
    CURRENT.set(INDEX.get(id(request_func_input.prompt)))
    try:
        return await request_func(request_func_input=request_func_input, pbar=pbar)
    finally:
        CPU[1] = time.process_time()  # the last one to finish ends the measured span
s.ASYNC_REQUEST_FUNCS[backend] = traced_request

async def on_sent(session, ctx, params):
    i = CURRENT.get()
    if i is not None and i not in SENT:
        SENT[i] = time.perf_counter()

def session():  # s._create_bench_client_session, with the trace added
    trace = aiohttp.TraceConfig()
    trace.on_request_chunk_sent.append(on_sent)
    return aiohttp.ClientSession(
        timeout=aiohttp.ClientTimeout(total=6 * 60 * 60),
        read_bufsize=10 * 1024**2,
        trace_configs=[trace],
    )
s._create_bench_client_session = session
s.get_tokenizer = lambda *a, **k: Tok()
s.check_chat_template = lambda *a, **k: True
s.get_dataset = lambda *a, **k: list(ROWS)

captured = []
run_benchmark = s.run_benchmark
s.run_benchmark = captured.append
out_file = tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False).name
sys.argv = ["sglang.bench_serving", "--backend", backend, "--base-url", url,
            "--dataset-name", "random", "--disable-tqdm", "--warmup-requests", "1",
            "--random-input-len", str(input_len), "--random-output-len", str(output_len),
            "--output-file", out_file]
s.cli_main()
args = captured[0]
s.run_benchmark = run_benchmark

def pct(v, q):
    v = sorted(v)
    pos = (len(v) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)

print(MARK + json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    job = json.loads(line)
    n = job["n"]
    ROWS[:] = [
        s.DatasetRow(prompt=[1000 + (i * 7 + j) % 20000 for j in range(input_len)],
                     prompt_len=input_len, output_len=output_len)
        for i in range(n)
    ]
    INTERVALS.clear(); INDEX.clear(); SENT.clear(); YIELDED.clear()
    args.request_rate, args.num_prompts, args.seed = job["rate"], n, job["seed"]
    result = run_benchmark(args) or {}
    due, t = [], T0[0]
    for i in range(n):
        due.append(t)
        t += INTERVALS[i] if i < len(INTERVALS) else 0.0
    # due given the previous hand-out: what its generator meant, its drift forgiven
    local = [T0[0]] + [YIELDED[i] + INTERVALS[i] for i in range(min(n, len(YIELDED)) - 1)]
    lags = [(SENT[i] - due[i]) * 1000 for i in range(n) if i in SENT]
    local_lags = [(SENT[i] - local[i]) * 1000 for i in range(len(local)) if i in SENT]
    sends = sorted(SENT.values())
    out = {
        "ok": int(result.get("completed") or 0) if len(SENT) == n else 0,
        "p50_ms": pct(lags, 50) if lags else None,
        "p99_ms": pct(lags, 99) if lags else None,
        "max_ms": max(lags) if lags else None,
        "local_p50_ms": pct(local_lags, 50) if local_lags else None,
        "local_p99_ms": pct(local_lags, 99) if local_lags else None,
        "achieved": (len(sends) - 1) / (sends[-1] - sends[0]) if len(sends) > 1 else None,
        "cpu_ms": 1000 * (CPU[1] - CPU[0]) / n,
    }
    print(MARK + json.dumps({**job, **out}), flush=True)
"""


# --- the driver -------------------------------------------------------------------------------


class Worker:
    """A client process fed one trial at a time on stdin."""

    def __init__(self, name: str, cmd: list[str], log: IO[bytes], ready_s: float) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, cwd=ROOT
        )
        self.read(ready_s)

    def read(self, timeout_s: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        for line in self.proc.stdout:
            if line.startswith(MARK):
                return dict(json.loads(line[len(MARK) :]))
            if time.monotonic() > deadline:
                break
        raise RuntimeError(f"{self.name} worker stopped answering (exit {self.proc.poll()})")

    def trial(self, rate: float, n: int, seed: int) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"rate": rate, "n": n, "seed": seed}) + "\n")
        self.proc.stdin.flush()
        return self.read(600)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def search(
    sustained: Callable[[float], bool],
    start: float,
    floor: float,
    ceiling: float,
    bisect_steps: int,
) -> float | None:
    """The highest rate sustained: doubling up from `start` (halving down while it fails, not
    below `floor`: None then), then `bisect_steps` geometric midpoints."""
    good: float | None = None
    bad: float | None = None
    if sustained(start):
        good = start
        while good * 2 <= ceiling:
            if not sustained(good * 2):
                bad = good * 2
                break
            good *= 2
    else:
        bad = start
        while good is None and bad / 2 >= floor:
            if sustained(bad / 2):
                good = bad / 2
            else:
                bad /= 2
    if good is None or bad is None:
        return good
    for _ in range(bisect_steps):
        mid = math.sqrt(good * bad)
        if sustained(mid):
            good = mid
        else:
            bad = mid
    return good


class Trials:
    """One trial per (client, rate) in a round, shared by the searches that ask for it."""

    def __init__(self, a: argparse.Namespace, workers: dict[str, Worker]) -> None:
        self.a = a
        self.workers = workers
        self.seeds = itertools.count(1)
        self.done: dict[tuple[str, float], dict[str, Any]] = {}

    def sustains(self, client: str, key: str) -> Callable[[float], bool]:
        """Does `client` complete every request with the p99 of `key` within the bound?"""

        def sustained(rate: float) -> bool:
            r = self.run(client, rate)
            p99 = r.get(key)
            return bool(r["ok"] == r["n"] and p99 is not None and p99 <= self.a.bound_ms)

        return sustained

    def run(self, client: str, rate: float) -> dict[str, Any]:
        if (client, rate) in self.done:
            return self.done[client, rate]
        n = max(self.a.min_requests, math.ceil(rate * self.a.seconds))
        r = self.workers[client].trial(rate, n, next(self.seeds))
        self.done[client, rate] = r
        line = f"  {client:6s} {rate:8.1f}/s n {n:5d}: {r['ok']}/{n} ok"
        if r["p99_ms"] is not None:
            line += f", send lag p50 {r['p50_ms']:.2f} p99 {r['p99_ms']:.2f} ms"
        if r.get("local_p99_ms") is not None:
            line += f" (per gap p50 {r['local_p50_ms']:.2f} p99 {r['local_p99_ms']:.2f} ms)"
        if r["achieved"] is not None:
            line += f", achieved {r['achieved']:.0f}/s"
        line += f", client CPU {r['cpu_ms']:.2f} ms/request"
        print(line, flush=True)
        return r


def timer_lateness(n: int = 400, rate: float = 100.0) -> tuple[float, float]:
    """p50 and p99 ms by which a bare asyncio timer fires late on this machine right now, on a
    Poisson schedule: the floor under any asyncio client's send lag (the OS's wake-ups)."""

    async def run() -> list[float]:
        loop = asyncio.get_running_loop()
        gen = random.Random(0)
        offsets = list(itertools.accumulate(gen.expovariate(rate) for _ in range(n)))
        late: list[float] = []
        done: asyncio.Future[None] = loop.create_future()
        t0, p0 = loop.time(), time.perf_counter()

        def fire(off: float) -> None:
            late.append(1000 * (time.perf_counter() - p0 - off))
            if len(late) == n:
                done.set_result(None)

        for off in offsets:
            loop.call_at(t0 + off, fire, off)
        await done
        return sorted(late)

    late = asyncio.run(run())
    return late[n // 2], late[int(0.99 * (n - 1))]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the stub server exited ({proc.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("the stub server never listened")


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--sglang-python", type=Path, default=Path("/tmp/sglv/bin/python"))
    p.add_argument("--sglang-backend", default="sglang", choices=["sglang", "sglang-oai"])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--bound-ms", type=float, default=5.0, help="p99 send lag sustained")
    p.add_argument("--seconds", type=float, default=2.0, help="of arrivals per trial")
    p.add_argument("--min-requests", type=int, default=200)
    p.add_argument("--start-rate", type=float, default=25.0)
    p.add_argument("--min-rate", type=float, default=1.0, help="the search goes no lower")
    p.add_argument("--max-rate", type=float, default=20000.0)
    p.add_argument("--bisect-steps", type=int, default=4)
    p.add_argument("--input-len", type=int, default=32)
    p.add_argument("--output-len", type=int, default=4)
    p.add_argument("--chunks", type=int, default=4, help="SSE events per answer")
    p.add_argument("--chunk-gap-ms", type=float, default=1.0, help="between the stub's events")
    p.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    p.add_argument("--ours-worker", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    a = _args(argv)
    if a.serve:
        serve(a.serve, a.chunks, a.chunk_gap_ms)
        return 0
    if a.ours_worker:
        ours_worker(a.ours_worker, a.input_len, a.output_len)
        return 0
    if not a.sglang_python.exists():
        print(
            f"no sglang interpreter at {a.sglang_python} (--sglang-python): sglang.bench_serving"
            " cannot be measured, so there is no figure to compare with",
            file=sys.stderr,
        )
        return 2
    log_dir = Path(tempfile.mkdtemp(prefix="client-headroom-"))
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    me = [sys.executable, str(Path(__file__).resolve())]
    shape = ["--input-len", str(a.input_len), "--output-len", str(a.output_len)]
    stub_cmd = [*me, "--serve", str(port), "--chunks", str(a.chunks)]
    stub_cmd += ["--chunk-gap-ms", str(a.chunk_gap_ms)]
    stub = subprocess.Popen(stub_cmd, stderr=(log_dir / "stub.log").open("wb"))
    workers: dict[str, Worker] = {}
    try:
        _wait_port(port, stub)
        env_note = f"stub {url} ({a.chunks} events, {a.chunk_gap_ms:g} ms apart)"
        print(f"{env_note}; logs in {log_dir}", flush=True)
        workers["ours"] = Worker(
            "ours", [*me, "--ours-worker", url, *shape], (log_dir / "ours.log").open("wb"), 60
        )
        sglang_cmd = [str(a.sglang_python), "-c", _SGLANG_WORKER, url, a.sglang_backend]
        sglang_cmd += [str(a.input_len), str(a.output_len)]
        try:
            workers["sglang"] = Worker(
                "sglang", sglang_cmd, (log_dir / "sglang.log").open("wb"), 300
            )
        except RuntimeError:
            tail = (log_dir / "sglang.log").read_text(errors="replace")[-2000:]
            print(f"sglang.bench_serving did not start under {a.sglang_python}:\n{tail}")
            return 2
        # (client, the p99 it is judged on): sglang's per-gap lag forgives its drift
        searches = {
            "ours": ("ours", "p99_ms"),
            "sglang": ("sglang", "p99_ms"),
            "sglang per gap": ("sglang", "local_p99_ms"),
        }
        found: dict[str, list[float | None]] = {name: [] for name in searches}
        for rnd in range(1, a.rounds + 1):
            p50, p99 = timer_lateness()
            print(f"round {rnd}: a bare asyncio timer fires late by p50 {p50:.2f} p99 {p99:.2f} ms")
            trials = Trials(a, workers)
            order = list(searches) if rnd % 2 else list(reversed(searches))
            for name in order:
                client, key = searches[name]
                best = search(
                    trials.sustains(client, key),
                    a.start_rate,
                    a.min_rate,
                    a.max_rate,
                    a.bisect_steps,
                )
                found[name].append(best)
                shown = f"below {a.min_rate:g}" if best is None else f"{best:.1f}"
                print(f"round {rnd}: {name} sustains {shown} requests/s", flush=True)
        print(f"\nhighest Poisson rate with p99 send lag <= {a.bound_ms:g} ms, {a.rounds} rounds:")
        labels = {
            "ours": "ours (bench.client.run_open_loop)",
            "sglang": f"sglang.bench_serving ({a.sglang_backend}), its schedule",
            "sglang per gap": f"sglang.bench_serving ({a.sglang_backend}), per gap",
        }
        medians = {name: _median(v) for name, v in found.items()}
        for name, values in found.items():
            med = medians[name]
            shown = f"< {a.min_rate:g}" if med is None else f"{med:.1f}"
            print(f"  {labels[name]:48s} {_list(values, a.min_rate):30s} median {shown}/s")
        ours = medians["ours"]
        for name in ("sglang", "sglang per gap"):
            theirs = medians[name]
            if ours is None:
                ratio = "ours sustains none above the floor"
            elif theirs is None:
                ratio = f"> {ours / a.min_rate:.2f} (theirs sustains none above {a.min_rate:g}/s)"
            else:
                ratio = f"{ours / theirs:.2f}"
            print(f"  ratio of the medians, ours / {name}: {ratio}")
        return 0
    finally:
        for w in workers.values():
            w.close()
        stub.kill()
        stub.wait()


def _list(values: list[float | None], floor: float) -> str:
    return ", ".join(f"< {floor:g}" if v is None else f"{v:.1f}" for v in values)


def _median(values: list[float | None]) -> float | None:
    """None (below the floor) counts as the lowest value."""
    ranked = sorted(values, key=lambda v: -1.0 if v is None else v)
    return ranked[(len(ranked) - 1) // 2]


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
