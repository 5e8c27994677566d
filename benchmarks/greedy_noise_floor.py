"""The greedy-output check's noise floor on a real SGLang: the baseline against itself.

The check (bench/greedy.py, sweep/store/greedy.py) compares a speculative point's temperature-0
answers with the baseline's, token by token. How much the baseline disagrees with ITSELF is the
floor any threshold must sit under: here, the same server configuration (speculation off)
answers the same fixed prompts (the built-in workload's first `--prompts` conversations, as the
check sends them) after a restart, and with several of them in flight at once (batching changes
the arithmetic of every step on some kernels).

It starts the server itself (CPU flags from tests/real_sglang/cpu_server.json), twice:

    .venv/bin/python benchmarks/greedy_noise_floor.py --sglang-python /tmp/sglv/bin/python \\
        --model /tmp/tiny-model

and prints, for each run against the first (concurrency 1): identical answers, mean common
prefix, and the answers' lengths.
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
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import greedy  # noqa: E402
from bench.builtin import conversations  # noqa: E402
from bench.chat import ChatRenderer  # noqa: E402
from bench.client import make_session  # noqa: E402
from bench.corpora import material_text  # noqa: E402
from bench.server import Server  # noqa: E402
from sweep.store.greedy import compare  # noqa: E402

CPU_SERVER = ROOT / "tests" / "real_sglang" / "cpu_server.json"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(python: str, model: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    cpu = json.loads(CPU_SERVER.read_text())
    cmd = [python, "-m", "sglang.launch_server", "--model-path", model, *cpu["flags"]]
    cmd += ["--host", "127.0.0.1", "--port", str(port)]
    with log.open("ab") as out:
        return subprocess.Popen(
            cmd, env={**os.environ, **cpu["env"]}, stdout=out, stderr=subprocess.STDOUT
        )


def wait_ready(url: str, proc: subprocess.Popen[bytes], timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/health_generate", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(1)
    raise TimeoutError("the server did not become ready")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


async def answers(url: str, prompts: int, max_tokens: int, concurrency: int, out: Path) -> Any:
    async with make_session(concurrency, 600, 300) as session:
        server = Server(session, url, None)
        await server.flush_cache()
        renderer = ChatRenderer(server, material_text)
        return await greedy.run(
            server, renderer, conversations(), prompts, max_tokens, out, concurrency
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, allow_abbrev=False)
    ap.add_argument("--sglang-python", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--concurrency", default="4,8", help="runs with this many in flight")
    args = ap.parse_args()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    work = Path(tempfile.mkdtemp(prefix="greedy-floor-"))
    log = work / "server.log"
    runs: list[tuple[str, Any]] = []
    for start_no in (1, 2):
        proc = start(args.sglang_python, args.model, port, log)
        try:
            wait_ready(url, proc)
            levels = [1] if start_no == 2 else [1, *map(int, args.concurrency.split(","))]
            for c in levels:
                out = work / f"start{start_no}-c{c}"
                rec = asyncio.run(answers(url, args.prompts, args.max_tokens, c, out))
                runs.append((f"start {start_no}, concurrency {c}", rec))
        finally:
            stop(proc)
    reference = runs[0][1]
    lengths = sorted({len(a.get("output_ids") or []) for a in reference["answers"]})
    print(f"model {args.model}; {args.prompts} prompts, up to {args.max_tokens} tokens; ")
    print(f"reference (start 1, concurrency 1): answer lengths {lengths}")
    for name, rec in runs[1:]:
        v = compare(name, rec, "reference", reference, 1.0)
        print(f"{name}: {v.figures()}")
    print(f"records and the server log: {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
