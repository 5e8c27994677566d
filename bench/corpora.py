"""The texts prompts are cut from: the raw categories' corpora and the built-in workload's material.

- `corpus(category)`: the text of a raw category, `code` (CPython standard-library source),
  `prose` (chat-style answers and the Python Language Reference) or `math` (worked problems,
  generated from a seed);
- `material_text(name)`: the text a built-in conversation's `{material}` slot is filled from,
  one of MATERIALS. `chat` and `json` are data files, like the conversations.

bench/prompts/SOURCES.txt says where every text comes from. Standard library only: this runs on
the GPU host.
"""

from __future__ import annotations

import functools
import random
from pathlib import Path

PROMPTS = Path(__file__).resolve().parent / "prompts"
MATERIALS = ("code", "document", "math", "chat", "json")


def _read(name: str) -> str:
    return (PROMPTS / name).read_text(encoding="utf-8")


def math_corpus(seed: int = 0, n_chars: int = 200_000) -> str:
    """Original math-like worked problems, generated deterministically."""
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    i = 0
    while size < n_chars:
        i += 1
        a, b, c = rng.randint(2, 19), rng.randint(1, 60), rng.randint(2, 9)
        kind = i % 5
        if kind == 0:
            x = rng.randint(1, 30)
            rhs = a * x + b
            s = (
                f"Problem {i}. Solve for x: {a}x + {b} = {rhs}.\n"
                f"Solution. Subtract {b} from both sides: {a}x = {rhs - b}. "
                f"Divide both sides by {a}: x = {x}. Check: {a}*{x} + {b} = {rhs}.\n"
            )
        elif kind == 1:
            n = rng.randint(5, 40)
            s = (
                f"Problem {i}. Find the sum of the first {n} terms of the arithmetic sequence "
                f"{b}, {b + c}, {b + 2 * c}, ...\n"
                f"Solution. The last term is {b} + ({n} - 1)*{c} = {b + (n - 1) * c}. "
                f"The sum is {n}*({b} + {b + (n - 1) * c})/2 = {n * (2 * b + (n - 1) * c) // 2}.\n"
            )
        elif kind == 2:
            s = (
                f"Problem {i}. Differentiate f(x) = {a}x^{c} + {b}x^2 - {c}x + {a + b}.\n"
                f"Solution. By the power rule, f'(x) = {a * c}x^{c - 1} + {2 * b}x - {c}. "
                f"At x = 1, f'(1) = {a * c + 2 * b - c}.\n"
            )
        elif kind == 3:
            p = rng.choice([5, 10, 12, 15, 20, 25, 30, 40])
            price = rng.randint(20, 500)
            s = (
                f"Problem {i}. A price of {price} is reduced by {p} percent and then raised by "
                f"{p} percent. What is the final price?\n"
                f"Solution. After the reduction: {price}*(1 - {p}/100) = "
                f"{price * (100 - p) / 100:g}. After the rise: "
                f"{price * (100 - p) / 100:g}*(1 + {p}/100) = "
                f"{price * (100 - p) * (100 + p) / 10000:g}. "
                f"The net change is -{p}^2/100 = -{p * p / 100:g} percent.\n"
            )
        else:
            d = a * a - 4 * c
            s = (
                f"Problem {i}. How many real roots does x^2 + {a}x + {c} = 0 have?\n"
                f"Solution. The discriminant is {a}^2 - 4*{c} = {d}. "
                + (
                    "It is positive, so there are two distinct real roots.\n"
                    if d > 0
                    else "It is zero, so there is one double root.\n"
                    if d == 0
                    else "It is negative, so there are no real roots.\n"
                )
            )
        parts.append(s)
        size += len(s)
    return "".join(parts)


def corpus(category: str, seed: int = 0) -> str:
    if category == "code":
        return _read("code.txt")
    if category == "prose":
        return _read("prose-chat.txt") + "\n" + _read("prose-reference.txt")
    if category == "math":
        return math_corpus(seed)
    raise ValueError(f"no text corpus for category {category!r}")


@functools.cache
def material_text(name: str) -> str:
    """The text of material corpus `name` (one of MATERIALS); KeyError for another name."""
    if name == "code":
        return corpus("code")
    if name == "document":
        return corpus("prose")
    if name == "math":
        return math_corpus(0)
    if name in MATERIALS:
        return _read(f"material-{name}.txt")
    raise KeyError(f"no built-in material corpus {name!r} (known: {', '.join(MATERIALS)})")
