"""A sweep's parameters as given (command line, inventory): parsing and the error that names a bad
one. Every value a sweep takes is parsed here, once, and refused with its name and value: the
server parameters into the sweep's points (expand: a grid, explicit points, the baseline, each
checked by the sglang_server role's own rules), the rest by sweep/cli/inputs.py with these
helpers."""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bench.workload import NATURAL
from sweep.config.points import DIALECTS_FILE, POINT_KEYS, SERVER_KEYS, Point, role_filters

if TYPE_CHECKING:
    from sweep.config.objectives import Objective

ALGORITHMS = ("DFLASH", "DDTREE", "EAGLE3", "NGRAM", "NONE")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class SweepInputError(ValueError):
    """A bad sweep parameter; the message names it and its value."""


def absent(raw: Any) -> bool:
    return raw is None or (isinstance(raw, str) and raw.strip() == "")


def items(name: str, raw: Any) -> list[Any]:
    """A list given as a list, JSON, `[a, b]` (YAML's flow style, unquoted) or `a,b`."""
    if isinstance(raw, (list, tuple)):
        return list(raw)
    if isinstance(raw, str):
        text = raw.strip()
        if text.startswith("[") != text.endswith("]"):
            raise SweepInputError(f"{name}={raw}: a bracket is not closed (give [a,b] or a,b)")
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
            for v in items(name, raw)
        ]
    )
    if not values:
        raise SweepInputError(f"{name}={raw}: empty list")
    return values


def algorithm_list(raw: Any) -> list[str] | None:
    if absent(raw):
        return None
    out = []
    for v in items("algorithm", raw):
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


def report_objective(cli: dict[str, Any]) -> tuple[dict[str, Any], Objective]:
    """The report's objective and SLOs from the command line (sweep/config/objectives.py),
    validated: as the report takes them, and the objective points are ranked by (capacity's
    cells are ranked by the default)."""
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
    ttft, tpot = number("slo_ttft_ms"), number("slo_tpot_ms")
    # capacity (sweep/config/load.py) ranks capacity searches; its cells are ranked by the default
    checked = objectives.DEFAULT if name == "capacity" else name
    try:
        ranked = objectives.make(checked, ttft, tpot)
    except ValueError as e:
        raise SweepInputError(str(e)) from None
    return {"objective": name, "slo_ttft_ms": ttft, "slo_tpot_ms": tpot}, ranked


@dataclass
class Rules:
    """What the host's build can express: its named dialect, checked by the role's own rules
    (sglang_server_point_problems). With dialect auto the build is described on the host, so the
    role's preflight checks each point there."""

    dialect: dict[str, Any] | None  # None: dialect auto
    block_size: int = 16

    def check(self, p: Point) -> None:
        if self.dialect is None:
            return
        problems = role_filters().sglang_server_point_problems(
            p.server(), self.dialect, self.block_size, logical_names=True
        )
        if problems:
            raise SweepInputError(" ".join(problems))


def load_rules(dialect: str, extra: dict[str, Any] | None, block_size: int) -> Rules:
    if not dialect or dialect == "auto":
        return Rules(None, block_size or 16)
    import yaml  # controller only: the hosts never plan

    table = yaml.safe_load(DIALECTS_FILE.read_text(encoding="utf-8"))
    dialects = {**table["sglang_server_dialects_builtin"], **(extra or {})}
    if dialect not in dialects:
        raise SweepInputError(
            f"dialect={dialect} is unknown (known: {', '.join(sorted(dialects))})"
        )
    return Rules(dialects[dialect], block_size or 16)


@dataclass
class Defaults:
    """The inventory's server configuration: what a parameter not swept keeps."""

    algorithm: str
    budget: int
    topk: int
    window: int

    @classmethod
    def from_inventory(cls, inv: dict[str, Any]) -> Defaults:
        algos = algorithm_list(inv.get("algorithm") or "DFLASH") or ["DFLASH"]
        return cls(
            algorithm=algos[0],
            budget=positive_int("sglang_server_budget", inv.get("budget", 16)),
            topk=positive_int("sglang_server_topk", inv.get("topk", 1)),
            window=positive_int("sglang_server_window", inv.get("window", 2048)),
        )


def _explicit_points(raw: Any, d: Defaults) -> list[Point]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as e:
            raise SweepInputError(f"points={raw}: not a JSON list of mappings") from e
    if not isinstance(raw, list) or not all(isinstance(p, dict) for p in raw):
        raise SweepInputError(f"points={raw}: must be a list of mappings")
    out = []
    for i, p in enumerate(raw):
        unknown = sorted(set(p) - set(POINT_KEYS))
        if unknown:
            raise SweepInputError(
                f"points[{i}] has unknown key(s) {', '.join(unknown)} "
                f"(known: {', '.join(POINT_KEYS)})"
            )
        algos = algorithm_list(p.get("algorithm")) or [d.algorithm]
        if len(algos) != 1:
            raise SweepInputError(f"points[{i}].algorithm={p['algorithm']}: one value per point")
        out.append(
            Point(
                algorithm=algos[0],
                budget=positive_int(f"points[{i}].budget", p.get("budget", d.budget)),
                topk=positive_int(f"points[{i}].topk", p.get("topk", d.topk)),
                window=positive_int(f"points[{i}].window", p.get("window", d.window)),
                env=env_items(f"points[{i}].env", p.get("env")),
            )
        )
    return out


def _grid(spec: dict[str, Any], d: Defaults) -> list[Point]:
    algos = algorithm_list(spec.get("algorithm")) or [d.algorithm]
    budgets = int_list("budget", spec.get("budget")) or [d.budget]
    topks = int_list("topk", spec.get("topk")) or [d.topk]
    windows = int_list("window", spec.get("window")) or [d.window]
    return [Point(a, b, k, w) for a, b, k, w in itertools.product(algos, budgets, topks, windows)]


def expand(
    cli: dict[str, Any], inventory: dict[str, Any], server: dict[str, Any] | None = None
) -> list[Point]:
    """The sweep's points in run order, validated, duplicates removed. `server` is what the
    first host's preflight found its build and drafter allow (sglang_server_capabilities)."""
    d = Defaults.from_inventory(inventory)
    if server and server.get("dialect"):
        rules = Rules(server["dialect"], int(server.get("block_size") or 16))
    else:
        rules = load_rules(
            str(inventory.get("dialect") or "auto"),
            inventory.get("dialects_extra") or {},
            int(inventory.get("block_size") or 0),
        )
    grid_given = any(not absent(cli.get(k)) for k in SERVER_KEYS)
    points: list[Point] = []
    if not absent(cli.get("points")):
        points += _explicit_points(cli["points"], d)
    if grid_given:
        points += _grid(cli, d)
    if not points:
        # nothing on the command line: the inventory's sweep grid, else its one configuration
        grid = inventory.get("grid") or {}
        if not isinstance(grid, dict):
            raise SweepInputError(f"sglang_sweep_grid={grid}: must be a mapping")
        unknown = sorted(set(grid) - set(SERVER_KEYS))
        if unknown:
            raise SweepInputError(f"sglang_sweep_grid has unknown key(s) {', '.join(unknown)}")
        points = _explicit_points(inventory["points"], d) if inventory.get("points") else []
        points += _grid(grid, d) if grid or not points else []
    baseline = as_bool(
        "baseline",
        cli.get("baseline"),
        as_bool("sglang_sweep_baseline", inventory.get("baseline"), True),
    )
    if baseline and not any(p.is_baseline for p in points):
        points.append(Point("NONE", d.budget, d.topk, d.window))
    unique = {p.point_id: p for p in points}
    for p in unique.values():
        rules.check(p)
    return sorted(unique.values(), key=Point.sort_key)
