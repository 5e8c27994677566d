"""SGLang-style log lines: `[YYYY-MM-DD HH:MM:SS] message`, flushed line by line."""

from __future__ import annotations

import sys
import time
from typing import TextIO


def log(message: str, stream: TextIO | None = None) -> None:
    # SGLang logs through logging.basicConfig, i.e. to stderr.
    out = stream if stream is not None else sys.stderr
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    for line in message.splitlines() or [""]:
        out.write(f"[{stamp}] {line}\n")
    out.flush()


def warn(message: str) -> None:
    log(f"WARNING {message}", sys.stderr)
