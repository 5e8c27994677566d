"""TTFT as the client sees it minus TTFT as the server sees it: ours vs sglang.bench_serving.

The server's own mean TTFT over a run is the difference of
`sglang:time_to_first_token_seconds_sum` / `_count` in /metrics before and after it (SGLang
stamps it in its tokenizer manager: from the parsed request to the first token out). A client's
mean TTFT minus that figure is what the client adds: HTTP, JSON, event loop, where it starts
the clock. The closer to zero, the more a client's TTFT is the server's.

Ours is `bench`'s own code (`bench.runner.run_benchmark`, random category: its record holds our
mean TTFT and the server-side /metrics difference of exactly the measured requests). sglang's
is `python -m sglang.bench_serving --backend sglang --dataset-name random-ids --tokenize-prompt`
(ids drawn inside the tokenizer's vocabulary, same input and output lengths, same number of
requests and concurrency, one warm-up request as ours), with /metrics scraped when it announces
its main run and after it, so the difference covers exactly its measured requests.
A third client, a raw keep-alive socket per slot, is the floor: what it adds is the server's
HTTP layer and the network, which no client can avoid.
The two alternate, `--rounds` times per concurrency; the medians are printed.

Against a running server (it needs --enable-metrics; bench_serving needs a python with sglang
and the model's tokenizer on this host, found from /model_info):

    .venv/bin/python benchmarks/ttft_vs_server.py --url http://127.0.0.1:30000 --api-key KEY \\
        --sglang-python /opt/sglang/venv/bin/python

Or it starts the server itself (free port, random API key, --enable-metrics), and stops it:

    .venv/bin/python benchmarks/ttft_vs_server.py --sglang-python /tmp/sglv/bin/python \\
        --model /tmp/tiny-model --cpu

`--cpu` adds the flags and environment of a CPU-only SGLang from tests/real_sglang/cpu_server.json
(torch_native attention, pytorch sampling, no CUDA graphs, a 16k-token KV cache,
SGLANG_USE_CPU_ENGINE=1); `--server-args` adds any others.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import records  # noqa: E402
from bench.client import generate_payload, make_session  # noqa: E402
from bench.prompt_sets import PromptBuilder  # noqa: E402
from bench.runner import RunConfig, run_benchmark  # noqa: E402
from bench.server import Server, metrics_diff, parse_prometheus  # noqa: E402

# How the real SGLang runs on CPU: one source, shared with the test suite.
CPU_SERVER = ROOT / "tests" / "real_sglang" / "cpu_server.json"
TTFT = "time_to_first_token_seconds_mean"


@dataclass
class Figure:
    client: str
    concurrency: int
    client_ms: float  # the client's mean TTFT
    server_ms: float  # the server's mean TTFT over the same requests (/metrics difference)
    requests: int
    failed: int

    @property
    def delta_ms(self) -> float:
        return self.client_ms - self.server_ms


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http(url: str, key: str | None, timeout: float = 10.0) -> tuple[int, str]:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return int(r.status), r.read().decode()
    except urllib.error.HTTPError as e:
        return int(e.code), ""
    except (urllib.error.URLError, OSError):
        return 0, ""


def scrape(url: str, key: str | None) -> dict[str, float]:
    status, body = http(url + "/metrics", key)
    if status != 200:
        sys.exit(f"{url}/metrics answered {status}: the server needs --enable-metrics")
    return parse_prometheus(body)


def server_ttft_ms(before: dict[str, float], after: dict[str, float]) -> float:
    derived = metrics_diff(before, after)["derived"]
    if TTFT not in derived:
        sys.exit("no time_to_first_token_seconds samples in the /metrics difference")
    return 1000.0 * float(derived[TTFT])


def start_server(a: argparse.Namespace) -> tuple[subprocess.Popen[bytes], str, str, Path]:
    port = a.port or free_port()
    key = secrets.token_hex(8)
    cpu = json.loads(CPU_SERVER.read_text())
    cmd = [
        str(a.sglang_python),
        "-m",
        "sglang.launch_server",
        "--model-path",
        str(a.model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--api-key",
        key,
        "--enable-metrics",
        *(cpu["flags"] if a.cpu else []),
        *shlex.split(a.server_args),
    ]
    env = {**os.environ, **(cpu["env"] if a.cpu else {})}
    log = Path(tempfile.mkstemp(prefix="ttft-vs-server-", suffix=".log")[1])
    with log.open("wb") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + a.start_timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"the server exited with {proc.returncode}; log: {log}")
        if http(url + "/health_generate", key, timeout=30)[0] == 200:
            print(f"server up on {url} (log {log})", flush=True)
            return proc, url, key, log
        time.sleep(1.0)
    stop_server(proc)
    sys.exit(f"the server was not ready after {a.start_timeout:.0f} s; log: {log}")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_ours(
    url: str, key: str | None, a: argparse.Namespace, concurrency: int, n: int, seed: int
) -> Figure:
    with tempfile.TemporaryDirectory() as tmp:
        cfg = RunConfig(
            url=url,
            out=Path(tmp),
            contexts=[a.context],
            concurrencies=[concurrency],
            output_lens=[a.output_len],
            categories=["random"],
            greedy_prompts=0,  # not what this measures
            requests_per_slot=1,
            min_requests=n,
            warmup=1,
            seed=seed,
            api_key=key,
            live=False,
        )
        rec = asyncio.run(run_benchmark(cfg))[0]
        reqs = records.load_requests(Path(tmp), rec["cell"]["cell_id"])
    s = rec["summary"]
    if not rec["server_metrics"] or TTFT not in rec["server_metrics"]["derived"]:
        sys.exit("our record has no server TTFT: the server needs --enable-metrics")
    bad = [r["prompt_tokens"] for r in reqs if r["prompt_tokens"] != a.context]
    if bad:
        sys.exit(f"prompt_tokens {bad[:5]} differ from the context {a.context}")
    return Figure(
        "ours",
        concurrency,
        float(s["ttft_ms"]["mean"]),
        1000.0 * float(rec["server_metrics"]["derived"][TTFT]),
        int(s["requests"]),
        int(s["failed"]),
    )


def run_bench_serving(
    url: str,
    key: str | None,
    a: argparse.Namespace,
    tokenizer: str,
    concurrency: int,
    n: int,
    seed: int,
) -> Figure:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.jsonl"
        cmd = [
            str(a.sglang_python),
            "-m",
            "sglang.bench_serving",
            "--backend",
            "sglang",
            "--base-url",
            url,
            "--tokenizer",
            tokenizer,
            "--dataset-name",
            "random-ids",
            "--tokenize-prompt",
            "--random-input-len",
            str(a.context),
            "--random-output-len",
            str(a.output_len),
            "--random-range-ratio",
            "1",
            "--num-prompts",
            str(n),
            "--max-concurrency",
            str(concurrency),
            "--warmup-requests",
            "1",
            "--flush-cache",
            "--seed",
            str(seed),
            "--disable-tqdm",
            "--output-file",
            str(out),
        ]
        env = {**os.environ, "OPENAI_API_KEY": key or ""}
        if not has_module(a.sglang_python, "datasets"):
            # bench_serving imports Hugging Face `datasets` for other data sets at start-up;
            # random-ids never calls it: a stand-in spares installing it (and pyarrow)
            stub = Path(tmp) / "standins" / "datasets"
            stub.mkdir(parents=True)
            (stub / "__init__.py").write_text(
                "def load_dataset(*args, **kwargs):\n"
                "    raise RuntimeError('datasets stand-in (ttft_vs_server.py)')\n"
            )
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (str(stub.parent), env.get("PYTHONPATH")) if p
            )
        # its own warm-up request is excluded from its mean: the /metrics "before" is scraped
        # when it announces the main run (then it flushes the cache and sleeps 1 s)
        env["PYTHONUNBUFFERED"] = "1"
        before: dict[str, float] | None = None
        tail: list[str] = []
        with subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True
        ) as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                tail = [*tail[-40:], line]
                if before is None and "Starting main benchmark run" in line:
                    before = scrape(url, key)
        after = scrape(url, key)
        if proc.returncode != 0 or not out.exists() or before is None:
            sys.exit(f"bench_serving failed ({proc.returncode}):\n{''.join(tail)}")
        res: dict[str, Any] = json.loads(out.read_text().splitlines()[-1])
    completed = int(res["completed"])
    return Figure(
        "bench_serving",
        concurrency,
        float(res["mean_ttft_ms"]),
        server_ttft_ms(before, after),
        n,
        n - completed,
    )


def random_vocabulary(url: str, key: str | None) -> list[int]:
    """The ids our random category draws from (bench's own choice), for the raw client."""

    async def get() -> list[int]:
        async with make_session(1, 60.0, 60.0) as session:
            vocab, _ = await PromptBuilder(Server(session, url, key)).random_vocabulary()
            return vocab

    return asyncio.run(get())


def run_raw(
    url: str,
    key: str | None,
    a: argparse.Namespace,
    vocab: list[int],
    concurrency: int,
    n: int,
    seed: int,
) -> Figure:
    """The floor: a blocking keep-alive socket and a thread per slot, each request
    pre-encoded, the clock started right before sendall() and stopped when recv()
    returns the first event with a token. What it adds over the server is the server's HTTP
    layer plus the network; a client cannot do less."""
    host, port = url.split("://", 1)[1].rsplit(":", 1)
    rng = random.Random(seed)
    wire: list[bytes] = []
    for _ in range(n):
        body = json.dumps(
            generate_payload(
                {"input_ids": rng.choices(vocab, k=a.context)}, a.output_len, 0.0, None
            ),
            separators=(",", ":"),
        ).encode()
        head = (
            f"POST /generate HTTP/1.1\r\nHost: {host}:{port}\r\n"
            + (f"Authorization: Bearer {key}\r\n" if key else "")
            + f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        wire.append(head.encode() + body)
    ttfts: list[float] = []
    failed = 0
    lock = threading.Lock()
    pending = iter(range(n))

    def worker(sock: socket.socket) -> None:
        nonlocal failed
        while True:
            with lock:
                i = next(pending, None)
            if i is None:
                return
            first: float | None = None
            buf = b""
            t0 = time.perf_counter()
            sock.sendall(wire[i])
            while not buf.endswith(b"\r\n0\r\n\r\n"):  # the chunked body's last chunk
                data = sock.recv(1 << 16)
                now = time.perf_counter()
                if not data:
                    break
                buf += data
                if first is None and b'"completion_tokens":' in buf:
                    first = now - t0
            with lock:
                if first is None or b"[DONE]" not in buf:
                    failed += 1
                else:
                    ttfts.append(first)

    # keep-alive connections, opened before the run (as ours: connection set-up excluded)
    socks = [socket.create_connection((host, int(port))) for _ in range(concurrency)]
    for sock in socks:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    before = scrape(url, key)
    threads = [threading.Thread(target=worker, args=(sock,)) for sock in socks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    after = scrape(url, key)
    for sock in socks:
        sock.close()
    if not ttfts:
        sys.exit("the raw client got no complete stream")
    return Figure(
        "raw socket",
        concurrency,
        1000.0 * statistics.mean(ttfts),
        server_ttft_ms(before, after),
        n,
        failed,
    )


def has_module(python: Path, name: str) -> bool:
    code = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({name!r}) is None)"
    return subprocess.run([str(python), "-c", code], check=False).returncode == 0


def model_path(url: str, key: str | None) -> str:
    for endpoint in ("/model_info", "/get_model_info"):
        status, body = http(url + endpoint, key)
        if status == 200:
            return str(json.loads(body)["model_path"])
    sys.exit(f"{url} gives no model_path (/model_info): pass --tokenizer")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    target = ap.add_mutually_exclusive_group(required=True)
    target.add_argument("--url", help="a running SGLang server (with --enable-metrics)")
    target.add_argument("--model", type=Path, help="start a server for this model (needs python)")
    ap.add_argument("--api-key", default=os.environ.get("SGLANG_API_KEY"), help="with --url")
    ap.add_argument(
        "--sglang-python",
        type=Path,
        help="python with sglang: runs bench_serving (skipped without it) and, with --model, "
        "the server",
    )
    ap.add_argument("--tokenizer", help="for bench_serving (default: the server's model_path)")
    ap.add_argument("--cpu", action="store_true", help="with --model: a CPU-only SGLang")
    ap.add_argument("--server-args", default="", help="with --model: more server flags")
    ap.add_argument("--port", type=int, default=0, help="with --model (default: a free one)")
    ap.add_argument("--start-timeout", type=float, default=300.0)
    ap.add_argument("--context", type=int, default=256, help="prompt tokens")
    ap.add_argument("--output-len", type=int, default=16)
    ap.add_argument("--requests-c1", type=int, default=16, help="requests at concurrency 1")
    ap.add_argument("--requests-c4", type=int, default=64, help="requests at concurrency 4")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args(argv)
    if a.model and not a.sglang_python:
        ap.error("--model needs --sglang-python")
    return a


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    # SIGTERM (and SIGINT, also when started in the background) stop a server we started
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    proc: subprocess.Popen[bytes] | None = None
    if a.model:
        proc, url, key, _ = start_server(a)
    else:
        url, key = a.url.rstrip("/"), a.api_key
    figures: list[Figure] = []
    try:
        tokenizer = a.tokenizer or (model_path(url, key) if a.sglang_python else "")
        vocab = random_vocabulary(url, key)
        print(
            f"context {a.context}, output {a.output_len}, {a.rounds} rounds; "
            f"requests: c=1 {a.requests_c1}, c=4 {a.requests_c4}",
            flush=True,
        )
        for rnd in range(a.rounds):
            for conc, n in ((1, a.requests_c1), (4, a.requests_c4)):
                runs: list[Callable[[], Figure]] = [
                    partial(run_ours, url, key, a, conc, n, rnd),
                    partial(run_raw, url, key, a, vocab, conc, n, rnd),
                ]
                if a.sglang_python:
                    runs.append(partial(run_bench_serving, url, key, a, tokenizer, conc, n, rnd))
                runs = runs[rnd % len(runs) :] + runs[: rnd % len(runs)]  # rotate who goes first
                for run in runs:
                    f = run()
                    figures.append(f)
                    print(
                        f"round {rnd + 1} c={conc} {f.client:13s} TTFT {f.client_ms:8.2f} ms, "
                        f"server {f.server_ms:8.2f} ms, client - server {f.delta_ms:+7.2f} ms "
                        f"({f.requests} requests, {f.failed} failed)",
                        flush=True,
                    )
    finally:
        if proc is not None:
            stop_server(proc)
    print("\nmedians over rounds of (client mean TTFT - server mean TTFT), ms:")
    for conc in (1, 4):
        for client in ("ours", "raw socket", "bench_serving"):
            ds = [f.delta_ms for f in figures if f.client == client and f.concurrency == conc]
            if ds:
                print(
                    f"  c={conc} {client:13s} {statistics.median(ds):+7.2f}   "
                    f"(rounds: {' '.join(f'{d:+.2f}' for d in ds)})"
                )
    return 1 if any(f.failed for f in figures) else 0


if __name__ == "__main__":
    sys.exit(main())
