"""The client workers of benchmarks/client_headroom.py, each a process fed one trial at a time:
ours (ours_worker, the script's `--ours-worker` process: bench.client.run_open_loop), sglang's
(_SGLANG_WORKER, the program `--sglang-python` runs: sglang.bench_serving, traced), and the
driver's handle on either (Worker)."""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
MARK = "HEADROOM "  # prefix of the workers' answer lines (sglang prints much else)


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


# --- the driver's handle on a worker ----------------------------------------------------------


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
