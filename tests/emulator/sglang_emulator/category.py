"""Deterministic prompt category detection: code, math, chat or random tokens."""

from __future__ import annotations

import re

from . import tokenizer

CATEGORIES = ("code", "math", "chat", "random")

_CODE_MARKERS = re.compile(
    r"```|\bdef |\breturn\b|\bimport |\bclass |\bfunction\b|=>|[{};]|\bprint\(|#include|\bconst "
)
_MATH_MARKERS = re.compile(
    r"\\frac|\\sqrt|\bsolve\b|\bequation\b|\bprove\b|\binteger\b|\d\s*[-+*/^=]\s*\d|\bx\^|\$"
)
_WORD = re.compile(r"[A-Za-z]+")
_VOWELS = set("aeiouyAEIOUY")


def _looks_random(text: str, ids: list[int]) -> bool:
    if ids and not text:
        unknown = sum(1 for t in ids if not tokenizer.is_known(t))
        return unknown > 0.5 * len(ids)
    words = _WORD.findall(text)
    if not words:
        return bool(ids)
    odd = sum(1 for w in words if len(w) > 14 or (len(w) >= 3 and not _VOWELS & set(w)))
    unknown = sum(1 for w in words if not tokenizer.is_known(tokenizer.token_id(w)))
    # Gibberish: many vowel-less or over-long words, and hardly any common words.
    return odd > 0.3 * len(words) or (unknown > 0.9 * len(words) and len(words) >= 8)


def detect(text: str, ids: list[int]) -> str:
    if not text and ids:
        if _looks_random("", ids):
            return "random"
        text = tokenizer.decode(ids)
    if _looks_random(text, ids):
        return "random"
    if len(_CODE_MARKERS.findall(text)) >= 2:
        return "code"
    if len(_MATH_MARKERS.findall(text)) >= 2:
        return "math"
    return "chat"
