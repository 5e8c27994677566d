#!/usr/bin/env python3
"""Prints what a real SGLang release accepts and reports. Runs where the release's server_args
imports: the real-SGLang test image's venv, with the release first on PYTHONPATH.

    python probe_release.py [--parse ARGVS.json]

Facts come from the role's own discovery script (roles/sglang_server/files/sglang-build-facts.py),
so the conformance tests check the code the role runs. Added here, for the emulator's conformance:
the meta_info keys and Prometheus metric names the release's source writes. With --parse, every
argv in the JSON list is parsed by the release's own parser, and each result is reported.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.util
import io
import json
import re
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DISCOVERY = REPO / "roles" / "sglang_server" / "files" / "sglang-build-facts.py"
META_INFO_KEY = re.compile(r"""meta_info\[\s*["']([a-z0-9_]+)["']\s*\]\s*=""")
METRIC_NAME = re.compile(r"""["']sglang:([a-z0-9_]+)["']""")


def allow_reregistered_configs() -> None:
    """Older releases register model configs that the newer transformers of the test environment
    already ships; transformers refuses the duplicate unless told exist_ok."""
    import transformers

    original = transformers.AutoConfig.register

    def register(*args: Any, **kwargs: Any) -> Any:
        kwargs["exist_ok"] = True
        return original(*args, **kwargs)

    transformers.AutoConfig.register = staticmethod(register)


def load_discovery() -> Any:
    spec = importlib.util.spec_from_file_location("sglang_build_facts", DISCOVERY)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def source_names(pkg: Path) -> dict[str, Any]:
    meta: set[str] = set()
    metrics: set[str] = set()
    for path in (pkg / "srt").rglob("*.py"):
        text = path.read_text(errors="replace")
        if "managers" in path.parts:
            meta.update(k for k in META_INFO_KEY.findall(text))
        metrics.update(METRIC_NAME.findall(text))
    names: dict[str, Any] = {"meta_info": sorted(meta), "metrics": sorted(metrics)}
    try:  # a release this reading does not understand must not cost the other facts
        always, conditional = server_info_keys(pkg)
    except (LookupError, SyntaxError) as exc:
        names["server_info_keys_error"] = str(exc)
    else:
        names["server_info_keys"] = sorted(always)
        names["server_info_keys_conditional"] = sorted(conditional - always)
    return names


# /server_info (srt/entrypoints/http_server.py `server_info`) is the ServerArgs fields plus
# top-level keys the function builds: its own dict literal, `**scheduler_info` (the scheduler's
# get_init_info) and, from 0.5.22, `**build_server_info(...)`. Read statically from the source.
_FIELD_SPREADS = ("asdict", "resolved_dict", "resolved_config_dict")


def _call_name(node: ast.AST) -> str:
    if not isinstance(node, ast.Call):
        return ""
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _function(pkg: Path, name: str, *candidates: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
    paths = [pkg / "srt" / c for c in candidates]
    for path in [*paths, *sorted((pkg / "srt").rglob("*.py"))]:
        if not path.is_file():
            continue
        text = path.read_text(errors="replace")
        if f"def {name}(" not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
                return node
    raise LookupError(f"no function {name} in {pkg}")


def _spread_keys(pkg: Path, expr: ast.expr) -> tuple[set[str], set[str]]:
    """Keys a `**expr` (or `.update(expr)`) adds: (always, conditional)."""
    if isinstance(expr, ast.Dict):
        return _dict_keys(pkg, expr)
    if isinstance(expr, ast.Call):
        if any(_call_name(node) in _FIELD_SPREADS for node in ast.walk(expr)):
            return set(), set()  # the ServerArgs fields
        if isinstance(expr.func, ast.Name):
            return _built_keys(pkg, _function(pkg, expr.func.id, "utils/common.py"))
    if "scheduler_info" in ast.unparse(expr):
        return _built_keys(pkg, _function(pkg, "get_init_info", "managers/scheduler.py"))
    raise LookupError(f"cannot read the keys of **{ast.unparse(expr)}")


def _dict_keys(pkg: Path, node: ast.Dict) -> tuple[set[str], set[str]]:
    always: set[str] = set()
    conditional: set[str] = set()
    for key, value in zip(node.keys, node.values, strict=True):
        if key is None:
            a, c = _spread_keys(pkg, value)
            always |= a
            conditional |= c
        elif isinstance(key, ast.Constant) and isinstance(key.value, str):
            always.add(key.value)
    return always, conditional


def _built_keys(pkg: Path, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[set[str], set[str]]:
    """Keys of the dict a function returns: a literal, or a variable filled statement by
    statement (keys set under an if/for/try are conditional)."""
    always: set[str] = set()
    conditional: set[str] = set()
    returned: list[tuple[ast.expr, bool]] = []

    def add(keys: tuple[set[str], set[str]], cond: bool) -> None:
        a, c = keys
        (conditional if cond else always).update(a)
        conditional.update(c)

    def walk(body: list[ast.stmt], cond: bool) -> None:
        for stmt in body:
            if isinstance(stmt, ast.Return) and stmt.value is not None:
                returned.append((stmt.value, cond))
            elif isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Dict):
                add(_dict_keys(pkg, stmt.value), cond)
            elif isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant):
                        (conditional if cond else always).add(str(target.slice.value))
            elif (
                isinstance(stmt, ast.Expr)
                and isinstance(stmt.value, ast.Call)
                and isinstance(stmt.value.func, ast.Attribute)
                and stmt.value.func.attr == "update"
                and stmt.value.args
            ):
                add(_spread_keys(pkg, stmt.value.args[0]), cond)
            elif isinstance(stmt, ast.With | ast.AsyncWith):
                walk(stmt.body, cond)
            elif isinstance(stmt, ast.If | ast.For | ast.While | ast.Try):
                for part in ("body", "orelse", "finalbody"):
                    walk(getattr(stmt, part, []), True)
                for handler in getattr(stmt, "handlers", []):
                    walk(handler.body, True)

    walk(fn.body, False)
    for value, cond in returned:
        while isinstance(value, ast.Call) and value.args:  # msgspec_to_builtins(redact(...))
            value = value.args[0]
        if isinstance(value, ast.Dict):
            add(_dict_keys(pkg, value), cond)
    return always, conditional


def server_info_keys(pkg: Path) -> tuple[set[str], set[str]]:
    """The top-level /server_info keys beyond ServerArgs fields: (always, conditional)."""
    return _built_keys(pkg, _function(pkg, "server_info", "entrypoints/http_server.py"))


def parse_all(argvs: list[list[str]]) -> list[dict[str, Any]]:
    from sglang.srt.server_args import ServerArgs

    results = []
    for argv in argvs:
        parser = argparse.ArgumentParser(prog="sglang")
        ServerArgs.add_cli_args(parser)
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                ns = parser.parse_args(argv)
        except SystemExit as exc:
            results.append({"argv": argv, "ok": False, "status": exc.code, "error": err.getvalue()})
            continue
        values = {k: v for k, v in vars(ns).items() if isinstance(v, (str, int, float, bool))}
        results.append({"argv": argv, "ok": True, "values": values, "warnings": err.getvalue()})
    return results


def main() -> int:
    cli = argparse.ArgumentParser(allow_abbrev=False)
    cli.add_argument("--parse", type=Path, help="JSON list of argvs to parse")
    args = cli.parse_args()
    allow_reregistered_configs()
    discovery = load_discovery()
    facts = discovery.collect()
    facts.update(source_names(discovery.package_dir()))
    if args.parse:
        facts["parsed"] = parse_all(json.loads(args.parse.read_text()))
    json.dump(facts, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
