"""A sweep's parameters as given (command line, inventory): parsing and the error that names a bad
one. Every value a sweep takes is parsed here, once, and refused with its name and value: the
server parameters into the sweep's points (expand: a grid, explicit points, the baseline, each
checked by the sglang_server role's own rules), the objective, the search (search_settings), the
greedy check's minimum, and the bench parameters with the load's (bench_params, load_params: the
bench's own rules, sweep/config/load.py). sweep/cli/inputs.py calls them in one pass; only a
user's dataset is read elsewhere (sweep/config/workload.py)."""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bench.capacity import Search, Slo
from bench.errors import BadArguments
from bench.more_repetitions import MAX_REPETITIONS
from bench.prompt_sets import CATEGORIES, CHAT_CATEGORIES
from bench.workload import NATURAL, check_positive
from sweep.config.load import (
    CAPACITY_KEYS,
    CAPACITY_OBJECTIVE,
    CLI_KEYS,
    LOADS,
    OPEN_LOOP_KEYS,
    SLO_KEYS,
)
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


BENCH_LIST_KEYS = ("contexts", "concurrency", "output_len")
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


def greedy_minimum(value: Any) -> float:
    """greedy_match_min as given: a share between 0 and 1 (the sweep's, the report's and
    deploy's one rule)."""
    try:
        share = float(value)
    except (TypeError, ValueError):
        raise SweepInputError(f"greedy_match_min={value}: not a number between 0 and 1") from None
    if not 0.0 <= share <= 1.0:
        raise SweepInputError(f"greedy_match_min={value}: must be between 0 and 1")
    return share


@dataclass(frozen=True)
class SearchSettings:
    """search=grid or search=model, and the model search's limits (None: no limit on restarts)."""

    name: str
    max_restarts: int | None = None
    max_repetitions: int = MAX_REPETITIONS


def search_settings(cli: dict[str, Any]) -> SearchSettings:
    """The search asked: a retired one (search=halving, search=descent) or one of their settings
    refused naming why and what to use instead; a setting of the model search refused with
    search=grid, which measures every point."""
    name = str(cli.get("search") or "grid")
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
    if name not in SEARCHES:
        raise SweepInputError(f"search={name}: choose one of {', '.join(SEARCHES)}")
    if name != "grid" and str(cli.get("objective") or "") == CAPACITY_OBJECTIVE:
        raise SweepInputError(
            f"objective=capacity with search={name}: a search ranks points cell by cell, "
            "capacity ranks whole capacity searches; use search=grid"
        )
    restarts, reps = (cli.get(key) for key in SEARCH_KEYS)
    if name == "grid":
        given = [k for k in SEARCH_KEYS if not absent(cli.get(k))]
        if given:
            raise SweepInputError(
                f"{given[0]}={cli[given[0]]}: a search's setting, and search=grid measures every "
                "point (give search=model)"
            )
        return SearchSettings(name)
    return SearchSettings(
        name,
        None if absent(restarts) else positive_int("max_restarts", restarts),
        MAX_REPETITIONS if absent(reps) else positive_int("max_repetitions", reps),
    )


def bench_params(
    cli: dict[str, Any], inventory: dict[str, Any], dataset: bool = False
) -> dict[str, Any]:
    """What every point is asked (the bench matrix, the traffic, the greedy-output check); part
    of every point's identity. `dataset`: a user's dataset is given (sweep/config/workload.py
    reads it and adds its own parameters)."""
    inv = inventory.get("bench") or {}

    def pick(key: str) -> Any:
        return cli.get(key) if not absent(cli.get(key)) else inv.get(key)

    out: dict[str, Any] = {}
    for key in BENCH_LIST_KEYS:
        raw = pick(key)
        if key == "concurrency" and absent(cli.get(key)) and open_loop_only(cli):
            out[key] = []
            continue
        if dataset and key != "concurrency" and absent(cli.get(key)):
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
    default = "dataset" if dataset else inv.get("categories") or "chat"
    cats = [str(c).strip() for c in items("categories", given or default)]
    bad = [c for c in cats if c not in CATEGORIES]
    if bad or not cats:
        raise SweepInputError(
            f"categories={','.join(cats)}: each must be one of {', '.join(CATEGORIES)}"
        )
    if "dataset" in cats and not dataset:
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
    out.update(load_params(cli, str(cli.get("objective") or "throughput")))
    return out


def _named(e: BadArguments) -> SweepInputError:
    """The bench's message with its flags as the sweep's parameters (--slo-share: slo_share)."""
    return SweepInputError(
        re.sub(r"--([a-z][a-z-]*)", lambda m: m.group(1).replace("-", "_"), str(e))
    )


def _number(key: str, raw: Any) -> float:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise SweepInputError(f"{key}={raw}: not a number") from None
    try:
        check_positive(key, value)
    except BadArguments as e:
        raise _named(e) from None
    return value


def open_loop_only(cli: dict[str, Any]) -> bool:
    """Open-loop load asked on the command line: then closed-loop cells only when it asks for
    them too (`concurrency`), not from the inventory's default."""
    return not absent(cli.get("request_rate")) or str(cli.get("load") or "") == "capacity"


def load_params(cli: dict[str, Any], objective: str) -> dict[str, Any]:
    """The load's bench parameters from the command line ({} when none was given)."""
    load = str(cli.get("load") or "closed")
    if load not in LOADS:
        raise SweepInputError(f"load={load}: choose one of {', '.join(LOADS)}")
    if objective == CAPACITY_OBJECTIVE and load != "capacity":
        raise SweepInputError(
            "objective=capacity ranks points by a capacity search: give load=capacity and an SLO"
        )
    given = {k: cli[k] for k in (*CLI_KEYS, *SLO_KEYS) if not absent(cli.get(k))}
    slo_given = [k for k in SLO_KEYS if k in given]
    if slo_given and load != "capacity" and objective not in ("goodput", CAPACITY_OBJECTIVE):
        raise SweepInputError(
            f"{', '.join(slo_given)} given, but an SLO is used only by load=capacity or "
            f"objective=goodput (objective={objective})"
        )
    if "slo_share" in given and load != "capacity":
        raise SweepInputError("slo_share applies to load=capacity")
    out: dict[str, Any] = {}
    if "request_rate" in given:
        rates = [_number("request_rate", r) for r in items("request_rate", given["request_rate"])]
        if not rates:
            raise SweepInputError(f"request_rate={given['request_rate']}: give one or more rates")
        out["request_rate"] = rates
    open_loop = "request_rate" in out or load == "capacity"
    for key in OPEN_LOOP_KEYS:
        if key not in given:
            continue
        if not open_loop:
            raise SweepInputError(
                f"{key} applies to open-loop load: give request_rate or load=capacity"
            )
        out[key] = (
            positive_int(key, given[key]) if key == "max_concurrency" else _number(key, given[key])
        )
    if load != "capacity":
        stray = [k for k in CAPACITY_KEYS if k in given]
        if stray:
            raise SweepInputError(f"{stray[0]} applies to load=capacity")
        return out
    bounds: dict[str, Any] = {}
    for key, field in (
        ("capacity_start_rate", "start_rate"),
        ("capacity_precision", "precision"),
    ):
        if key in given:
            bounds[field] = _number(key, given[key])
    if "capacity_max_trials" in given:
        bounds["max_trials"] = _int(given, "capacity_max_trials")
    share: dict[str, float] = {}
    if "slo_share" in given:
        share["share"] = _opt(given, "slo_share") or 0.0
    try:
        slo = Slo(_opt(given, "slo_ttft_ms"), _opt(given, "slo_tpot_ms"), **share)
        search = Search(**bounds)
    except BadArguments as e:
        raise _named(e) from None
    capacity: dict[str, Any] = {
        **slo.to_dict(),
        "start_rate": search.start_rate,
        "precision": search.precision,
        "max_trials": search.max_trials,
    }
    if "capacity_max_seconds" in given:
        capacity["max_seconds"] = _number("capacity_max_seconds", given["capacity_max_seconds"])
    out["capacity"] = capacity
    return out


def _opt(given: dict[str, Any], key: str) -> float | None:
    if key not in given:
        return None
    try:
        return float(given[key])
    except (TypeError, ValueError):
        raise SweepInputError(f"{key}={given[key]}: not a number") from None


def _int(given: dict[str, Any], key: str) -> int:
    text = str(given[key]).strip()
    if not text.lstrip("-").isdigit():
        raise SweepInputError(f"{key}={given[key]}: not an integer")
    return int(text)
