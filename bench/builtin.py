"""The built-in chat workload: the conversations the bench sends by default (category `chat`).

A dataset like any user's: bench/prompts/builtin-chat.jsonl, in the `chat` format, read by
bench/datasets.py as `-e dataset=` files are. 48 conversations in each of five domains, each
request's `source` its domain, interleaved (coding, math, document, multiturn, json, coding,
...):

- `coding`: a piece of a Python file and a change request or a question about it;
- `math`: grade-school word problems to solve step by step, after worked examples;
- `document`: questions, summaries and rewrites over a passage of documentation;
- `multiturn`: pasted notes, chat logs or support tickets, two earlier exchanges, a last ask;
- `json`: semi-structured records (listings, logs, orders, ...) to extract into named fields.

Every conversation holds the `{material}` slot once, before the question it asks; the prompt
builder fills it from the conversation's material corpus (bench/corpora.py) and cuts from the
end of the material only, so the question survives any context length. The file and the two
corpora are the source: edited as data, checked by tests/unit/test_bench_builtin_workload.py.
"""

from __future__ import annotations

import functools

from bench import datasets
from bench.conversation import Conversation
from bench.corpora import PROMPTS

DATASET = PROMPTS / "builtin-chat.jsonl"


@functools.cache
def _read() -> tuple[Conversation, ...]:
    return tuple(datasets.read(DATASET, "chat"))


def conversations() -> list[Conversation]:
    """Every built-in conversation, in the file's order (a fresh list each call)."""
    return list(_read())
