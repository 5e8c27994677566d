"""Client overhead: our `python -m bench run` vs sglang's `python -m sglang.bench_serving`.

Both drive the same zero-latency emulator (SGLANG_EMU_TIME_SCALE=0) with the same workload
(random token ids, same input/output lengths, same number of requests and concurrency),
alternately, on the same machine. With a server that costs nothing, requests/s and tokens/s
measure how much load each client can generate: the higher, the less the client is in the way.

sglang's bench lives in its own virtual environment (default cache/venv-sglang-bench), used
for this comparison only. Set it up once (CPU-only torch is enough: sglang imports it):

    python3 -m venv cache/venv-sglang-bench
    cache/venv-sglang-bench/bin/pip install --no-deps sglang==0.5.23
    cache/venv-sglang-bench/bin/pip install aiohttp msgspec numpy orjson requests tqdm \\
        transformers tokenizers psutil pybase64 pillow starlette pyzmq ipython datasets \\
        sentencepiece compressed-tensors gguf apache-tvm-ffi==0.1.11 torch torchvision

It needs a tokenizer and a ShareGPT-style file for `--dataset-name random`; this script writes
a small word-level tokenizer and a dataset of original text into cache/bench-overhead/, so
nothing is downloaded.

    .venv/bin/python benchmarks/bench_overhead.py [--requests 400] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "cache" / "bench-overhead"
VOCAB = 32000

_MAKE_TOKENIZER = """
import sys
from tokenizers import Tokenizer, models, pre_tokenizers, decoders
from transformers import PreTrainedTokenizerFast
vocab = {"<unk>": 0, **{f"w{i}": i for i in range(1, VOCAB_SIZE)}}
tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tok.decoder = decoders.WordPiece(prefix="##")
PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>").save_pretrained(sys.argv[1])
""".replace("VOCAB_SIZE", str(VOCAB))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def prepare(sglang_python: Path) -> tuple[Path, Path]:
    tok_dir, dataset = WORK / "tokenizer", WORK / "sharegpt-like.json"
    if not (tok_dir / "tokenizer.json").exists():
        subprocess.run([str(sglang_python), "-c", _MAKE_TOKENIZER, str(tok_dir)], check=True)
    if not dataset.exists():
        text = (ROOT / "bench" / "prompts" / "prose-chat.txt").read_text()
        pairs = [p.split("\nAssistant: ") for p in text.split("\n\n") if "\nAssistant: " in p]
        # sglang's random set cuts or repeats one conversation per prompt: 4096 rows cover any
        # --requests used here; the words map onto tokenizer ids so encoding is lossless
        rows = [
            {
                "conversations": [
                    {
                        "from": "human",
                        "value": " ".join(f"w{(7 * i + len(w)) % 999 + 1}" for w in q.split()),
                    },
                    {"from": "gpt", "value": a},
                ]
            }
            for i in range(4096)
            for q, a in [pairs[i % len(pairs)]]
        ]
        dataset.write_text(json.dumps(rows))
    return tok_dir, dataset


def start_emulator(tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    (tmp / "model").mkdir()
    (tmp / "model" / "config.json").write_text(
        json.dumps({"max_position_embeddings": 65536, "vocab_size": 129280})
    )
    port = free_port()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(ROOT / "tests" / "emulator"),
        "SGLANG_EMU_TIME_SCALE": "0",
        "SGLANG_EMU_LOAD_SECONDS": "0",
        "SGLANG_EMU_WARMUP_SECONDS": "0",
    }
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    proc = subprocess.Popen(
        [
            python,
            "-m",
            "sglang_emulator",
            "--model-path",
            str(tmp / "model"),
            "--port",
            str(port),
            "--max-running-requests",
            "256",
        ],
        env=env,
        stdout=(tmp / "emulator.log").open("wb"),
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            # SGLang's /health generates a token and polls for it once a second.
            with urllib.request.urlopen(url + "/health", timeout=5) as r:
                if r.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"emulator did not start:\n{(tmp / 'emulator.log').read_text()}")


def run_ours(url: str, a: argparse.Namespace, out: Path) -> dict[str, float]:
    cmd = [
        sys.executable,
        "-m",
        "bench",
        "run",
        "--url",
        url,
        "--out",
        str(out),
        "--no-live",
        "--contexts",
        str(a.input_len),
        "--concurrency",
        str(a.concurrency),
        "--output-len",
        str(a.output_len),
        "--min-requests",
        str(a.requests),
        "--requests-per-slot",
        "1",
        "--warmup",
        str(a.concurrency),
        "--categories",
        "random",
        # the client's load generation is measured, not the greedy-output check
        "--greedy-prompts",
        "0",
    ]
    subprocess.run(cmd, check=True, cwd=ROOT, capture_output=True)
    (rec_path,) = [p for p in out.glob("*.json")]
    s = json.loads(rec_path.read_text())["summary"]
    assert s["completed"] == a.requests, s["errors"]
    return {
        "req_s": s["request_throughput"],
        "out_tok_s": s["output_throughput"],
        "cpu_ms_per_req": 1000 * s["client_cpu_s"] / a.requests,
    }


# Runs sglang.bench_serving in its own venv, timing the CPU its benchmark coroutine uses (the
# load phase, warm-up included; not the imports).
_SGLANG_WRAPPER = """
import sys, time
import sglang.benchmark.serving as s
orig = s.benchmark
async def timed(*a, **k):
    t = time.process_time()
    try:
        return await orig(*a, **k)
    finally:
        print("CLIENT_CPU_S", time.process_time() - t, flush=True)
s.benchmark = timed
sys.argv = ["sglang.bench_serving", *sys.argv[1:]]
s.cli_main()
"""


def run_sglang(
    url: str, a: argparse.Namespace, tok: Path, data: Path, out: Path
) -> dict[str, float]:
    cmd = [
        str(a.sglang_python),
        "-c",
        _SGLANG_WRAPPER,
        "--backend",
        "sglang",
        "--base-url",
        url,
        "--dataset-name",
        "random",
        "--dataset-path",
        str(data),
        "--tokenizer",
        str(tok),
        "--model",
        str(tok),
        "--random-input-len",
        str(a.input_len),
        "--random-output-len",
        str(a.output_len),
        "--random-range-ratio",
        "1",
        "--num-prompts",
        str(a.requests),
        "--max-concurrency",
        str(a.concurrency),
        "--tokenize-prompt",
        "--disable-tqdm",
        "--warmup-requests",
        str(a.concurrency),
        "--output-file",
        str(out),
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    p = subprocess.run(cmd, cwd=WORK, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"sglang.bench_serving failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    res = json.loads(out.read_text().strip().splitlines()[-1])
    assert res["completed"] == a.requests, res
    cpu = [float(x.split()[1]) for x in p.stdout.splitlines() if x.startswith("CLIENT_CPU_S")]
    return {
        "req_s": res["request_throughput"],
        "out_tok_s": res["output_throughput"],
        "cpu_ms_per_req": 1000 * cpu[-1] / (a.requests + a.concurrency),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--input-len", type=int, default=256)
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=5, help="alternating runs of each client")
    ap.add_argument(
        "--sglang-python",
        type=Path,
        default=ROOT / "cache" / "venv-sglang-bench" / "bin" / "python",
    )
    a = ap.parse_args()
    if not a.sglang_python.exists():
        raise SystemExit(f"{a.sglang_python} not found: set up the sglang venv (see --help)")
    WORK.mkdir(parents=True, exist_ok=True)
    tok, data = prepare(a.sglang_python)
    tmp = Path(tempfile.mkdtemp(prefix="bench-overhead-"))
    proc, url = start_emulator(tmp)
    results: dict[str, list[dict[str, float]]] = {"ours": [], "sglang": []}
    try:
        for r in range(a.rounds):
            results["ours"].append(run_ours(url, a, tmp / f"ours-{r}"))
            results["sglang"].append(run_sglang(url, a, tok, data, tmp / f"sglang-{r}.jsonl"))
            print(
                f"round {r + 1}: ours {results['ours'][-1]}  sglang {results['sglang'][-1]}",
                flush=True,
            )
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"\nzero-latency emulator, {a.requests} requests, concurrency {a.concurrency}, "
        f"input {a.input_len} output {a.output_len} tokens, median of {a.rounds} rounds:"
    )
    print(f"{'client':<26} {'requests/s':>11} {'output tok/s':>13} {'client CPU ms/req':>18}")
    med = {
        k: {m: statistics.median(x[m] for x in v) for m in ("req_s", "out_tok_s", "cpu_ms_per_req")}
        for k, v in results.items()
    }
    print(
        f"{'bench (ours)':<26} {med['ours']['req_s']:>11.1f} {med['ours']['out_tok_s']:>13.1f} "
        f"{med['ours']['cpu_ms_per_req']:>18.2f}"
    )
    print(
        f"{'sglang.bench_serving':<26} {med['sglang']['req_s']:>11.1f} "
        f"{med['sglang']['out_tok_s']:>13.1f} {med['sglang']['cpu_ms_per_req']:>18.2f}"
    )
    print(
        f"{'ratio ours / sglang':<26} {med['ours']['req_s'] / med['sglang']['req_s']:>11.2f} "
        f"{med['ours']['out_tok_s'] / med['sglang']['out_tok_s']:>13.2f}"
    )
    # The medians above may come from different rounds; the paired ratios compare two runs made
    # back to back, which is what separates the clients from the machine's noise.
    for metric, label in (("req_s", "req/s"), ("out_tok_s", "tok/s")):
        ratios = [
            o[metric] / g[metric] for o, g in zip(results["ours"], results["sglang"], strict=True)
        ]
        print(
            f"{f'paired ratios ({label})':<26} "
            + " ".join(f"{r:.2f}" for r in ratios)
            + f"  median {statistics.median(ratios):.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
