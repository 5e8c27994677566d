"""Checks a chat-shaped `python -m bench run` against the real SGLang (real-sglang, part chat).

Prints one JSON object: what was measured and every problem (an empty list when all is well).

    check_chat.py run OUT_DIR URL REPLY_TOKENS FIXED_LEN CONTEXT
        every request completed; natural outputs end at the model's end of turn (REPLY_TOKENS,
        the end-of-turn token included, finish reason stop); fixed-length ones run past it to
        FIXED_LEN; CONTEXT cells are exactly CONTEXT tokens; every domain is there; and the
        bench's prompt length for each greedy conversation equals the real server's
        usage.prompt_tokens for the same messages on /v1/chat/completions.
    check_chat.py dataset OUT_DIR SOURCES    every request completed, each source measured
    check_chat.py floor A_DIR B_DIR          the greedy answers of two runs, compared

The API key comes from $SGLANG_API_KEY.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, os.environ.get("MOLECULE_PROJECT_DIRECTORY", "."))

from bench.builtin import conversations
from bench.chat import cyclic
from bench.corpora import material_text
from sweep.store.greedy import compare


def cells(out: Path) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    found = []
    for path in sorted(out.glob("ctx*.json")):
        rows = [json.loads(x) for x in path.with_suffix(".requests.jsonl").read_text().splitlines()]
        found.append((json.loads(path.read_text()), rows))
    return found


def completed(rec: dict[str, Any]) -> list[str]:
    s = rec["summary"]
    if s["failed"] or s["incomplete"] or s["completed"] != s["requests"]:
        return [f"{rec['cell']['cell_id']}: {s['completed']}/{s['requests']}, {s['errors']}"]
    return []


def chat_usage(url: str, messages: list[dict[str, str]]) -> int:
    body = json.dumps({"messages": messages, "max_tokens": 1}).encode()
    req = urllib.request.Request(
        url + "/v1/chat/completions",
        data=body,
        headers={
            "Content-Type": "application/json",
            "Authorization": f"Bearer {os.environ['SGLANG_API_KEY']}",
        },
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        return int(json.loads(resp.read())["usage"]["prompt_tokens"])


def check_run(out: Path, url: str, reply: int, fixed: int, context: int) -> dict[str, Any]:
    problems: list[str] = []
    seen: set[str] = set()
    for rec, rows in cells(out):
        problems += completed(rec)
        cell = rec["cell"]
        for r in rows:
            seen.add(r["source"])
            if cell["output_len"] == 0 and (
                r["finish_reason"] != "stop" or r["completion_tokens"] != reply
            ):
                problems.append(
                    f"{cell['cell_id']}: natural output {r['completion_tokens']} tokens, "
                    f"{r['finish_reason']}; the model ends its turn after {reply}"
                )
            if cell["output_len"] == fixed and (
                r["finish_reason"] != "length" or r["completion_tokens"] != fixed
            ):
                problems.append(f"{cell['cell_id']}: fixed output {r['completion_tokens']}")
            if cell["context"] == context and r["prompt_tokens"] != context:
                problems.append(f"{cell['cell_id']}: prompt {r['prompt_tokens']} != {context}")
    pool = conversations()
    domains = {c.source for c in pool}
    if seen != domains:
        problems.append(f"sources measured {sorted(seen)}, expected {sorted(domains)}")
    greedy = json.loads((out / "greedy.json").read_text())
    lengths = []
    for answer in greedy["answers"]:
        conv = pool[answer["index"]]
        text = cyclic(
            material_text(conv.material_corpus), conv.material_offset, conv.material_chars
        )
        server = chat_usage(url, conv.with_material(text))
        lengths.append([answer["prompt_tokens"], server])
        if answer["prompt_tokens"] != server:
            problems.append(
                f"greedy prompt {answer['index']} ({conv.source}): the bench sent "
                f"{answer['prompt_tokens']} tokens, /v1/chat/completions counts {server}"
            )
    return {"cells": len(cells(out)), "lengths": lengths, "problems": problems}


def check_dataset(out: Path, sources: list[str]) -> dict[str, Any]:
    problems: list[str] = []
    seen: set[str] = set()
    for rec, rows in cells(out):
        problems += completed(rec)
        seen.update(r["source"] for r in rows)
        seen.update(rec["summary"]["by_source"])
    if seen != set(sources):
        problems.append(f"sources measured {sorted(seen)}, expected {sorted(sources)}")
    return {"cells": len(cells(out)), "sources": sorted(seen), "problems": problems}


def check_floor(a: Path, b: Path) -> dict[str, Any]:
    first = json.loads((a / "greedy.json").read_text())
    second = json.loads((b / "greedy.json").read_text())
    v = compare("after restart", second, "before", first, 1.0)
    return {"floor": v.to_dict(), "figures": v.figures(), "problems": []}


def main() -> None:
    kind, out = sys.argv[1], Path(sys.argv[2])
    if kind == "run":
        url, reply, fixed, context = sys.argv[3], *map(int, sys.argv[4:7])
        result = check_run(out, url, reply, fixed, context)
    elif kind == "dataset":
        result = check_dataset(out, sys.argv[3].split(","))
    else:
        result = check_floor(out, Path(sys.argv[3]))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
