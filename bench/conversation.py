"""A chat-shaped request: the conversation a user sends to /v1/chat/completions.

Shared by the built-in workload (bench/builtin.py), users' datasets (bench/datasets.py)
and the prompt builder that renders them through the served model's own chat template
(bench/chat.py). Standard library only: this runs on the GPU host.

`material` makes long contexts realistic: one message's content holds the slot
`MATERIAL_SLOT` once, and the builder fills it with text of the conversation's
`material_corpus` (a document, a code file, worked examples, ...) starting at
`material_offset`, as much as the context needs; without a context target the slot gets
`material_chars` characters. A conversation without a slot (a user's) is sent as it is.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

MATERIAL_SLOT = "{material}"
ROLES = ("system", "user", "assistant")


@dataclass(frozen=True)
class Conversation:
    messages: tuple[tuple[str, str], ...]  # (role, content), in order; the last is the user's
    source: str  # the domain or the dataset's own tag; every request record carries it
    max_tokens: int | None = None  # the request's own output cap (output_len=natural)
    material_corpus: str = ""  # "" : no slot
    material_offset: int = 0
    material_chars: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The OpenAI chat request form (the JSONL dataset format, `source` included)."""
        out: dict[str, Any] = {
            "messages": [{"role": r, "content": c} for r, c in self.messages],
            "source": self.source,
        }
        if self.max_tokens is not None:
            out["max_tokens"] = self.max_tokens
        if self.material_corpus:
            out["material"] = {
                "corpus": self.material_corpus,
                "offset": self.material_offset,
                "chars": self.material_chars,
            }
        return out

    def with_material(self, text: str) -> list[dict[str, str]]:
        """The messages with the slot filled by `text` (no slot: as they are)."""
        return [
            {"role": r, "content": c.replace(MATERIAL_SLOT, text, 1) if self.material_corpus else c}
            for r, c in self.messages
        ]


def digest(conversations: list[Conversation]) -> str:
    """SHA-256 of the conversations as sent (their JSON form, in order)."""
    h = hashlib.sha256()
    for c in conversations:
        h.update(json.dumps(c.to_dict(), sort_keys=True, separators=(",", ":")).encode())
        h.update(b"\n")
    return h.hexdigest()
