"""The points of a sweep: one server configuration each (parsed from the command line and the
inventory, and checked against what the host's build can express, by sweep/config/params.py
expand), ordered so that neighbours share as much as possible, pinned to a hardware class when the
hosts have several, and known to start the same server as another point (same_servers).

A point is one server configuration; the bench matrix (contexts x concurrency x output length x
category) runs inside every point, so bench parameters never cause a restart. Points differ in
at least one server parameter, so each one costs exactly one restart; they are ordered baseline
first, then by algorithm, window, topk, budget.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
