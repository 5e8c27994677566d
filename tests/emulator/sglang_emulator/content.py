"""Deterministic generated text per prompt category (the emulator's "model output")."""

from __future__ import annotations

import re

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
    "chat": (
        "That is a good question. The short answer is that it depends on what you need, "
        "but most people find that a simple plan works best. "
    ),
    "random": "qz vrk plth xw mnbv trq zzk wplr gh kkt ",
}
_PIECE = re.compile(r"\s*(?:\w+|[^\w\s])|\s+")


def _pieces(text: str) -> list[tuple[int, str]]:
    return [(tokenizer.token_id(p), p) for p in _PIECE.findall(text)]


PIECES = {cat: _pieces(text) for cat, text in _SNIPPETS.items()}


class OutputStream:
    """The token ids and cumulative text a request has produced so far."""

    __slots__ = ("_i", "_pieces", "ids", "text")

    def __init__(self, category: str, start: int) -> None:
        self._pieces = PIECES[category]
        self._i = start % len(self._pieces)
        self.ids: list[int] = []
        self.text = ""

    def extend(self, n: int) -> str:
        """Appends n tokens; returns the new text."""
        pieces = self._pieces
        size = len(pieces)
        parts = []
        for _ in range(n):
            tid, piece = pieces[self._i]
            self._i = (self._i + 1) % size
            self.ids.append(tid)
            parts.append(piece)
        delta = "".join(parts)
        self.text += delta
        return delta
