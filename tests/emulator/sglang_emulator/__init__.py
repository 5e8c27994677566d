"""SGLang emulator: stands in for `python -m sglang.launch_server` in tests and the demo.

Standard library only; see tests/emulator/README.md and docs/architecture.md.
"""

VERSIONS = {
    "0.5.11": "0.5.11",
    "0.5.19": "0.5.19",
    "0.5.23": "0.5.23",
    "ddtree": "0.5.23+ddtree",
}
