"""A sweep's parameters as given (command line, inventory): parsing and the error that names a bad
one. Every value a sweep takes is parsed here, once, and refused with its name and value."""

from __future__ import annotations

import json
import re
from typing import Any

from bench.workload import NATURAL

ALGORITHMS = ("DFLASH", "DDTREE", "EAGLE3", "NGRAM", "NONE")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class SweepInputError(ValueError):
    """A bad sweep parameter; the message names it and its value."""


def absent(raw: Any) -> bool:
    return raw is None or (isinstance(raw, str) and raw.strip() == "")


def items(raw: Any) -> list[Any]:
    if isinstance(raw, (list, tuple)):
        return list(raw)
    if isinstance(raw, str):
        text = raw.strip()
        if text.startswith("["):
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
            if isinstance(parsed, list):
                return parsed
            text = text.strip("[]")
        return [p.strip() for p in text.split(",") if p.strip()]
    return [raw]


def dedupe(values: list[Any]) -> list[Any]:
    return list(dict.fromkeys(values))


def positive_int(name: str, v: Any) -> int:
    text = str(v).strip()
    if isinstance(v, bool) or not (isinstance(v, int) or re.fullmatch(r"[0-9]+[kK]?", text)):
        raise SweepInputError(f"{name}={v}: not a positive integer")
    n = int(v) if isinstance(v, int) else int(text.rstrip("kK")) * (1024 if text[-1] in "kK" else 1)
    if n < 1:
        raise SweepInputError(f"{name}={v}: not a positive integer")
    return n


def int_list(name: str, raw: Any, natural: bool = False) -> list[int] | None:
    """Positive integers; with `natural`, also the word natural (kept as 0, bench's NATURAL)."""
    if absent(raw):
        return None
    values = dedupe(
        [
            NATURAL if natural and str(v).strip().lower() == "natural" else positive_int(name, v)
            for v in items(raw)
        ]
    )
    if not values:
        raise SweepInputError(f"{name}={raw}: empty list")
    return values


def algorithm_list(raw: Any) -> list[str] | None:
    if absent(raw):
        return None
    out = []
    for v in items(raw):
        name = str(v).strip().upper()
        if name not in ALGORITHMS:
            raise SweepInputError(f"algorithm={v}: not one of {', '.join(ALGORITHMS)}")
        out.append(name)
    return dedupe(out)


def as_bool(name: str, raw: Any, default: bool) -> bool:
    if absent(raw):
        return default
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("true", "yes", "on", "1"):
        return True
    if text in ("false", "no", "off", "0"):
        return False
    raise SweepInputError(f"{name}={raw}: not a boolean (true/false)")


def env_items(name: str, raw: Any) -> tuple[tuple[str, str], ...]:
    if absent(raw):
        return ()
    if not isinstance(raw, dict):
        raise SweepInputError(f"{name}={raw}: must be a mapping of environment variables")
    for k in raw:
        if not _ENV_NAME.match(str(k)):
            raise SweepInputError(f"{name}: {k!r} is not an environment variable name")
    return tuple(sorted((str(k), str(v)) for k, v in raw.items()))


def report_objective(cli: dict[str, Any]) -> dict[str, Any]:
    """The report's objective and SLOs from the command line (sweep/config/objectives.py),
    validated."""
    from sweep.config import objectives

    def number(key: str) -> float | None:
        raw = cli.get(key)
        if raw is None or absent(raw):
            return None
        try:
            return float(raw)
        except (TypeError, ValueError):
            raise SweepInputError(f"{key}={raw}: not a number of milliseconds") from None

    name = str(cli.get("objective") or objectives.DEFAULT)
    # capacity (sweep/config/load.py) ranks capacity searches; its cells are ranked by the default
    checked = objectives.DEFAULT if name == "capacity" else name
    try:
        objectives.make(checked, number("slo_ttft_ms"), number("slo_tpot_ms"))
    except ValueError as e:
        raise SweepInputError(str(e)) from None
    return {
        "objective": name,
        "slo_ttft_ms": number("slo_ttft_ms"),
        "slo_tpot_ms": number("slo_tpot_ms"),
    }
