"""The sweep plan: which server configurations to run, in which order, on which host.

Input (from the playbook, JSON): the command line's logical parameters (`cli`: budget, topk,
window, algorithm, points, baseline, contexts, concurrency, output_len, requests, categories,
sweep_name, stop_on_failure, results_dir), the first host's variables that bear on the sweep as
they are (`host`: sglang_server_*, sglang_bench_*, sglang_sweep_*, only those it defines), what
that host's preflight found its build and drafter allow (`server`: dialect, block_size), and the
hosts. The defaults of what the host leaves unset are read here, once: the roles' own defaults
files and SWEEP_DEFAULTS. Every value is validated before anything runs anywhere.

A point is one server configuration; the bench matrix (contexts x concurrency x output length x
category) runs inside every point, so bench parameters never cause a restart. Points differ in
at least one server parameter, so each one costs exactly one restart; they are ordered baseline
first, then by algorithm, window, topk, budget, so neighbours share as much as possible.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.prompt_sets import CATEGORIES, CHAT_CATEGORIES
from bench.workload import NATURAL
from sweep import claims, greedy, layout, store, wheelhouse, workload

SERVER_KEYS = ("algorithm", "budget", "topk", "window")
POINT_KEYS = (*SERVER_KEYS, "env")
ALGORITHMS = ("DFLASH", "DDTREE", "EAGLE3", "NGRAM", "NONE")
BENCH_LIST_KEYS = ("contexts", "concurrency", "output_len")
ROLES = Path(__file__).resolve().parents[1] / "roles"
DIALECTS_FILE = ROLES / "sglang_server" / "vars" / "dialects.yml"
# What the sweep does when the inventory says nothing (sglang_sweep_* have no role to default them).
SWEEP_DEFAULTS: dict[str, Any] = {
    "sglang_sweep_defaults": {},
    "sglang_sweep_grid": {},
    "sglang_sweep_points": [],
    "sglang_sweep_baseline": True,
    "sglang_sweep_stop_on_failure": False,
    "sglang_sweep_name": "",
    "sglang_sweep_results_dir": "results",
}
SEARCHES = ("grid", "halving", "descent")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class SweepInputError(ValueError):
    """A bad sweep parameter; the message names it and its value."""


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


def role_filters() -> Any:
    """The sglang_server role's filter plugin: its point rules are the planner's too."""
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
            p.server(), self.dialect, self.block_size, names=PLANNER_NAMES
        )
        if problems:
            raise SweepInputError(" ".join(problems))


PLANNER_NAMES = {"algorithm": "algorithm", "budget": "budget", "topk": "topk", "window": "window"}


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


# ---------------------------------------------------------------- value parsing


def _absent(raw: Any) -> bool:
    return raw is None or (isinstance(raw, str) and raw.strip() == "")


def _items(raw: Any) -> list[Any]:
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


def _dedupe(values: list[Any]) -> list[Any]:
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
    if _absent(raw):
        return None
    values = _dedupe(
        [
            NATURAL if natural and str(v).strip().lower() == "natural" else positive_int(name, v)
            for v in _items(raw)
        ]
    )
    if not values:
        raise SweepInputError(f"{name}={raw}: empty list")
    return values


def algorithm_list(raw: Any) -> list[str] | None:
    if _absent(raw):
        return None
    out = []
    for v in _items(raw):
        name = str(v).strip().upper()
        if name not in ALGORITHMS:
            raise SweepInputError(f"algorithm={v}: not one of {', '.join(ALGORITHMS)}")
        out.append(name)
    return _dedupe(out)


def as_bool(name: str, raw: Any, default: bool) -> bool:
    if _absent(raw):
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
    if _absent(raw):
        return ()
    if not isinstance(raw, dict):
        raise SweepInputError(f"{name}={raw}: must be a mapping of environment variables")
    for k in raw:
        if not _ENV_NAME.match(str(k)):
            raise SweepInputError(f"{name}: {k!r} is not an environment variable name")
    return tuple(sorted((str(k), str(v)) for k, v in raw.items()))


# ---------------------------------------------------------------- the plan


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
    grid_given = any(not _absent(cli.get(k)) for k in SERVER_KEYS)
    points: list[Point] = []
    if not _absent(cli.get("points")):
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


def bench_params(
    cli: dict[str, Any], inventory: dict[str, Any], dataset: workload.Dataset | None = None
) -> dict[str, Any]:
    """What every point is asked (the bench matrix, the traffic, the greedy-output check); part
    of every point's identity. `dataset`: the user's, sampled (sweep/workload.py)."""
    inv = inventory.get("bench") or {}

    def pick(key: str) -> Any:
        return cli.get(key) if not _absent(cli.get(key)) else inv.get(key)

    out: dict[str, Any] = {}
    for key in BENCH_LIST_KEYS:
        raw = pick(key)
        if dataset is not None and key != "concurrency" and _absent(cli.get(key)):
            raw = "natural"  # a dataset is measured as its users send it, unless told otherwise
        values = int_list(key, raw, natural=key != "concurrency")
        if values is None:
            raise SweepInputError(f"{key} is not set (command line or sglang_bench_{key})")
        out[key] = values
    requests = pick("requests")
    out["requests"] = (
        0 if _absent(requests) or str(requests) == "0" else positive_int("requests", requests)
    )
    # a dataset on the command line is the traffic, unless categories say otherwise
    given = cli.get("categories") if not _absent(cli.get("categories")) else None
    default = "dataset" if dataset is not None else inv.get("categories") or "chat"
    cats = [str(c).strip() for c in _items(given or default)]
    bad = [c for c in cats if c not in CATEGORIES]
    if bad or not cats:
        raise SweepInputError(
            f"categories={','.join(cats)}: each must be one of {', '.join(CATEGORIES)}"
        )
    if "dataset" in cats and dataset is None:
        raise SweepInputError("categories=dataset needs a dataset: -e dataset=PATH")
    plain = [c for c in cats if c not in CHAT_CATEGORIES]
    if NATURAL in out["contexts"] and plain:
        raise SweepInputError(
            f"contexts=natural needs chat-shaped categories ({', '.join(CHAT_CATEGORIES)}); "
            f"{', '.join(plain)} have no natural length"
        )
    out["categories"] = _dedupe(cats)
    out["repetitions"] = positive_int("repetitions", pick("repetitions") or 1)
    out["natural_max_tokens"] = positive_int(
        "natural_max_tokens", pick("natural_max_tokens") or 1024
    )
    prompts = pick("greedy_prompts")
    out["greedy"] = {
        "prompts": 0
        if str(prompts).strip() == "0"
        else positive_int("greedy_prompts", prompts or 16),
        "max_tokens": positive_int("greedy_max_tokens", pick("greedy_max_tokens") or 64),
    }
    if dataset is not None:
        try:
            workload.check_contexts(dataset, out["contexts"])
        except workload.WorkloadError as e:
            raise SweepInputError(str(e)) from None
        out["dataset"] = dataset.params()
    return out


def default_name(points: list[Point], bench: dict[str, Any]) -> str:
    """Deterministic: the same command plans the same sweep, so rerunning it resumes."""
    key = json.dumps({"points": [p.point_id for p in points], "bench": bench}, sort_keys=True)
    return "sweep-" + hashlib.sha256(key.encode()).hexdigest()[:8]


@dataclass
class Plan:
    name: str
    sweep_dir: Path
    bench: dict[str, Any]
    points: list[Point]
    status: dict[str, str]
    hosts: list[str]
    stop_on_failure: bool
    run_started: float = field(default_factory=time.time)
    # point id -> identity (with its digest), for the points whose host published one
    identities: dict[str, dict[str, Any]] = field(default_factory=dict)
    # point id -> an earlier complete measurement under the same identity (store.lookup)
    reuse: dict[str, Path] = field(default_factory=dict)
    round: int = 0
    # idle: nothing to run in this round; final: no later round has anything to run
    idle: bool = False
    final: bool = False
    # search=halving: the search's state (sweep/search_rounds.py search_info) and where it is kept
    search: dict[str, Any] | None = None
    search_file: Path | None = None
    classes: dict[str, str] = field(default_factory=dict)
    # halving's round before the last: the last level's plan, for the full benches its points
    # may take right after screening (queue items' `run_on`) and for its baseline
    run_on: Plan | None = None
    # the user's dataset, sampled: written under <results>/.workloads/ for the hosts to get
    dataset: workload.Dataset | None = None

    @property
    def pending(self) -> list[Point]:
        return [p for p in self.points if self.status[p.point_id] not in ("complete", "reused")]

    def summary(self) -> str:
        complete = sum(1 for s in self.status.values() if s == "complete")
        retries = sum(1 for s in self.status.values() if s == "failed")
        reused = f", {len(self.reuse)} reused from earlier sweeps" if self.reuse else ""
        busy = min(len(self.hosts), len(self.pending))
        if not self.pending:
            return (
                f"sweep {self.name}: all {len(self.points)} points complete{reused}, nothing to run"
            )
        return (
            f"sweep {self.name}: {len(self.points)} points, {complete} complete{reused}, "
            f"{len(self.pending)} to run ({retries} retried after failure) on {busy} host(s)"
        )

    def to_dict(self) -> dict[str, Any]:
        def point(p: Point) -> dict[str, Any]:
            out = {
                "id": p.point_id,
                "server": p.server(),
                "baseline": p.is_baseline,
                "status": self.status[p.point_id],
                "identity": self.identities.get(p.point_id),
            }
            if p.pin:
                out["hosts"] = [h for h in self.hosts if self.classes.get(h) == p.pin]
            if p.point_id in self.reuse:
                out["reused_from"] = store.origin(self.reuse[p.point_id])
            return out

        queue = [] if self.idle else [point(p) for p in self.pending]
        if self.run_on is not None and queue:
            full = self.run_on.to_dict()
            searched = {p.point_id for p in self.run_on.points if not p.is_baseline}
            for item in queue:
                if item["id"] in searched:
                    ident = self.run_on.identities.get(item["id"])
                    item["run_on"] = {"sweep": full["sweep"], "identity": ident}
            # its baseline in this round, as a finalist benched on needs no last one; first, so
            # that the configuration running after the round is the last one screened
            queue = [{**b, "sweep": full["sweep"]} for b in full["queue"] if b["baseline"]] + queue
        return {
            "sweep": self.sweep_dict(),
            "points": [point(p) for p in self.points],
            # every host walks this queue, claiming each point before running it (sweep/claims.py);
            # an item with `sweep` belongs to that sweep instead
            "queue": queue,
            "round": self.round,
            "final": self.final,
            "search": self.search,
            "hosts": self.hosts,
            "summary": self.summary(),
        }

    def sweep_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "dir": str(self.sweep_dir),
            "bench": self.bench,
            "stop_on_failure": self.stop_on_failure,
            "run_started": self.run_started,
            "total": len(self.points),
        }
        if self.dataset is not None:
            out["dataset_file"] = str(workload.sample_file(self.sweep_dir.parent, self.dataset))
        return out


def role_defaults(role: str) -> dict[str, Any]:
    import yaml  # controller only: the hosts never plan

    path = ROLES / role / "defaults" / "main.yml"
    return dict(yaml.safe_load(path.read_text(encoding="utf-8")) or {})


def host_settings(host: dict[str, Any]) -> dict[str, Any]:
    """The planner's view of the first host: its variables over the roles' and the sweep's
    defaults. A parameter not swept keeps sglang_sweep_defaults.<name>, else the server's own."""
    merged = {
        **role_defaults("sglang_server"),
        **role_defaults("sglang_bench"),
        **SWEEP_DEFAULTS,
        **host,
    }
    sweep_defaults = merged["sglang_sweep_defaults"] or {}

    def server(name: str, var: str) -> Any:
        return sweep_defaults.get(name, merged[var])

    return {
        "algorithm": server("algorithm", "sglang_server_speculative_algorithm"),
        "budget": server("budget", "sglang_server_budget"),
        "topk": server("topk", "sglang_server_topk"),
        "window": server("window", "sglang_server_window"),
        "dialect": merged["sglang_server_dialect"],
        "dialects_extra": merged["sglang_server_dialects_extra"],
        "block_size": merged["sglang_server_drafter_block_size"],
        "grid": merged["sglang_sweep_grid"],
        "points": merged["sglang_sweep_points"],
        "baseline": merged["sglang_sweep_baseline"],
        "stop_on_failure": merged["sglang_sweep_stop_on_failure"],
        "sweep_name": merged["sglang_sweep_name"],
        "results_dir": merged["sglang_sweep_results_dir"],
        "bench": {
            key: merged[f"sglang_bench_{key}"]
            for key in (
                *BENCH_LIST_KEYS,
                "categories",
                "requests",
                "repetitions",
                "natural_max_tokens",
                "greedy_prompts",
                "greedy_max_tokens",
            )
        },
    }


@dataclass
class Inputs:
    """Everything a sweep's command line and first host's variables say, validated; no host
    has been asked anything (what the hosts' builds allow is checked again by plan)."""

    cli: dict[str, Any]
    inventory: dict[str, Any]
    points: list[Point]
    dataset: workload.Dataset | None
    bench: dict[str, Any]
    objective: dict[str, Any]
    search: str
    name: str
    sweep_dir: Path
    stop_on_failure: bool
    fresh: bool


def read_inputs(inp: dict[str, Any]) -> Inputs:
    """The checks that need no host (SweepInputError naming the first bad value): run by
    sweep.yml's first play on the controller, before any host is contacted, and by every plan.
    A dataset is read (streamed) and sampled here; its sample is kept under
    <results>/.workloads/ so that later plans do not read the file again (sweep/workload.py)."""
    cli = inp.get("cli") or {}
    inventory = host_settings(inp["host"]) if "host" in inp else inp.get("inventory") or {}
    points = expand(cli, inventory, inp.get("server"))
    root = cli.get("results_dir") or inp.get("results_root") or inventory.get("results_dir")
    results = Path(root or SWEEP_DEFAULTS["sglang_sweep_results_dir"]).resolve()
    dataset = None
    if not _absent(cli.get("dataset")):
        try:
            dataset = workload.load(
                cli["dataset"],
                cli.get("dataset_sample"),
                cli.get("dataset_seed"),
                cli.get("dataset_format"),
                results,
            )
        except workload.WorkloadError as e:
            raise SweepInputError(str(e)) from None
    elif any(not _absent(cli.get(k)) for k in ("dataset_sample", "dataset_seed", "dataset_format")):
        raise SweepInputError(
            "dataset_sample, dataset_seed and dataset_format need -e dataset=PATH"
        )
    bench = bench_params(cli, inventory, dataset)
    objective = report_objective(cli)  # checked now: the report runs after every point
    if not _absent(cli.get("greedy_match_min")):
        try:
            greedy.check_minimum(cli["greedy_match_min"])
        except ValueError as e:
            raise SweepInputError(str(e)) from None
    search_name = str(cli.get("search") or "grid")
    if search_name not in SEARCHES:
        raise SweepInputError(f"search={search_name}: choose one of {', '.join(SEARCHES)}")
    if search_name != "grid":
        from sweep import objectives, search_rounds

        obj = objectives.make(
            objective["objective"], objective["slo_ttft_ms"], objective["slo_tpot_ms"]
        )
        search_rounds.strategy(cli, obj, search_name)  # its parameters' SweepInputErrors
    name = cli.get("sweep_name") or inventory.get("sweep_name") or default_name(points, bench)
    name = str(name)
    if not _NAME.match(name):
        raise SweepInputError(f"sweep_name={name}: use letters, digits, '.', '_' and '-'")
    stop = as_bool(
        "stop_on_failure",
        cli.get("stop_on_failure"),
        as_bool("sglang_sweep_stop_on_failure", inventory.get("stop_on_failure"), False),
    )
    fresh = as_bool("fresh", cli.get("fresh"), False)
    return Inputs(
        cli,
        inventory,
        points,
        dataset,
        bench,
        objective,
        search_name,
        name,
        results / name,
        stop,
        fresh,
    )


def make_plan(inp: dict[str, Any]) -> Plan:
    """The plan of one round (`round`, default 0): a grid sweep is one round, a halving search
    one round per level (sweep/search_rounds.py); a round with nothing left to run is idle."""
    hosts = [str(h) for h in inp.get("hosts") or []]
    if not hosts:
        raise SweepInputError("no hosts to run the sweep on (is the host group empty?)")
    given = read_inputs(inp)
    round_index = int(inp.get("round") or 0)
    classes = {str(h): str(c) for h, c in (inp.get("classes") or {}).items()}
    points = pin_baselines(given.points, hosts, classes)  # after the name: it is the host set's
    by_class: dict[str, dict[str, Any]] = {}
    for h, caps in (inp.get("capabilities") or {}).items():
        if str(h) in classes and isinstance(caps, dict):
            by_class.setdefault(classes[str(h)], caps)
    level = _LevelInput(
        hosts, given.stop_on_failure, inp.get("server") or {}, given.fresh, classes, by_class
    )
    if given.search == "grid":
        plan = _level_plan(level, given.name, given.sweep_dir, given.bench, points)
        plan.idle = round_index > 0  # one round: later ones have nothing to do
        plan.final = True
    else:
        plan = _search_plan(
            level, given.cli, given.objective, round_index, given.sweep_dir, given.bench, points
        )
    plan.round = round_index
    plan.dataset = given.dataset
    if plan.run_on is not None:
        plan.run_on.dataset = given.dataset
    return plan


@dataclass(frozen=True)
class _LevelInput:
    hosts: list[str]
    stop_on_failure: bool
    capabilities: dict[str, Any]
    fresh: bool
    # host -> hardware class, and the capabilities a host of each class published
    classes: dict[str, str] = field(default_factory=dict)
    by_class: dict[str, dict[str, Any]] = field(default_factory=dict)


def _level_plan(
    inp: _LevelInput, name: str, sweep_dir: Path, bench: dict[str, Any], points: list[Point]
) -> Plan:
    """The plan of `points` in one sweep directory with one set of bench parameters."""
    previous = layout.read_sweep(sweep_dir)
    if previous and previous.get("bench") != bench:
        raise SweepInputError(
            f"sweep {name} was run with bench parameters {json.dumps(previous.get('bench'))}; "
            f"now {json.dumps(bench)}. Use another sweep_name (or remove {sweep_dir})."
        )
    status: dict[str, str] = {
        p.point_id: layout.point_status(sweep_dir, p.point_id) for p in points
    }
    identities = point_identities(points, inp.capabilities, bench, inp.by_class)
    reuse: dict[str, Path] = {}
    if not inp.fresh:
        for p in points:
            ident = identities.get(p.point_id)
            if status[p.point_id] != "complete" and ident:
                found = store.lookup(sweep_dir.parent, ident["digest"])
                if found is not None and found != sweep_dir / p.point_id:
                    reuse[p.point_id] = found
                    status[p.point_id] = "reused"
    return Plan(
        name,
        sweep_dir,
        bench,
        points,
        status,
        inp.hosts,
        inp.stop_on_failure,
        identities=identities,
        reuse=reuse,
        classes=inp.classes,
    )


def _search_plan(
    inp: _LevelInput,
    cli: dict[str, Any],
    objective_cli: dict[str, Any],
    round_index: int,
    sweep_dir: Path,
    bench: dict[str, Any],
    points: list[Point],
) -> Plan:
    """This round of the halving (or descent) search: the level its pending runs are at, in its
    own sweep directory; when the search is over (or stopped), the final level's sweep, idle."""
    from sweep import objectives, search_rounds

    objective = objectives.make(
        objective_cli["objective"], objective_cli["slo_ttft_ms"], objective_cli["slo_tpot_ms"]
    )
    strat = search_rounds.strategy(cli, objective, str(cli.get("search")))  # SweepInputErrors
    distinct = sorted({c for h, c in inp.classes.items() if c and h in inp.hosts})
    if len(distinct) > 1:
        raise SweepInputError(
            f"search={strat.name}: the hosts are of {len(distinct)} hardware classes "
            f"({'; '.join(distinct)}). A search ranks points by their raw figures, with no "
            "baseline to divide by until it is over: run it on hosts of one class (--limit), "
            "or use search=grid, which compares each point with its own class's baseline."
        )
    searched = [p for p in points if not p.is_baseline]
    baseline = [p for p in points if p.is_baseline]
    if not searched:
        raise SweepInputError(f"search={strat.name}: no point to search (only the baseline)")
    since = search_rounds.invocation_start(sweep_dir, round_index)
    measured = search_rounds.measurements(searched, sweep_dir, strat, objective, since)
    try:
        state = search_rounds.replay(searched, measured, strat)
    except ValueError as e:
        raise SweepInputError(f"search={strat.name}: {e}") from None
    stopped = round_index > 0 and search_rounds.stopped(sweep_dir, strat.levels, since)
    info = search_rounds.search_info(sweep_dir, strat, since, state, stopped, objective)
    last = strat.last_level
    if state.pending and not stopped:
        screening = [r for r in state.pending if not r.run_on]
        lv = screening[0].level
        todo = [r.point for r in screening] + (baseline if lv == last else [])
        plan = _level_plan(
            inp,
            search_rounds.level_name(sweep_dir.name, lv, strat.levels),
            search_rounds.level_dir(sweep_dir, lv, strat.levels),
            search_rounds.level_bench(bench, lv, strat.levels),
            todo,
        )
        may_run_on = [r.point for r in state.pending if r.run_on]
        if may_run_on:
            plan.run_on = _level_plan(inp, sweep_dir.name, sweep_dir, bench, may_run_on + baseline)
    else:
        finals = [r.point for rnd in state.rounds for r in rnd.runs if r.level == last]
        plan = _level_plan(inp, sweep_dir.name, sweep_dir, bench, finals + baseline)
        plan.idle = plan.final = True
    plan.search = info
    plan.search_file = sweep_dir / search_rounds.SEARCH_FILE
    return plan


def report_objective(cli: dict[str, Any]) -> dict[str, Any]:
    """The report's objective and SLOs from the command line (sweep/objectives.py), validated."""
    from sweep import objectives

    def number(key: str) -> float | None:
        raw = cli.get(key)
        if raw is None or _absent(raw):
            return None
        try:
            return float(raw)
        except (TypeError, ValueError):
            raise SweepInputError(f"{key}={raw}: not a number of milliseconds") from None

    name = str(cli.get("objective") or objectives.DEFAULT)
    try:
        objectives.make(name, number("slo_ttft_ms"), number("slo_tpot_ms"))
    except ValueError as e:
        raise SweepInputError(str(e)) from None
    return {
        "objective": name,
        "slo_ttft_ms": number("slo_ttft_ms"),
        "slo_tpot_ms": number("slo_tpot_ms"),
    }


def point_identities(
    points: list[Point],
    capabilities: dict[str, Any],
    bench: dict[str, Any],
    by_class: dict[str, dict[str, Any]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Each point's measurement identity (sweep/store.py), with its digest: on the first host
    (`capabilities`), or for a point pinned to a hardware class on a host of that class. With
    `by_class`, also `by_class`: the identity under every class, so that a point is recorded
    under the class of the host that measured it."""
    launch = role_filters().sglang_server_launch
    version = wheelhouse.source_hash(ROLES.parent)

    def one(p: Point, caps: dict[str, Any]) -> dict[str, Any] | None:
        ident = store.point_identity(p.server(), caps, bench, version, launch)
        return None if ident is None else {**ident, "digest": store.digest(ident)}

    out: dict[str, dict[str, Any]] = {}
    for p in points:
        ident = one(p, (by_class or {}).get(p.pin, {}) if p.pin else capabilities)
        if ident is None:
            continue
        if by_class:
            ident["by_class"] = {c: i for c, caps in by_class.items() if (i := one(p, caps))}
        out[p.point_id] = ident
    return out


def record_run(plan: Plan) -> None:
    """sweep.json: written before any point runs; keeps every point ever planned. Points measured
    before under the same identity are copied in (store.adopt) and count as complete."""
    layout.clear_staging(plan.sweep_dir)
    claims.clear(plan.sweep_dir)
    for pid, source in plan.reuse.items():
        store.adopt(source, plan.sweep_dir, pid, plan.identities[pid]["digest"])
    previous = layout.read_sweep(plan.sweep_dir) or {}
    known = list(previous.get("points") or [])
    for p in plan.points:
        if p.point_id not in [k["id"] for k in known]:
            known.append({"id": p.point_id, "server": p.server(), "baseline": p.is_baseline})
    runs = list(previous.get("runs") or [])
    runs.append(
        {
            "started": plan.run_started,
            "points": [p.point_id for p in plan.points],
            "to_run": [p.point_id for p in plan.pending],
            "hosts": plan.hosts,
        }
    )
    layout.write_sweep(
        plan.sweep_dir,
        {
            "name": plan.name,
            "created": previous.get("created", plan.run_started),
            "bench": plan.bench,
            "points": known,
            "runs": runs,
        },
    )
