"""Entry point: `python3 -m sglang_emulator <SGLang launch_server flags>`."""

from __future__ import annotations

import asyncio
import os
import sys

from .api import Emulator
from .config_file import merge_config_with_args
from .flags import build_parser, launch_command, resolve
from .lifecycle import load, serve
from .logs import log
from .settings import Settings


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    settings = Settings.from_env()
    parser = build_parser(settings.version)
    store_true = {a.dest for a in parser._actions if a.nargs == 0 and a.const is True}
    argv = merge_config_with_args(argv, store_true)  # ValueError traceback, exit 1, like SGLang
    ns = parser.parse_args(argv)  # exit 2 on unknown flags
    args = resolve(ns, settings, argv)  # ValueError traceback, exit 1, like ServerArgs
    log(f"server_args={args!r}")
    emu = Emulator(settings, args, launch_command(argv))
    load(emu)
    code = asyncio.run(serve(emu))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # pending hung requests must not keep the process alive


if __name__ == "__main__":
    sys.exit(main())
