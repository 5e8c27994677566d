"""What a sweep is asked, read and validated before any host is contacted: the command line, the
first host's inventory variables over the roles' defaults (host_settings: the only place a sweep
default lives), the points, the objective, the search, the bench parameters (all parsed by
sweep/config/params.py), a user's dataset (sweep/config/workload.py) and the sweep's name and
directory (read_inputs). `sweep check` runs it on its own; every plan runs it first.

Input (from the playbook, JSON): the command line's logical parameters (`cli`), the first host's
variables that bear on the sweep as they are (`host`: sglang_server_*, sglang_bench_*,
sglang_sweep_*, only those it defines) and, once the hosts were checked, the hosts, their hardware
classes and capabilities, what the first host's build and drafter allow (`server`: dialect,
block_size) and the invocation's start (`started`).

This is the one place they are parsed: `Inputs` holds every value typed and checked, and nothing
after it reads the command line or the inventory again.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sweep import layout
from sweep.config import workload
from sweep.config.params import (
    BENCH_LIST_KEYS,
    SweepInputError,
    absent,
    as_bool,
    bench_params,
    expand,
    greedy_minimum,
    report_objective,
    search_settings,
)
from sweep.config.points import ROLES, Point

if TYPE_CHECKING:
    from sweep.config.objectives import Objective
    from sweep.search.model_search import ModelSearch


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


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def role_defaults(role: str) -> dict[str, Any]:
    import yaml  # controller only: the hosts never plan

    path = ROLES / role / "defaults" / "main.yml"
    # libyaml's loader where PyYAML has it: the planner reads these on every host's `next`
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return dict(yaml.load(path.read_text(encoding="utf-8"), Loader=loader) or {})


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
    """Everything a sweep's command line, first host's variables and hosts say, validated (what
    the hosts' builds allow is checked again by plan)."""

    points: list[Point]
    dataset: workload.Dataset | None
    bench: dict[str, Any]
    objective: dict[str, Any]  # as the report takes it: name and SLOs
    ranked: Objective  # what points are ranked by
    search: str
    strategy: ModelSearch | None  # search=model's settings
    name: str
    sweep_dir: Path
    stop_on_failure: bool
    fresh: bool
    hosts: list[str] = field(default_factory=list)
    started: float = 0.0  # the invocation's start (epoch seconds)
    # host -> hardware class, and the capabilities a host of each class published
    classes: dict[str, str] = field(default_factory=dict)
    by_class: dict[str, dict[str, Any]] = field(default_factory=dict)
    capabilities: dict[str, Any] = field(default_factory=dict)  # the first host's build's
    block_size: int = 16  # the drafter's: some builds start the same server for several points

    @property
    def host_classes(self) -> list[str]:
        """Each host's hardware class, in the hosts' order ("" where none was published)."""
        return [self.classes.get(h, "") for h in self.hosts]


def read_inputs(inp: dict[str, Any]) -> Inputs:
    """The checks that need no host (SweepInputError naming the first bad value): run by
    sweep.yml's first play on the controller, before any host is contacted, and by every plan.
    Every value is parsed by sweep/config/params.py, in one pass; a dataset is read (streamed)
    and sampled last, so that a bad value is named before it is. Its sample is kept under
    <results>/.workloads/ so that later plans do not read the file again
    (sweep/config/workload.py)."""
    cli = inp.get("cli") or {}
    inventory = host_settings(inp["host"]) if "host" in inp else inp.get("inventory") or {}
    # a retired search or one of its settings: refused first, saying why
    search = search_settings(cli)
    points = expand(cli, inventory, inp.get("server"))
    objective, ranked = report_objective(cli)  # checked now: the report runs after every point
    stop = as_bool(
        "stop_on_failure",
        cli.get("stop_on_failure"),
        as_bool("sglang_sweep_stop_on_failure", inventory.get("stop_on_failure"), False),
    )
    fresh = as_bool("fresh", cli.get("fresh"), False)
    if not absent(cli.get("greedy_match_min")):
        greedy_minimum(cli["greedy_match_min"])
    bench = bench_params(cli, inventory, dataset=not absent(cli.get("dataset")))
    hosts = [str(h) for h in inp.get("hosts") or []]
    root = cli.get("results_dir") or inp.get("results_root") or inventory.get("results_dir")
    results = Path(root or SWEEP_DEFAULTS["sglang_sweep_results_dir"]).resolve()
    dataset = None
    if not absent(cli.get("dataset")):
        try:
            dataset = workload.load(
                cli["dataset"],
                cli.get("dataset_sample"),
                cli.get("dataset_seed"),
                cli.get("dataset_format"),
                results,
                bench["contexts"],
            )
        except workload.WorkloadError as e:
            raise SweepInputError(str(e)) from None
        bench["dataset"] = dataset.params()
    elif any(not absent(cli.get(k)) for k in ("dataset_sample", "dataset_seed", "dataset_format")):
        raise SweepInputError(
            "dataset_sample, dataset_seed and dataset_format need -e dataset=PATH"
        )
    # deterministic: the same command plans the same sweep, so rerunning it resumes
    key = json.dumps({"points": [p.point_id for p in points], "bench": bench}, sort_keys=True)
    default = "sweep-" + hashlib.sha256(key.encode()).hexdigest()[:8]
    name = str(cli.get("sweep_name") or inventory.get("sweep_name") or default)
    if not _NAME.match(name):
        raise SweepInputError(f"sweep_name={name}: use letters, digits, '.', '_' and '-'")
    previous = layout.read_sweep(results / name)
    if previous and previous.get("bench") != bench:
        raise SweepInputError(
            f"sweep {name} was run with bench parameters {json.dumps(previous.get('bench'))}; "
            f"now {json.dumps(bench)}. Use another sweep_name (or remove {results / name})."
        )
    strategy = None
    if search.name == "model":
        from sweep.search.model_search import ModelSearch

        strategy = ModelSearch(
            search.max_restarts,
            ranked.higher_is_better,
            batch=max(len(hosts), 1),
            max_repetitions=search.max_repetitions,
        )
    classes = {str(h): str(c) for h, c in (inp.get("classes") or {}).items()}
    by_class: dict[str, dict[str, Any]] = {}
    for h, caps in (inp.get("capabilities") or {}).items():
        if str(h) in classes and isinstance(caps, dict):
            by_class.setdefault(classes[str(h)], caps)
    distinct = sorted({c for h, c in classes.items() if c and h in hosts})
    if strategy is not None and len(distinct) > 1:
        raise SweepInputError(
            f"search={strategy.name}: the hosts are of {len(distinct)} hardware classes "
            f"({'; '.join(distinct)}). A search ranks points by their raw figures, with no "
            "baseline to divide by until it is over: run it on hosts of one class (--limit), "
            "or use search=grid, which compares each point with its own class's baseline."
        )
    server = inp.get("server") or {}
    return Inputs(
        points,
        dataset,
        bench,
        objective,
        ranked,
        search.name,
        strategy,
        name,
        results / name,
        stop,
        fresh,
        hosts,
        float(inp.get("started") or time.time()),
        classes,
        by_class,
        server,
        int(server.get("block_size") or inventory.get("block_size") or 16),
    )
