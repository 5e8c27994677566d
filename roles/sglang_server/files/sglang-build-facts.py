#!/usr/bin/env python3
"""What the installed SGLang build accepts and reports, read from the build itself.

Run with the interpreter that runs the server (sglang_server_command[0]):

    python3 sglang-build-facts.py [--cache-dir DIR]

Prints one JSON object: the build's version and identity, every option string of its own
argument parser (ServerArgs.add_cli_args) with its dest, the ServerArgs fields (what
/server_info reports), the speculative algorithms it accepts, and the SGLANG_* environment
variables its speculative code reads. The role chooses flags and /server_info fields from this,
so a fork needs no table entry. With --cache-dir the answer is kept per build (its RECORD of
installed files, interpreter and SGLANG_* environment): importing SGLang takes seconds.
Standard library only, apart from the build being described.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

SCHEMA = 1
ENV_NAME = re.compile(r"\bSGLANG_[A-Z0-9_]+\b")


def build_identity() -> tuple[str, str]:
    """(version, build id): the id changes whenever any installed file of the build changes."""
    try:
        dist = importlib.metadata.distribution("sglang")
        installed, record = dist.version, dist.read_text("RECORD") or ""
    except importlib.metadata.PackageNotFoundError:  # a source tree on PYTHONPATH
        server_args = package_dir() / "srt" / "server_args.py"
        installed, record = "unknown", hashlib.sha256(server_args.read_bytes()).hexdigest()
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith("SGLANG_"))
    digest = hashlib.sha256()
    for part in (installed, record, sys.executable, json.dumps(env), str(SCHEMA)):
        digest.update(part.encode())
        digest.update(b"\0")
    return installed, digest.hexdigest()[:16]


def package_dir() -> Path:
    spec = importlib.util.find_spec("sglang")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("no importable sglang package")
    return Path(next(iter(spec.submodule_search_locations)))


def record_field_names(cls: type) -> list[str]:
    """ServerArgs is a dataclass up to 0.5.19 and a msgspec Struct from 0.5.20."""
    if dataclasses.is_dataclass(cls):
        return [f.name for f in dataclasses.fields(cls)]
    fields = getattr(cls, "__struct_fields__", None)
    if fields is not None:
        return list(fields)
    raise RuntimeError(f"cannot list the fields of {cls!r}")


def parser_options(parser: argparse.ArgumentParser) -> dict[str, dict[str, Any]]:
    options: dict[str, dict[str, Any]] = {}
    for action in parser._actions:
        for option in action.option_strings:
            options[option] = {
                "dest": action.dest,
                "hidden": action.help == argparse.SUPPRESS,
                "takes_value": action.nargs != 0,
                "choices": sorted(str(c) for c in action.choices) if action.choices else None,
            }
    return options


def speculative_algorithms(options: dict[str, dict[str, Any]]) -> list[str]:
    """The --speculative-algorithm choices, else the members of the build's algorithm enum."""
    choices = (options.get("--speculative-algorithm") or {}).get("choices")
    if choices:
        return sorted(choices)
    spec_info = importlib.import_module("sglang.srt.speculative.spec_info")
    enum = spec_info.SpeculativeAlgorithm
    return sorted(name for name in enum.__members__ if name != "NONE")


def speculative_env_names(pkg: Path) -> list[str]:
    names: set[str] = set()
    for path in [*(pkg / "srt" / "speculative").rglob("*.py"), pkg / "srt" / "environ.py"]:
        try:
            names.update(ENV_NAME.findall(path.read_text(errors="replace")))
        except OSError:
            continue
    return sorted(names)


def reported_version(installed: str) -> str:
    """What the build calls itself (sglang.version, as /server_info reports it)."""
    try:
        return str(importlib.import_module("sglang.version").__version__)
    except (ImportError, AttributeError):
        return installed


def collect() -> dict[str, Any]:
    installed, build_id = build_identity()
    version = reported_version(installed)
    server_args = importlib.import_module("sglang.srt.server_args")
    parser = argparse.ArgumentParser(prog="sglang")
    server_args.ServerArgs.add_cli_args(parser)
    options = parser_options(parser)
    return {
        "schema": SCHEMA,
        "version": version,
        "build_id": build_id,
        "options": options,
        "fields": record_field_names(server_args.ServerArgs),
        "algorithms": speculative_algorithms(options),
        "env": speculative_env_names(package_dir()),
    }


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    cli.add_argument("--cache-dir", type=Path, help="keep the answer per build here")
    args = cli.parse_args(argv)
    cached: Path | None = None
    if args.cache_dir:
        cached = args.cache_dir / f"{build_identity()[1]}.json"
        if cached.is_file():
            sys.stdout.write(cached.read_text())
            return 0
    facts = json.dumps(collect(), sort_keys=True) + "\n"
    if cached is not None:
        cached.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(facts)
        tmp.replace(cached)
    sys.stdout.write(facts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
