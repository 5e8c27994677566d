"""SGLang's `--config FILE.yaml`: options read from a flat YAML mapping, merged before the CLI.

Real SGLang (0.5.11 and later) uses PyYAML; the emulator is standard-library only, so it reads the
flat `key: value` subset SGLang config files use (scalars, JSON-style quoted strings, booleans).
"""

from __future__ import annotations

import json
from pathlib import Path


def _scalar(text: str) -> str | bool:
    text = text.strip()
    if text.startswith('"'):
        return str(json.loads(text))
    if text.startswith("'") and text.endswith("'"):
        return text[1:-1].replace("''", "'")
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    return text


def _read(path: str) -> dict[str, str | bool]:
    file = Path(path)
    if file.suffix.lower() not in (".yaml", ".yml"):
        raise ValueError(f"Config file must be YAML format, got: {file.suffix}")
    if not file.exists():
        raise ValueError(f"Config file not found: {path}")
    options: dict[str, str | bool] = {}
    for line in file.read_text().splitlines():
        stripped = line.split(" #", 1)[0].strip()
        if not stripped or stripped.startswith("#") or stripped == "---":
            continue
        key, sep, value = stripped.partition(":")
        if not sep:
            raise ValueError(f"Config file {path}: cannot parse line {line!r}")
        options[key.strip()] = _scalar(value)
    return options


def merge_config_with_args(argv: list[str], store_true: set[str]) -> list[str]:
    """Like SGLang's ConfigArgumentMerger: config options first, so the command line wins."""
    indices = [i for i, arg in enumerate(argv) if arg == "--config"]
    if not indices:
        return argv
    if len(indices) > 1:
        raise ValueError("Multiple config files specified! Only one allowed.")
    index = indices[0]
    if index == len(argv) - 1:
        raise ValueError("No config file specified after --config flag!")
    merged: list[str] = []
    for key, value in _read(argv[index + 1]).items():
        if isinstance(value, bool) and key.replace("-", "_") in store_true:
            if value:
                merged.append(f"--{key}")
        else:
            merged += [f"--{key}", str(value).lower() if isinstance(value, bool) else value]
    return merged + argv[:index] + argv[index + 2 :]
