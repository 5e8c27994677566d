"""The emulator's "model": deterministic generated tokens per prompt domain, and where the
model ends its turn.

A request's output is a function of SGLANG_EMU_SEED and its prompt ids only (never of
max_new_tokens or the speculative configuration), as a greedy model's would be: the domain's
snippet read cyclically from an offset drawn from the prompt, and the end of turn
(`<|im_end|>`) after a number of tokens drawn uniformly from the domain's NATURAL_LENGTH range.
With ignore_eos the stream goes on past that token, as SGLang's does. SGLANG_EMU_DIVERGE
picks requests whose output, with speculation on, turns to other tokens from token
SGLANG_EMU_DIVERGE_AFTER on (a broken drafter a greedy-output check must catch).
"""

from __future__ import annotations

import random
import re
import zlib
from array import array

from . import tokenizer

_SNIPPETS = {
    "code": (
        "def solve(values):\n    total = 0\n    for index, value in enumerate(values):\n"
        "        if value % 2 == 0:\n            total += value * index\n    return total\n\n"
    ),
    "math": (
        "Let x be the integer we want. Then 3x + 7 = 22, so 3x = 15 and x = 5. "
        "Therefore the sum of the roots is 5 + 2 = 7. "
    ),
    "json": (
        '{"name": "Ada Lovelace", "born": 1815, "fields": ["mathematics", "computing"], '
        '"known_for": "the first published algorithm", "verified": true}\n'
    ),
    "document": (
        "According to the document, the committee approved the budget in March. The report "
        "lists three risks: supply delays, rising costs and staff turnover. In short, the plan "
        "stays on schedule. "
    ),
    "chat": (
        "That is a good question. The short answer is that it depends on what you need, "
        "but most people find that a simple plan works best. "
    ),
    "random": "qz vrk plth xw mnbv trq zzk wplr gh kkt ",
}
# What a diverged request says instead: words of no domain snippet, so every token differs.
_DIVERGED = " alternatively perhaps another route exists whereas nobody checked yonder quietly"

# Tokens of a natural answer, the closing <|im_end|> included: uniform in [low, high].
NATURAL_LENGTH = {
    "code": (40, 160),
    "math": (30, 120),
    "json": (20, 80),
    "document": (20, 100),
    "chat": (20, 90),
    "random": (8, 40),
}
_PIECE = re.compile(r"\s*(?:\w+|[^\w\s])|\s+")


def _pieces(text: str) -> list[tuple[int, str]]:
    return [(tokenizer.token_id(p), p) for p in _PIECE.findall(text)]


PIECES = {cat: _pieces(text) for cat, text in _SNIPPETS.items()}
DIVERGED = _pieces(_DIVERGED)


def prompt_key(seed: int, prompt_ids: list[int]) -> int:
    """A stable 32-bit digest of the seed and every prompt id."""
    try:
        data = array("q", prompt_ids).tobytes()
    except OverflowError:
        data = repr(prompt_ids).encode()
    return zlib.crc32(data, zlib.crc32(b"%d" % seed))


class Plan:
    """What the model says for one prompt: the snippet offset, the natural length and
    whether (and where) the output diverges."""

    __slots__ = ("diverge_at", "natural_len", "start")

    def __init__(
        self,
        key: int,
        category: str,
        diverge: float = 0.0,
        diverge_after: int = 4,
    ) -> None:
        rng = random.Random(key)
        self.start = rng.randrange(1 << 16)
        low, high = NATURAL_LENGTH[category]
        self.natural_len = rng.randint(low, high)
        chosen = rng.random() < diverge
        self.diverge_at: int | None = None
        if chosen:
            self.diverge_at = max(0, diverge_after)
            if self.natural_len - 1 >= self.diverge_at:
                # The other path ends its turn elsewhere: every token from there on differs.
                self.natural_len += 1 + rng.randrange(8)


class OutputStream:
    """The token ids and cumulative text a request has produced so far."""

    __slots__ = ("_diverge_at", "_eos_at", "_event", "_i", "_pieces", "ids", "text")

    def __init__(
        self, category: str, start: int, eos_at: int | None = None, diverge_at: int | None = None
    ) -> None:
        self._pieces = PIECES[category]
        self._i = start % len(self._pieces)
        self._eos_at = eos_at  # index of the <|im_end|> token
        self._diverge_at = diverge_at  # index from which the diverged words replace the domain's
        self._event = self._next_event()
        self.ids: list[int] = []
        self.text = ""

    def _next_event(self) -> int:
        events = [p for p in (self._eos_at, self._diverge_at) if p is not None]
        return min(events) if events else 1 << 62

    def extend(self, n: int) -> str:
        """Appends n tokens; returns the new text (the end-of-turn token adds none)."""
        ids = self.ids
        pos = len(ids)
        end = pos + n
        parts: list[str] = []
        while True:
            stop = end if end < self._event else self._event
            if stop > pos:  # plain tokens of the current snippet
                pieces = self._pieces
                size = len(pieces)
                i = self._i
                for _ in range(stop - pos):
                    tid, piece = pieces[i]
                    i += 1
                    if i == size:
                        i = 0
                    ids.append(tid)
                    parts.append(piece)
                self._i = i
                pos = stop
            if pos == end:
                break
            if pos == self._diverge_at:  # the other path from here on
                self._pieces, self._i, self._diverge_at = DIVERGED, 0, None
            else:  # the end of turn
                ids.append(tokenizer.EOS)
                pos += 1
                self._eos_at = None
            self._event = self._next_event()
        delta = "".join(parts)
        self.text += delta
        return delta
