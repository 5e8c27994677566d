"""Chat-shaped prompts: conversations rendered by the served model's own chat template, cut to an
exact number of tokens.

How a conversation becomes the `input_ids` of one `/generate` request (never with a guessed
tokenizer or template):

1. The server renders it: `POST /tokenize {"messages": [...]}` answers the token ids that
   `/v1/chat/completions` would feed the model for the same messages (SGLang >= 0.5.12 renders
   them through the same `OpenAIServingChat._process_messages`, generation prompt included).
   So a conversation sent as it is has exactly the length `usage.prompt_tokens` reports on the
   chat endpoint.
2. A context target C cuts the rendered ids to exactly C tokens, inside one span of the
   conversation's text, leaving the template's structure (role markers, the end of the last
   user turn, the generation prompt) intact:
   - a conversation with a material slot (the built-in workload): the slot is filled with more
     of its material than C needs; the material's span is found by rendering the conversation
     once more with an empty slot (the common prefix and suffix of the two renderings); the
     material is cut from its END, so what follows it (the question) stays.
   - a conversation without one (a user's): the span is its longest message's content, and the
     cut keeps that content's beginning and end (its middle goes), so a document's heading and
     the question after it both stay. A conversation shorter than C cannot be used for C.
   Without a target (context `natural`) the conversation is sent as rendered, a slot filled with
   `material_chars` characters.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from bench.conversation import Conversation

# Chars per token of a material corpus before the first measurement: most tokenizers average
# 3-4.5 on English and code; too low costs one more /tokenize, never a wrong length.
_FIRST_CHARS_PER_TOKEN = 3.0
_MAX_ROUNDS = 8


class ChatServer(Protocol):
    async def render_chat(self, messages: list[dict[str, str]]) -> list[int]:
        """The token ids the server's chat template gives `messages` (generation prompt
        included); raises a BenchError when the server cannot render them."""
        ...


def span(full: list[int], without: list[int]) -> tuple[int, int]:
    """(prefix, suffix): how many leading and trailing ids `full` shares with `without`, the
    same conversation with one span's text emptied; full[prefix:len(full)-suffix] is that span
    (with any boundary token the emptied text changed)."""
    n = min(len(full), len(without))
    prefix = suffix = 0
    while prefix < n and full[prefix] == without[prefix]:
        prefix += 1
    # the suffix never reaches into the prefix
    while suffix < n - prefix and full[-1 - suffix] == without[-1 - suffix]:
        suffix += 1
    return prefix, suffix


def cyclic(text: str, offset: int, chars: int) -> str:
    """`chars` characters of `text` from `offset`, wrapping around."""
    if not text:
        raise ValueError("empty material corpus")
    start = offset % len(text)
    out = text[start : start + chars]
    while len(out) < chars:
        out += text[: chars - len(out)]
    return out


class ChatRenderer:
    """Renders conversations for cells; caches what it asked the server."""

    def __init__(self, server: ChatServer, material: Callable[[str], str]) -> None:
        self.server = server
        self.material = material  # corpus name -> its text
        self._ids: dict[tuple[int, str], list[int]] = {}
        self._chars_per_token: dict[str, float] = {}

    async def _render(self, conv: Conversation, fill: str | None, key: str) -> list[int]:
        k = (id(conv), key)
        if k not in self._ids:
            messages = conv.with_material(fill) if fill is not None else _plain(conv)
            self._ids[k] = await self.server.render_chat(messages)
        return self._ids[k]

    async def natural(self, conv: Conversation, shift: int = 0) -> list[int]:
        """The conversation as a user sends it (a slot filled with its natural material)."""
        if not conv.material_corpus:
            return await self._render(conv, None, "plain")
        text = cyclic(
            self.material(conv.material_corpus), conv.material_offset + shift, conv.material_chars
        )
        return await self._render(conv, text, f"natural:{shift}")

    async def exact(self, conv: Conversation, context: int, shift: int = 0) -> list[int] | None:
        """Exactly `context` ids of the rendered conversation, or None when it cannot have them
        (longer than `context` without its material; shorter than `context` and no slot)."""
        if conv.material_corpus:
            return await self._with_material(conv, context, shift)
        return await self._cut_longest(conv, context)

    async def _with_material(
        self, conv: Conversation, context: int, shift: int
    ) -> list[int] | None:
        base = await self._render(conv, "", "empty")
        if len(base) > context:
            return None
        corpus = self.material(conv.material_corpus)
        cpt = self._chars_per_token.get(conv.material_corpus, _FIRST_CHARS_PER_TOKEN)
        need = context - len(base)
        chars = int(need * cpt * 1.2) + 64
        for _ in range(_MAX_ROUNDS):
            text = cyclic(corpus, conv.material_offset + shift, chars)
            full = await self.server.render_chat(conv.with_material(text))
            prefix, suffix = span(full, base)
            material_ids = len(full) - prefix - suffix
            if material_ids > 0:
                self._chars_per_token[conv.material_corpus] = max(chars / material_ids, 0.5)
            if len(full) >= context:
                keep = context - prefix - suffix
                return full[: prefix + keep] + full[len(full) - suffix :]
            chars = int(chars * max(1.5, context / max(len(full), 1) * 1.2)) + 64
        raise RuntimeError(
            f"could not fill {context} tokens from material {conv.material_corpus!r}"
        )

    async def _cut_longest(self, conv: Conversation, context: int) -> list[int] | None:
        full = await self._render(conv, None, "plain")
        if len(full) < context:
            return None
        if len(full) == context:
            return full
        longest = max(range(len(conv.messages)), key=lambda i: len(conv.messages[i][1]))
        emptied = [
            {"role": r, "content": "" if i == longest else c}
            for i, (r, c) in enumerate(conv.messages)
        ]
        k = (id(conv), "emptied")
        if k not in self._ids:
            self._ids[k] = await self.server.render_chat(emptied)
        prefix, suffix = span(full, self._ids[k])
        keep = context - prefix - suffix
        if keep < 0:  # the rest of the conversation alone is longer than the context
            return None
        head = (keep + 1) // 2
        tail = keep - head
        return full[: prefix + head] + full[len(full) - suffix - tail :]

    async def many(
        self, jobs: list[tuple[Conversation, int | None, int]], parallel: int = 4
    ) -> list[list[int] | None]:
        """exact() (or natural() for a None context) of every (conversation, context, shift),
        `parallel` at a time, in order."""
        sem = asyncio.Semaphore(parallel)

        async def one(conv: Conversation, context: int | None, shift: int) -> list[int] | None:
            async with sem:
                if context is None:
                    return await self.natural(conv, shift)
                return await self.exact(conv, context, shift)

        return list(await asyncio.gather(*(one(*job) for job in jobs)))


def _plain(conv: Conversation) -> list[dict[str, str]]:
    return [{"role": r, "content": c} for r, c in conv.messages]
