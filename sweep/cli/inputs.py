"""What a sweep is asked, read and validated before any host is contacted: the command line, the
first host's inventory variables over the roles' defaults (host_settings: the only place a sweep
default lives), the points, the bench parameters (the traffic, sweep/config/workload.py), the
objective, the search and the sweep's name and directory (read_inputs). `sweep check` runs it on its
own; every plan runs it first.

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

from bench.more_repetitions import MAX_REPETITIONS
from bench.prompt_sets import CATEGORIES, CHAT_CATEGORIES
from bench.workload import NATURAL
from sweep import layout
from sweep.config import load, workload
from sweep.config.params import (
    SweepInputError,
    absent,
    as_bool,
    dedupe,
    expand,
    int_list,
    items,
    positive_int,
    report_objective,
)
from sweep.config.points import ROLES, Point
from sweep.store import greedy

if TYPE_CHECKING:
    from sweep.config.objectives import Objective
    from sweep.search.model_search import ModelSearch

BENCH_LIST_KEYS = ("contexts", "concurrency", "output_len")


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


SEARCHES = ("grid", "model")  # search=halving and search=descent: retired (RETIRED)
# the command line's settings of the model search (none of them means anything to search=grid)
SEARCH_KEYS = ("max_restarts", "max_repetitions")
# the searches retired by issue 41 (docs/search.md), and why: a sweep that names one is refused
RETIRED = {
    "halving": "it starts every point at least once, so it cannot save restarts; search=model "
    "finds the grid's answer in fewer starts",
    "descent": "it missed the grid's answer on up to 14 of 30 generated surfaces of a class "
    "(ridges, plateaus, two peaks: benchmarks/search_surfaces.py), where search=model found it "
    "on 29 or 30 of 30, in fewer starts than the grid",
}
# their settings, and the search that had them
RETIRED_KEYS = {"halving_eta": "halving", "halving_levels": "halving", "halving_run_on": "halving"}


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def bench_params(
    cli: dict[str, Any], inventory: dict[str, Any], dataset: workload.Dataset | None = None
) -> dict[str, Any]:
    """What every point is asked (the bench matrix, the traffic, the greedy-output check); part
    of every point's identity. `dataset`: the user's, sampled (sweep/config/workload.py)."""
    inv = inventory.get("bench") or {}

    def pick(key: str) -> Any:
        return cli.get(key) if not absent(cli.get(key)) else inv.get(key)

    out: dict[str, Any] = {}
    for key in BENCH_LIST_KEYS:
        raw = pick(key)
        if key == "concurrency" and absent(cli.get(key)) and load.open_loop_only(cli):
            out[key] = []
            continue
        if dataset is not None and key != "concurrency" and absent(cli.get(key)):
            raw = "natural"  # a dataset is measured as its users send it, unless told otherwise
        values = int_list(key, raw, natural=key != "concurrency")
        if values is None:
            raise SweepInputError(f"{key} is not set (command line or sglang_bench_{key})")
        out[key] = values
    requests = pick("requests")
    out["requests"] = (
        0 if absent(requests) or str(requests) == "0" else positive_int("requests", requests)
    )
    # a dataset on the command line is the traffic, unless categories say otherwise
    given = cli.get("categories") if not absent(cli.get("categories")) else None
    default = "dataset" if dataset is not None else inv.get("categories") or "chat"
    cats = [str(c).strip() for c in items("categories", given or default)]
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
    out["categories"] = dedupe(cats)
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
    out.update(load.params(cli, str(cli.get("objective") or "throughput")))
    if dataset is not None:
        try:
            workload.check_contexts(dataset, out["contexts"])
        except workload.WorkloadError as e:
            raise SweepInputError(str(e)) from None
        out["dataset"] = dataset.params()
    return out


def retired(cli: dict[str, Any]) -> None:
    """SweepInputError for a retired search (search=halving, search=descent) or one of their
    settings given, naming it, why it was retired and what to use instead."""
    name = str(cli.get("search") or "")
    if name in RETIRED:
        raise SweepInputError(
            f"search={name} was retired: {RETIRED[name]}. Use search=model (or search=grid to "
            "measure every point); docs/search.md"
        )
    for key, search in RETIRED_KEYS.items():
        if not absent(cli.get(key)):
            raise SweepInputError(
                f"{key}={cli[key]}: a setting of search={search}, which was retired: "
                f"{RETIRED[search]}. Use search=model (its settings: {', '.join(SEARCH_KEYS)}); "
                "docs/search.md"
            )


def search_strategy(cli: dict[str, Any], objective: Objective, hosts: int = 1) -> ModelSearch:
    """The model search's settings from the command line: max_restarts (no limit) and
    max_repetitions (bench/more_repetitions.py MAX_REPETITIONS). Its rounds have a point a host
    (`hosts`, the sweep's)."""
    from sweep.search.model_search import ModelSearch

    restarts, reps = (cli.get(key) for key in SEARCH_KEYS)
    return ModelSearch(
        None if absent(restarts) else positive_int("max_restarts", restarts),
        objective.higher_is_better,
        batch=max(hosts, 1),
        max_repetitions=MAX_REPETITIONS if absent(reps) else positive_int("max_repetitions", reps),
    )


def default_name(points: list[Point], bench: dict[str, Any]) -> str:
    """Deterministic: the same command plans the same sweep, so rerunning it resumes."""
    key = json.dumps({"points": [p.point_id for p in points], "bench": bench}, sort_keys=True)
    return "sweep-" + hashlib.sha256(key.encode()).hexdigest()[:8]


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
    A dataset is read (streamed) and sampled here; its sample is kept under
    <results>/.workloads/ so that later plans do not read the file again
    (sweep/config/workload.py)."""
    cli = inp.get("cli") or {}
    # a retired search or one of its settings: refused first, saying why (nothing sampled yet)
    retired(cli)
    inventory = host_settings(inp["host"]) if "host" in inp else inp.get("inventory") or {}
    points = expand(cli, inventory, inp.get("server"))
    # the values that need no file read first, so a bad one is named before a dataset is sampled
    objective, ranked = report_objective(cli)  # checked now: the report runs after every point
    stop = as_bool(
        "stop_on_failure",
        cli.get("stop_on_failure"),
        as_bool("sglang_sweep_stop_on_failure", inventory.get("stop_on_failure"), False),
    )
    fresh = as_bool("fresh", cli.get("fresh"), False)
    if not absent(cli.get("greedy_match_min")):
        try:
            greedy.check_minimum(cli["greedy_match_min"])
        except ValueError as e:
            raise SweepInputError(str(e)) from None
    search_name = str(cli.get("search") or "grid")
    if search_name not in SEARCHES:
        raise SweepInputError(f"search={search_name}: choose one of {', '.join(SEARCHES)}")
    if search_name != "grid" and objective["objective"] == load.CAPACITY_OBJECTIVE:
        raise SweepInputError(
            f"objective=capacity with search={search_name}: a search ranks points cell by cell, "
            "capacity ranks whole capacity searches; use search=grid"
        )
    hosts = [str(h) for h in inp.get("hosts") or []]
    strategy = None
    if search_name == "grid":
        given = [k for k in SEARCH_KEYS if not absent(cli.get(k))]
        if given:
            raise SweepInputError(
                f"{given[0]}={cli[given[0]]}: a search's setting, and search=grid measures every "
                "point (give search=model)"
            )
    else:
        strategy = search_strategy(cli, ranked, len(hosts))
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
            )
        except workload.WorkloadError as e:
            raise SweepInputError(str(e)) from None
    elif any(not absent(cli.get(k)) for k in ("dataset_sample", "dataset_seed", "dataset_format")):
        raise SweepInputError(
            "dataset_sample, dataset_seed and dataset_format need -e dataset=PATH"
        )
    bench = bench_params(cli, inventory, dataset)
    name = str(cli.get("sweep_name") or inventory.get("sweep_name") or default_name(points, bench))
    if not _NAME.match(name):
        raise SweepInputError(f"sweep_name={name}: use letters, digits, '.', '_' and '-'")
    previous = layout.read_sweep(results / name)
    if previous and previous.get("bench") != bench:
        raise SweepInputError(
            f"sweep {name} was run with bench parameters {json.dumps(previous.get('bench'))}; "
            f"now {json.dumps(bench)}. Use another sweep_name (or remove {results / name})."
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
        search_name,
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
