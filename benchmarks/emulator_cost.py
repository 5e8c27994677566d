"""Prints the SGLang emulator's own CPU cost per generated token and the token rate it
sustains with 64 concurrent streaming /generate requests against a zero-latency server
(SGLANG_EMU_TIME_SCALE=0), with speculation off (one token per chunk, the worst case) and on.

Client: a stdlib asyncio HTTP/1.1 client in this script (raw streams, chunked decoding), so
its own cost stays small; it shares the machine's cores with the server.
Server CPU: utime+stime of the server process from /proc/<pid>/stat.

    python3 benchmarks/emulator_cost.py [--streams 64] [--tokens 256] [--requests 256]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EMULATOR_DIR = ROOT / "tests" / "emulator"
TICKS = os.sysconf("SC_CLK_TCK")
PROMPT = "def add(a, b):\n    return a + b\n\nimport os\nclass Point:\n    x: int = 0;"


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def stream_one(port: int, n_tokens: int) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    body = json.dumps(
        {"text": PROMPT, "stream": True,
         "sampling_params": {"max_new_tokens": n_tokens, "ignore_eos": True}}
    ).encode()  # fmt: skip
    writer.write(
        b"POST /generate HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n%b" % (len(body), body)
    )
    while (await reader.readline()) not in (b"\r\n", b""):
        pass  # status line and headers
    last = b""
    while True:
        size = int((await reader.readline()).strip(), 16)
        if size == 0:
            break
        chunk = await reader.readexactly(size + 2)
        if not chunk.startswith(b"data: [DONE]"):
            last = chunk
    writer.close()
    return int(json.loads(last[6:])["meta_info"]["completion_tokens"])


async def drive(port: int, streams: int, requests: int, n_tokens: int) -> int:
    queue = list(range(requests))
    total = 0

    async def worker() -> None:
        nonlocal total
        while queue:
            queue.pop()
            n = await stream_one(port, n_tokens)  # not `total += await`: lost updates
            total += n

    await asyncio.gather(*(worker() for _ in range(streams)))
    return total


def start_server(flags: list[str], model_dir: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(EMULATOR_DIR), "SGLANG_EMU_TIME_SCALE": "0",
           "SGLANG_EMU_LOAD_SECONDS": "0", "SGLANG_EMU_WARMUP_SECONDS": "0"}  # fmt: skip
    proc = subprocess.Popen(
        ["/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable,
         "-m", "sglang_emulator", "--model-path", model_dir, "--port", str(port),
         "--max-running-requests", "64", *flags],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stderr is not None
    for line in proc.stderr:
        if b"fired up and ready" in line:
            return proc, port
    raise SystemExit(f"emulator did not start (exit {proc.wait()})")


def measure(label: str, flags: list[str], model_dir: str, args: argparse.Namespace) -> None:
    proc, port = start_server(flags, model_dir)
    try:
        asyncio.run(drive(port, args.streams, args.streams, 16))  # warm the code paths
        cpu0, client0, t0 = cpu_seconds(proc.pid), time.process_time(), time.perf_counter()
        tokens = asyncio.run(drive(port, args.streams, args.requests, args.tokens))
        wall = time.perf_counter() - t0
        server_cpu = cpu_seconds(proc.pid) - cpu0
        client_cpu = time.process_time() - client0
    finally:
        proc.terminate()
        proc.wait()
    print(
        f"{label:<16} tokens={tokens:>7}  wall={wall:6.2f}s  rate={tokens / wall:9.0f} tok/s  "
        f"server_cpu={server_cpu:6.2f}s ({1e6 * server_cpu / tokens:5.1f} us/token)  "
        f"client_cpu={client_cpu:6.2f}s"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("--streams", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=256, help="max_new_tokens per request")
    ap.add_argument("--requests", type=int, default=256)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model, drafter = Path(tmp, "model"), Path(tmp, "drafter")
        model.mkdir()
        drafter.mkdir()
        (model / "config.json").write_text('{"max_position_embeddings": 32768}')
        (drafter / "config.json").write_text('{"block_size": 16}')
        print(f"{args.streams} concurrent streams, {args.requests} requests x {args.tokens} "
              f"tokens, zero-latency emulator, {os.cpu_count()} cores")  # fmt: skip
        measure("speculation off", [], str(model), args)
        dflash = ["--speculative-algorithm", "DFLASH", "--speculative-draft-model-path",
                  str(drafter), "--speculative-draft-window-size", "2048"]  # fmt: skip
        measure("DFLASH (code)", dflash, str(model), args)


if __name__ == "__main__":
    main()
