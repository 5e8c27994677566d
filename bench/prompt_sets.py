"""Prompt sets by category, cut to an exact context length with the server's own token counts.

How exact lengths are reached (never with a guessed tokenizer):

1. `random`: token ids drawn uniformly (with replacement) from the served model's own
   vocabulary, sent as `input_ids`: the length is exact by construction. The vocabulary is the
   set of distinct ids the server's `/tokenize` gives for the bench's corpora; a server without
   `/tokenize` falls back to `range(vocab_size)` of the model's `config.json`, read on this host
   from the `model_path` the server reports. Neither: a clear error, never a guessed id range
   (an id at or above the model's vocabulary size crashes SGLang's scheduler).
2. Text categories (`code`, `prose`, `math`), server with `/tokenize` (SGLang): the category's
   corpus is tokenized once by the server, and each request gets a window of exactly `context`
   ids of that stream, starting at its own offset (so no two requests share a cacheable
   prefix), sent as `input_ids`.
3. Text categories, server without `/tokenize`: the prompt is sent as text. Its length is
   found by asking the server to count (a `/generate` with `max_new_tokens=1` reports
   `prompt_tokens`): a secant search on the number of characters, then word-wise trimming.
   If the tokenizer cannot hit the target exactly, the nearest count below it is used; the
   per-request `prompt_tokens` the server reports are recorded either way.
4. Chat-shaped categories: `chat`, the built-in conversations of five domains (bench/builtin.py,
   a dataset file of the project's), and `dataset`, the user's own (bench/datasets.py): each is
   rendered by the server's own chat template and cut to exactly `context` tokens
   (bench/chat.py), sent as `input_ids`; every prompt carries its conversation's `source`.
   Context 0 (`natural`) sends them as rendered.

Every measured request records the server-reported `prompt_tokens`, so a record shows whether
the context was exact. Counting requests fill the prefix cache: the runner flushes it after
building prompts.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from bench import builtin
from bench.chat import ChatRenderer, ChatServer
from bench.conversation import Conversation
from bench.corpora import corpus, material_text
from bench.errors import BadArguments, BenchError

CATEGORIES = ("chat", "dataset", "random", "code", "prose", "math")
TEXT_CATEGORIES = ("code", "prose", "math")
CHAT_CATEGORIES = ("chat", "dataset")
_TOKENIZE_PIECE_CHARS = 16_000


class TokenServer(ChatServer, Protocol):
    async def tokenize(self, texts: list[str]) -> list[list[int]] | None: ...

    async def count_prompt_tokens(self, text: str) -> int: ...

    async def vocab_size(self) -> int:
        """The served model's vocabulary size; raises a BenchError when it cannot be known."""
        ...


@dataclass
class Prompt:
    input_ids: list[int] | None = None
    text: str | None = None
    tokens: int = 0  # the server-counted length this prompt was built to
    source: str = ""  # the conversation's domain or dataset tag (raw categories: the category)
    max_tokens: int | None = None  # the request's own output cap (output_len natural)

    def payload_part(self) -> dict[str, object]:
        return {"input_ids": self.input_ids} if self.input_ids is not None else {"text": self.text}


def random_prompts(vocab: Sequence[int], context: int, n: int, seed: int) -> list[Prompt]:
    """n prompts of `context` ids drawn uniformly, with replacement, from `vocab`."""
    if not vocab:
        raise ValueError("empty vocabulary")
    rng = random.Random(seed)
    return [Prompt(input_ids=rng.choices(vocab, k=context), tokens=context) for _ in range(n)]


def windows(stream: list[int], context: int, n: int, seed: int) -> list[Prompt]:
    """n windows of exactly `context` ids from a cyclic id stream, at distinct offsets."""
    if not stream:
        raise ValueError("empty token stream")
    rng = random.Random(seed)
    length = len(stream)
    reps = context // length + 2
    cyc = stream * reps
    offsets = (
        rng.sample(range(length), n) if n <= length else [rng.randrange(length) for _ in range(n)]
    )
    return [Prompt(input_ids=cyc[o : o + context], tokens=context) for o in offsets]


async def fit_text(server: TokenServer, source: str, start: int, context: int) -> Prompt:
    """A text starting at `start` of the cyclic `source` whose server-counted length is
    `context`, or the closest count below it."""
    # generous: no tokenizer in use averages more than 12 characters per token
    need = start + max(context * 12, len(source))
    cyc = (source * (need // len(source) + 1))[start:need]
    lo_chars, lo_tokens = 0, 0
    hi_chars, hi_tokens = len(cyc), None
    chars = min(hi_chars, context * 4)
    best: tuple[int, int] = (0, 0)  # (tokens, chars), the best at or below the target
    for step in range(40):
        n = await server.count_prompt_tokens(cyc[:chars])
        if n == context:
            return Prompt(text=cyc[:chars], tokens=n)
        if n < context:
            lo_chars, lo_tokens = chars, n
            best = max(best, (n, chars))
        else:
            hi_chars, hi_tokens = chars, n
        if hi_chars - lo_chars <= 1:
            break
        if hi_tokens is None:  # no upper point yet: extrapolate from the lower one
            guess = int(chars * context / max(n, 1)) + 1
        elif step % 2:  # bisection every other step guarantees progress
            guess = (lo_chars + hi_chars) // 2
        else:  # regula falsi between the bracket's ends
            span = (hi_tokens - lo_tokens) or 1
            guess = lo_chars + (context - lo_tokens) * (hi_chars - lo_chars) // span
        chars = min(max(guess, lo_chars + 1), hi_chars - 1)
    return Prompt(text=cyc[: best[1]], tokens=best[0])


def chat_pool(category: str, dataset: list[Conversation]) -> list[Conversation]:
    """The conversations a chat-shaped category draws from."""
    if category == "chat":
        return builtin.conversations()
    if not dataset:
        raise BadArguments("category dataset needs a dataset (--dataset FILE)")
    return dataset


class PromptBuilder:
    """Builds prompts for cells; caches the server's tokenization of each corpus."""

    def __init__(
        self,
        server: TokenServer,
        seed: int = 0,
        parallel: int = 4,
        dataset: list[Conversation] | None = None,
    ) -> None:
        self.server = server
        self.seed = seed
        self.parallel = parallel
        self.dataset = dataset or []
        self._streams: dict[str, list[int] | None] = {}
        self._vocab: tuple[list[int], str] | None = None
        self._chat: ChatRenderer | None = None
        self.method: dict[str, str] = {}

    async def _stream(self, category: str) -> list[int] | None:
        if category not in self._streams:
            text = corpus(category, self.seed)
            pieces = [
                text[i : i + _TOKENIZE_PIECE_CHARS]
                for i in range(0, len(text), _TOKENIZE_PIECE_CHARS)
            ]
            ids = await self.server.tokenize(pieces)
            self._streams[category] = [t for p in ids for t in p] if ids else None
        return self._streams[category]

    async def random_vocabulary(self) -> tuple[list[int], str]:
        """The ids the random category draws from, and how they were found (cached).

        Raises a BenchError when the server has no /tokenize and the model's vocabulary size
        cannot be read: out-of-range ids would crash the server's scheduler."""
        if self._vocab is None:
            seen: set[int] = set()
            for category in TEXT_CATEGORIES:
                stream = await self._stream(category)
                if not stream:
                    seen.clear()
                    break
                seen.update(stream)
            if seen:
                self._vocab = (
                    sorted(seen),
                    f"random input_ids from the {len(seen)} distinct ids of the server's "
                    "/tokenize of the corpora",
                )
            else:
                size = await self.server.vocab_size()
                if size <= 0:
                    raise BenchError(f"the served model reports vocab_size {size}")
                self._vocab = (
                    list(range(size)),
                    f"random input_ids in [0, {size}) (config.json vocab_size; no /tokenize)",
                )
        return self._vocab

    @property
    def chat(self) -> ChatRenderer:
        if self._chat is None:
            self._chat = ChatRenderer(self.server, material_text)
        return self._chat

    async def build_chat(self, category: str, context: int, n: int, seed: int) -> list[Prompt]:
        """n prompts of the category's conversations, exactly `context` tokens each (0: as
        rendered). The built-in pool is interleaved by domain and taken in order from a seeded
        start, so every domain comes round; a dataset's is taken in a seeded shuffle. A pool
        used up is taken again with the material shifted, so no two requests share a prefix
        (a dataset's own conversations do repeat then)."""
        pool = chat_pool(category, self.dataset)
        rng = random.Random(seed)
        if category == "chat":
            start = rng.randrange(len(pool))
            order = [(start + i) % len(pool) for i in range(len(pool))]
        else:
            order = list(range(len(pool)))
            rng.shuffle(order)
        target = context or None
        out: list[Prompt] = []
        cycle = 0
        while len(out) < n:
            pos = found = 0
            while pos < len(order) and len(out) < n:
                batch = [(pool[i], target, cycle * 7919) for i in order[pos : pos + n - len(out)]]
                pos += len(batch)
                for (conv, _, _), ids in zip(
                    batch, await self.chat.many(batch, self.parallel), strict=True
                ):
                    if ids is not None:
                        out.append(Prompt(ids, None, len(ids), conv.source, conv.max_tokens))
                        found += 1
            if not found:
                raise BadArguments(await self._none_fits(category, pool, context))
            cycle += 1
        kind = "built-in conversations" if category == "chat" else "the dataset's conversations"
        cut = f"cut to exactly {context} tokens" if context else "as rendered (context natural)"
        self.method[category] = (
            f"{kind}, rendered by the server's chat template (/tokenize messages), {cut}"
        )
        return out

    async def _none_fits(self, category: str, pool: list[Conversation], context: int) -> str:
        natural = await self.chat.many([(c, None, 0) for c in pool], self.parallel)
        lengths = [len(ids) for ids in natural if ids]
        what = "built-in conversation" if category == "chat" else "conversation of the dataset"
        if category == "chat":
            return (
                f"no {what} fits context {context}: the shortest, without its material, is "
                f"longer (rendered lengths {min(lengths)}-{max(lengths)} tokens with it)"
            )
        return (
            f"no {what} is long enough for context {context}: the longest renders to "
            f"{max(lengths)} tokens (a conversation is cut to a context, never padded; use "
            "contexts=natural to send them as they are)"
        )

    async def build(self, category: str, context: int, n: int, seed: int) -> list[Prompt]:
        if category in CHAT_CATEGORIES:
            return await self.build_chat(category, context, n, seed)
        if category == "random":
            vocab, how = await self.random_vocabulary()
            self.method[category] = how
            return random_prompts(vocab, context, n, seed)
        stream = await self._stream(category)
        if stream:
            self.method[category] = "server /tokenize, input_ids windows"
            return windows(stream, context, n, seed)
        self.method[category] = "text fitted with server prompt_tokens counts"
        source = corpus(category, self.seed)
        rng = random.Random(seed)
        starts = [rng.randrange(len(source)) for _ in range(n)]
        sem = asyncio.Semaphore(self.parallel)

        async def one(s: int) -> Prompt:
            async with sem:
                return await fit_text(self.server, source, s, context)

        return list(await asyncio.gather(*(one(s) for s in starts)))
