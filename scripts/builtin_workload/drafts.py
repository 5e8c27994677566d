"""Conversations before and after their material offset: the record starts of each material
corpus, and `finish`, which gives each drafted conversation its own record start of the kind
its question is about (a `def`, a paragraph, a problem, a meeting, a log line), evenly spread
over the corpus and never given out twice in a domain."""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from chat_texts import chat_material
from json_texts import json_material
from words import Material

from bench.conversation import MATERIAL_SLOT, Conversation
from bench.corpora import corpus, math_corpus

DOMAINS: tuple[str, ...] = ("coding", "math", "document", "multiturn", "json")
PER_DOMAIN = 48  # conversations per domain
MAX_TOKENS = {"coding": 512, "math": 384, "document": 256, "multiturn": 256, "json": 256}
CORPORA = ("code", "document", "math", "chat", "json")

SLOT = MATERIAL_SLOT


# ---------------------------------------------------------------- material corpora


def _scan(text: str, kind: str, pattern: str) -> Material:
    starts = tuple(m.start() for m in re.finditer(pattern, text, re.MULTILINE))
    return Material(text, {kind: starts})


@functools.cache
def material_of(name: str) -> Material:
    if name == "code":  # CPython standard-library source; records: def and class (and methods)
        return _scan(corpus("code"), "def", r"^(?:    )?(?:def|class) (?!__|\w*Error\b)\w+")
    if name == "document":  # prose: records are paragraphs of the Python Language Reference
        text = corpus("prose")
        reference = text.index("\n==== ")
        found = _scan(text, "paragraph", r"(?<=\n\n)[A-Z][^\n]{20,}")
        return Material(
            text, {"paragraph": tuple(o for o in found.starts["paragraph"] if o > reference)}
        )
    if name == "math":  # generated worked problems; records: each problem
        return _scan(math_corpus(0), "problem", r"^Problem \d+\.")
    if name == "chat":
        return chat_material()
    if name == "json":
        return json_material()
    raise KeyError(f"no built-in material corpus {name!r} (known: {', '.join(CORPORA)})")


def spread(starts: Sequence[int], n: int) -> list[int]:
    """n distinct record starts (of the sorted `starts`), evenly spread over the text they
    span: the first record at or after each of n evenly spaced positions."""
    if n > len(starts):
        raise ValueError(f"{n} conversations need {n} records, the corpus has {len(starts)}")
    lo, span = starts[0], starts[-1] - starts[0] + 1
    picked: list[int] = []
    index = 0
    for i in range(n):
        index = max(index, bisect.bisect_left(starts, lo + i * span // n))
        index = min(index, len(starts) - (n - i))  # leave a record for each one still to pick
        picked.append(starts[index])
        index += 1
    return picked


@dataclass(frozen=True)
class Draft:
    """A conversation before its material offset is known."""

    messages: tuple[tuple[str, str], ...]
    kind: str  # the kind of record the material must start with
    chars: int  # material_chars


def finish(domain: str, corpus_name: str, drafts: list[Draft]) -> list[Conversation]:
    """Conversations of `drafts`, each given its own record start of the right kind (kinds
    may overlap: `incident` logs are also `chatlog`s; no start is given out twice)."""
    material = material_of(corpus_name)
    offsets: dict[str, list[int]] = {}
    taken: set[int] = set()
    for kind in sorted({d.kind for d in drafts}):
        free = [o for o in material.starts[kind] if o not in taken]
        offsets[kind] = spread(free, sum(d.kind == kind for d in drafts))
        taken.update(offsets[kind])
    out = []
    for d in drafts:
        out.append(
            Conversation(
                messages=d.messages,
                source=domain,
                max_tokens=MAX_TOKENS[domain],
                material_corpus=corpus_name,
                material_offset=offsets[d.kind].pop(0),
                material_chars=d.chars,
            )
        )
    return out


def messages_of(system: str | None, *turns: str) -> tuple[tuple[str, str], ...]:
    """System message (if any), then turns alternating user, assistant, ..., user."""
    roles = [("user", "assistant")[i % 2] for i in range(len(turns))]
    head = (("system", system),) if system else ()
    return head + tuple(zip(roles, turns, strict=True))
