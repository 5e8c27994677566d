"""`python -m sglang.launch_server ...` runs the SGLang emulator with the same flags (test only)."""

import sys

from sglang_emulator.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
