"""Sampling a user's dataset: time and peak memory of `bench.datasets.sample` on a ShareGPT file
of about 1 GB (one JSON array, which must never sit in memory whole).

Generates the file: varied multi-turn conversations (system prompts, code with braces, quotes and
backslashes, non-ASCII text in raw UTF-8, a long tail of long pastes), some entries with an empty
conversation or without a user turn (skipped by the reader). It goes to a temporary directory
(removed at the end), or to --path, where a file of the right size (within 1 %) is reused.
Then a child process samples --n requests with `bench.datasets.sample`; printed: its time and
its peak RSS (getrusage(RUSAGE_CHILDREN).ru_maxrss) against the target, under 300 MB.

    .venv/bin/python benchmarks/dataset_sample.py [--size-mb 1024] [--n 1000] [--seed 0]
        [--path FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.conversation import digest  # noqa: E402
from bench.datasets import sample  # noqa: E402

TARGET_MB = 300
MB = 1_000_000
MIB = 1 << 20

_WORD_TEXT = (
    "the a of to and in is it that for on with as this be are was by at or from can not but "
    "model server request token latency throughput batch cache memory draft tree verify accept "
    "length context prompt output speculative decoding kernel layer attention head weight "
    "tensor python function class return value list error file path config deploy cluster node "
    "network bandwidth queue worker thread process result table query index schema column user "
    "customer order invoice payment shipping address email account password reset login page "
    "recipe flour sugar butter oven minutes chapter story character dragon castle river mountain "
    "history war treaty empire century trade economy market price inflation policy law court "
    "please explain why how what which when could would should might example step first then"
)
WORDS = _WORD_TEXT.split()
FOREIGN = (
    "Pourquoi le cache est-il invalidé après chaque requête ? Merci d'avance.",
    "Könnten Sie die Größe der Warteschlange erklären? Übersetzung: „schnell“.",
    "请帮我把这段代码改写成异步的版本，并解释一下为什么更快。",  # noqa: RUF001
    "このエラーの原因は何ですか？設定ファイルを確認しました。",  # noqa: RUF001
    "Объясните, пожалуйста, как работает спекулятивное декодирование.",
    "¿Cuál es la diferencia entre latencia y rendimiento? ñandú, pingüino.",
    "Merhaba! Şu fonksiyonu düzeltebilir misin? İyi çalışmıyor.",  # noqa: RUF001
    "Thanks!! 🙂🚀 — works now ✓ (even the “curly quotes” part)",
)
CODE = (
    'def parse(s: str) -> dict:\n    return {"key": s.split("=")[0], "raw": "\\"quoted\\""}\n',
    "for (int i = 0; i < n; ++i) {\n    if (a[i] == '}') { printf(\"%d\\n\", i); }\n}\n",
    'SELECT name, COUNT(*) FROM users WHERE email LIKE "%@example.com" GROUP BY name;\n',
    'const cfg = {"servers": [{"host": "a", "ports": [80, 443]}], "path": "C:\\\\tmp\\\\x"};\n',
    "regex = r'^\\[(\\d+)\\]\\s*\\{.*\\}$'  # brackets ] } [ { inside a string\n",
)


def paragraph(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.12:
        return "```\n" + "".join(rng.choices(CODE, k=rng.randint(1, 4))) + "```"
    if kind < 0.22:
        return " ".join(rng.choices(FOREIGN, k=rng.randint(1, 3)))
    sentences = []
    for _ in range(rng.randint(1, 7)):
        words = rng.choices(WORDS, k=rng.randint(5, 25))
        sentences.append(" ".join(words).capitalize() + rng.choice((".", ".", "?", "!", ":")))
    return " ".join(sentences)


def entry(rng: random.Random, pool: list[str], index: int) -> dict[str, Any]:
    """One ShareGPT entry: rounds of human/gpt turns, sometimes a system turn or no user turn."""
    turns: list[dict[str, str]] = []
    shape = rng.random()
    if shape < 0.02:  # empty conversation, as real dumps have
        return {"id": f"e{index}", "conversations": turns}
    if shape < 0.03:  # the model's turn only: no user turn
        return {"id": f"g{index}", "conversations": [{"from": "gpt", "value": rng.choice(pool)}]}
    if rng.random() < 0.08:
        turns.append({"from": "system", "value": rng.choice(pool)})
    rounds = min(1 + int(rng.expovariate(0.45)), 20)
    for r in range(rounds):
        k = rng.randint(1, 2) if rng.random() > 0.01 else rng.randint(20, 80)  # a long paste
        turns.append({"from": rng.choice(("human", "human", "user")), "value": pick(rng, pool, k)})
        if r < rounds - 1 or rng.random() < 0.9:  # most entries end with the model's answer
            speaker = rng.choice(("gpt", "gpt", "gpt", "chatgpt", "bard"))
            turns.append({"from": speaker, "value": pick(rng, pool, rng.randint(1, 8))})
    return {"id": f"{rng.getrandbits(40):010x}_{index}", "conversations": turns}


def pick(rng: random.Random, pool: list[str], k: int) -> str:
    return "\n\n".join(rng.choices(pool, k=k))


def generate(path: Path, size: int) -> int:
    """Write a ShareGPT array of about `size` bytes to `path` (via a temporary file); entries."""
    rng = random.Random(20261201)
    pool = [paragraph(rng) for _ in range(4000)]
    tmp = path.with_name(f".{path.name}.tmp")
    written, count = 0, 0
    with open(tmp, "w", encoding="utf-8") as out:
        out.write("[\n")
        while written < size:
            text = json.dumps(entry(rng, pool, count), ensure_ascii=False)
            text = ("  " if not count else ",\n  ") + text
            out.write(text)
            written += len(text) if text.isascii() else len(text.encode())
            count += 1
        out.write("\n]\n")
    os.replace(tmp, path)
    return count


def child(path: Path, n: int, seed: int) -> None:
    """Runs in the child: sample, print what it found as JSON."""
    rss_start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    s = sample(path, n, seed)
    seconds = time.perf_counter() - t0
    messages = sum(len(c.messages) for c in s.conversations)
    print(json.dumps({
        "seconds": seconds, "total": s.total, "skipped": s.skipped, "fmt": s.fmt,
        "sampled": len(s.conversations), "messages": messages, "rss_start_kib": rss_start,
        "digest": digest(s.conversations),
    }))  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("--size-mb", type=int, default=1024, help="file size in MiB (default 1024)")
    ap.add_argument("--n", type=int, default=1000, help="requests to sample (default 1000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--path", type=Path, help="where the file goes (reused if the right size)")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.n, args.seed)
        return
    size = args.size_mb * MIB
    with tempfile.TemporaryDirectory(prefix="dataset-sample-") as tmp:
        path = args.path or Path(tmp, "sharegpt.json")
        if path.is_file() and abs(path.stat().st_size - size) <= size / 100:
            print(f"file: {path}, reused ({path.stat().st_size / MIB:.1f} MiB)")
        else:
            t0 = time.perf_counter()
            entries = generate(path, size)
            seconds = time.perf_counter() - t0
            actual = path.stat().st_size
            print(
                f"file: {path}, {actual / MIB:.1f} MiB ({actual:,} bytes), {entries:,} entries, "
                f"generated in {seconds:.1f} s ({actual / MB / seconds:.0f} MB/s)"
            )
        actual = path.stat().st_size
        t0 = time.perf_counter()
        done = subprocess.run(
            [sys.executable, __file__, "--child", str(path), "--n", str(args.n),
             "--seed", str(args.seed)],
            stdout=subprocess.PIPE, text=True, check=True,
        )  # fmt: skip
        wall = time.perf_counter() - t0
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
        got = json.loads(done.stdout)
    print(
        f"sample: {got['sampled']:,} of {got['total']:,} requests ({got['skipped']:,} entries "
        f"without a user turn skipped), seed {args.seed}, format {got['fmt']}, "
        f"{got['messages'] / max(got['sampled'], 1):.1f} messages per request"
    )
    print(
        f"time: {got['seconds']:.1f} s in the child ({actual / MB / got['seconds']:.0f} MB/s), "
        f"{wall:.1f} s wall with the interpreter's start"
    )
    peak_mb = peak_kib * 1024 / MB
    verdict = "met" if peak_mb < TARGET_MB else "MISSED"
    print(
        f"peak RSS of the child: {peak_mb:.1f} MB (at its start: "
        f"{got['rss_start_kib'] * 1024 / MB:.1f} MB); target under {TARGET_MB} MB: {verdict}"
    )
    print(f"sample digest: {got['digest']}")


if __name__ == "__main__":
    main()
