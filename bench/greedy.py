"""The greedy-output check, host side: a fixed set of prompts answered at temperature 0, one at a
time, and the output token ids recorded (`greedy.json` beside the cell records).

Speculative decoding is lossless at temperature 0 only when the drafter/verify path is correct:
the controller (sweep/store/greedy.py) compares each point's outputs token by token with the
baseline's (speculation off, same build, same hardware class). Concurrency 1, so that the
baseline's own answers do not depend on how requests were batched.

The set: the first `prompts` conversations of the dataset when the run has one (the user's
traffic), else of the built-in workload (interleaved by domain, so every domain is in it),
each rendered as a user sends it (context natural) and answered until the model ends its turn,
capped at `max_tokens`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

from bench.conversation import Conversation
from bench.conversation import digest as conversations_digest
from bench.errors import ServerError
from bench.records import write_json
from bench.server import Server

GREEDY_FILE = "greedy.json"
FORMAT = 1


def ids_digest(ids: list[int]) -> str:
    return hashlib.sha256(json.dumps(ids, separators=(",", ":")).encode()).hexdigest()[:16]


def params_of(conversations: list[Conversation], prompts: int, max_tokens: int) -> dict[str, Any]:
    """What decides the answers besides the server: the set and the sampling."""
    return {
        "prompts": prompts,
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "conversations": conversations_digest(conversations[:prompts]),
    }


def is_done(out: Path, params: dict[str, Any]) -> bool:
    try:
        rec = json.loads((out / GREEDY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(rec, dict) and rec.get("params") == params and not rec.get("failed")


async def _answer(server: Server, ids: list[int], max_tokens: int, i: int) -> dict[str, Any]:
    body = {
        "input_ids": ids,
        "sampling_params": {"max_new_tokens": max_tokens, "temperature": 0.0},
        "rid": f"greedy-{i}-{ids_digest(ids)}",
    }
    try:
        data = await server.generate_once(body)
    except ServerError as e:
        return {"error": str(e)[:300]}
    meta = data.get("meta_info") or {}
    output = data.get("output_ids")
    if not isinstance(output, list):
        raise ServerError(f"/generate answered without output_ids: {str(data)[:200]}")
    reason = meta.get("finish_reason")
    return {
        "output_ids": [int(t) for t in output],
        "completion_tokens": meta.get("completion_tokens"),
        "finish_reason": reason.get("type") if isinstance(reason, dict) else reason,
    }


async def run(
    server: Server,
    render: Any,
    conversations: list[Conversation],
    prompts: int,
    max_tokens: int,
    out: Path,
    concurrency: int = 1,
) -> dict[str, Any]:
    """Answer the first `prompts` conversations, one at a time (`concurrency` > 1 only to
    measure how batching moves the answers); write and return greedy.json. `render` is a
    bench.chat.ChatRenderer (its natural())."""
    chosen = conversations[:prompts]
    rendered = [await render.natural(conv) for conv in chosen]
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int) -> dict[str, Any]:
        async with sem:
            return await _answer(server, rendered[i], max_tokens, i)

    got = await asyncio.gather(*(one(i) for i in range(len(chosen))))
    answers = [
        {
            "index": i,
            "source": conv.source,
            "prompt_tokens": len(ids),
            "prompt": ids_digest(ids),
            **answer,
        }
        for i, (conv, ids, answer) in enumerate(zip(chosen, rendered, got, strict=True))
    ]
    record = {
        "format": FORMAT,
        "params": params_of(conversations, prompts, max_tokens),
        "concurrency": concurrency,
        "failed": sum(1 for a in answers if "error" in a),
        "answers": answers,
    }
    write_json(out / GREEDY_FILE, record)
    return record
