"""Test-only `sglang.srt.speculative.spec_info`: SpeculativeAlgorithm of the emulated version.

Its members are the emulated release's (sglang_emulator.flags.ALGORITHMS; DDTREE only in the
ddtree version), NONE included; aliases (NEXTN) are not members, as in SGLang.
"""

from __future__ import annotations

from enum import Enum

from sglang_emulator.flags import ALIASES, algorithms
from sglang_emulator.settings import emulated_version

SpeculativeAlgorithm = Enum(  # type: ignore[misc]
    "SpeculativeAlgorithm",
    [*(name for name in algorithms(emulated_version()) if name not in ALIASES), "NONE"],
    module=__name__,
)


def _from_string(cls: type[Enum], name: str | None) -> Enum:
    """As SpeculativeAlgorithm.from_string (0.5.23 spec_info.py:50-65)."""
    if name is None:
        return cls["NONE"]
    upper = ALIASES.get(name.upper(), name.upper())
    try:
        return cls[upper]
    except KeyError:
        raise ValueError(f"Unknown speculative algorithm name: {name}") from None


SpeculativeAlgorithm.from_string = classmethod(_from_string)  # type: ignore[attr-defined]
