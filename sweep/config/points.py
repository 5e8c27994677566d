"""The points of a sweep: one server configuration each. Expanded from the command line and the
inventory (a grid, explicit points, the baseline), checked against what the host's build can
express (the sglang_server role's own rules), ordered so that neighbours share as much as
possible, and pinned to a hardware class when the hosts have several.

A point is one server configuration; the bench matrix (contexts x concurrency x output length x
category) runs inside every point, so bench parameters never cause a restart. Points differ in
at least one server parameter, so each one costs exactly one restart; they are ordered baseline
first, then by algorithm, window, topk, budget.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweep.config.params import (
    SweepInputError,
    absent,
    algorithm_list,
    as_bool,
    env_items,
    int_list,
    positive_int,
)

SERVER_KEYS = ("algorithm", "budget", "topk", "window")


POINT_KEYS = (*SERVER_KEYS, "env")


ROLES = Path(__file__).resolve().parents[2] / "roles"


DIALECTS_FILE = ROLES / "sglang_server" / "vars" / "dialects.yml"


@dataclass(frozen=True)
class Point:
    algorithm: str
    budget: int
    topk: int
    window: int
    env: tuple[tuple[str, str], ...] = ()
    # a hardware class: only hosts of that class run the point (a baseline per class)
    pin: str = ""

    @property
    def is_baseline(self) -> bool:
        return self.algorithm == "NONE"

    @property
    def point_id(self) -> str:
        # budget/topk/window mean nothing with speculation off: not part of the baseline's id
        base = (
            "baseline"
            if self.is_baseline
            else f"{self.algorithm.lower()}-b{self.budget}-k{self.topk}-w{self.window}"
        )
        if self.env:
            digest = hashlib.sha256(json.dumps(self.env).encode()).hexdigest()[:8]
            base += f"-env{digest}"
        if self.pin:
            base += "-" + _slug(self.pin)
        return base

    def sort_key(self) -> tuple[Any, ...]:
        return (
            not self.is_baseline,
            self.algorithm,
            self.window,
            self.topk,
            self.budget,
            self.env,
            self.pin,
        )

    def server(self) -> dict[str, Any]:
        return {
            "algorithm": self.algorithm,
            "budget": self.budget,
            "topk": self.topk,
            "window": self.window,
            "env": dict(self.env),
        }


def _slug(text: str) -> str:
    """A hardware class as part of a point id: lower case letters, digits and '-', plus a short
    digest so that two classes never share one."""
    words = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40].strip("-")
    return f"{words}-{hashlib.sha256(text.encode()).hexdigest()[:6]}"


def pin_baselines(points: list[Point], hosts: list[str], classes: dict[str, str]) -> list[Point]:
    """With hosts of more than one hardware class, one baseline per class, run by that class's
    hosts: each point's speed-up is then against the baseline of the class it was measured on."""
    distinct = list(dict.fromkeys(classes.get(h, "") for h in hosts))
    if len(distinct) < 2 or "" in distinct:
        return points
    out: list[Point] = []
    for p in points:
        if p.is_baseline and not p.pin:
            out += [Point(p.algorithm, p.budget, p.topk, p.window, p.env, c) for c in distinct]
        else:
            out.append(p)
    return sorted(out, key=Point.sort_key)


@functools.cache
def role_filters() -> Any:
    """The sglang_server role's filter plugin: its point rules are the planner's too (loaded
    once: the planner checks every point at every ask)."""
    import importlib.util

    path = ROLES / "sglang_server" / "filter_plugins" / "sglang_server.py"
    spec = importlib.util.spec_from_file_location("sglang_server_filters", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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


def _server_key(p: Point, block_size: int) -> tuple[tuple[Any, ...], str]:
    """What the server a point starts depends on, and why two points with the same key are one.

    DDTREE, as upstream PR #29907's worker builds its tree (read from the branch; the emulator
    models the same): the draft depth is block size - 1; a budget up to it is a plain chain and
    the topk (SGLANG_DDTREE_MAX_TOPK) is never read; above it the width is
    min(max(budget // depth + 1, 2), topk): topk only caps the width, so every topk at or above
    the width the budget gives is the same tree."""
    if p.algorithm != "DDTREE":
        return (p.algorithm, p.budget, p.topk, p.window, p.env, p.pin), ""
    depth = max(block_size - 1, 1)
    if p.budget <= depth:
        why = (
            f"DDTREE budget {p.budget} <= the drafter's block size {block_size} - 1 is a plain "
            "chain: topk is never read"
        )
        return (p.algorithm, p.budget, 1, p.window, p.env, p.pin), why
    width = max(1, min(max(p.budget // depth + 1, 2), p.topk))
    why = (
        f"DDTREE budget {p.budget} builds a tree {width} wide with any topk of {width} or more "
        "(topk only caps the width)"
    )
    return (p.algorithm, p.budget, width, p.window, p.env, p.pin), why


def same_servers(points: list[Point], block_size: int) -> dict[str, tuple[str, str]]:
    """point id -> (the earlier point, in run order, that starts the same server; why): such a
    point is not run, it is recorded as that point's measurement (sweep/cli/plan.py)."""
    first: dict[tuple[Any, ...], str] = {}
    out: dict[str, tuple[str, str]] = {}
    for p in sorted(points, key=Point.sort_key):
        key, why = _server_key(p, block_size)
        if key in first:
            out[p.point_id] = (first[key], why)
        else:
            first[key] = p.point_id
    return out
