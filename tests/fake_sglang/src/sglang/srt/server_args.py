"""Test-only `sglang.srt.server_args`: the emulator's options and fields for SGLANG_EMU_VERSION.

`ServerArgs` is a dataclass (as in SGLang up to 0.5.19) whose fields are exactly the server
arguments the emulator resolves for that version, and `ServerArgs.add_cli_args(parser)` adds the
emulator's options for it; both come from sglang_emulator.flags, the emulator's own parser, so the
role's discovery script describes what the emulator accepts and reports.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from sglang_emulator.flags import add_cli_args, build_parser, server_args_fields
from sglang_emulator.settings import emulated_version

VERSION = emulated_version()


def _add_cli_args(parser: argparse.ArgumentParser) -> None:
    add_cli_args(parser, VERSION)


ServerArgs = dataclasses.make_dataclass(
    "ServerArgs",
    [(name, Any, dataclasses.field(default=None)) for name in server_args_fields(VERSION)],
    namespace={"__module__": __name__, "add_cli_args": staticmethod(_add_cli_args)},
)


def prepare_server_args(argv: list[str]) -> argparse.Namespace:
    """Parses argv as the emulated release's `sglang serve` does (exit 2 on a bad flag)."""
    return build_parser(VERSION).parse_args(argv)
