"""SGLang emulator: stands in for `python -m sglang.launch_server` in tests and the demo.

Standard library only; see tests/emulator/README.md and docs/architecture.md.
"""

# SGLANG_EMU_VERSION -> what the build calls itself (sglang.version.__version__, /server_info).
VERSIONS = {
    "0.5.11": "0.5.11",
    "0.5.15": "0.5.15",
    "0.5.19": "0.5.19",
    "0.5.23": "0.5.23",
    "ddtree": "0.5.23+ddtree",  # the seeds' DDTree fork (upstream PR #29907) on top of 0.5.23
}


def release(version: str) -> tuple[int, ...]:
    """The upstream release a version emulates, as a comparable tuple (ddtree: 0.5.23)."""
    return tuple(int(part) for part in VERSIONS[version].split("+", 1)[0].split("."))
