"""Test-only `sglang.srt.environ`: the SGLang environment variables the emulator honours
(tests/emulator/sglang_emulator/settings.py reads them), in SGLang's EnvField shape.

The role's discovery script greps this file's text for SGLang variable names, and text cannot
vary with the emulated version: the DDTree fork's tree-width cap below is listed for every
version, although only the ddtree version reads it and only its parser knows DDTREE. The
health-check timeout variable is left out, as in SGLang (http_server.py reads it, not environ).
Name no other variable in this file or in speculative/: the discovery would report it.
"""

from __future__ import annotations

import os


class EnvField:
    def __init__(self, name: str, default: object) -> None:
        self.name = name
        self.default = default

    def get(self) -> object:
        raw = os.environ.get(self.name)
        if raw is None:
            return self.default
        if isinstance(self.default, bool):
            return raw.lower() in ("true", "1", "yes", "y")
        return type(self.default)(raw)


class Envs:
    SGLANG_WARMUP_TIMEOUT = EnvField("SGLANG_WARMUP_TIMEOUT", -1.0)
    SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION = EnvField(
        "SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION", True
    )
    SGLANG_DDTREE_MAX_TOPK = EnvField("SGLANG_DDTREE_MAX_TOPK", 6)


envs = Envs()
