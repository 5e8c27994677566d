"""Turns the role's logical configuration into SGLang command-line flags for one flag dialect.

The dialect table (vars/dialects.yml) is data; this filter only interprets it, so a new fork's
dialect needs no code. Validation with user-facing messages lives in tasks/preflight.yml.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import Any

SPEC_PARAMS = ("budget", "topk", "window")
SERVING_OPTIONS = (
    "context_length",
    "mem_fraction_static",
    "cuda_graph_max_bs",
    "max_running_requests",
)


def _base_flags(cfg: dict[str, Any], serving: dict[str, str]) -> list[list[str]]:
    flags: list[list[str]] = [["--model-path", str(cfg["model_path"])]]
    if cfg.get("served_model_name"):
        flags.append(["--served-model-name", str(cfg["served_model_name"])])
    flags += [
        ["--tp-size", str(cfg["tp_size"])],
        ["--host", str(cfg["host"])],
        ["--port", str(cfg["port"])],
    ]
    for key in SERVING_OPTIONS:
        value = cfg.get(key) or 0
        if float(value) > 0:
            flags.append([serving.get(key) or "--" + key.replace("_", "-"), str(value)])
    if cfg.get("enable_metrics"):
        flags.append(["--enable-metrics"])
    return flags


def sglang_server_launch(cfg: dict[str, Any], dialect: dict[str, Any]) -> dict[str, Any]:
    """Returns {flags: [[flag, value?]...], env: {NAME: value}, expect: {info key: value},
    expect_env: {NAME: value}}: parameters set through the environment are checked in the new
    process's environment, never in /server_info."""
    flags = _base_flags(cfg, dialect.get("serving") or {})
    env: dict[str, str] = {}
    expect: dict[str, Any] = {
        "model_path": str(cfg["model_path"]),
        "tp_size": int(cfg["tp_size"]),
        "port": int(cfg["port"]),
    }
    algorithm = str(cfg["speculative_algorithm"]).upper()
    problems = sglang_server_point_problems(
        {k: cfg[v["config"]] for k, v in PARAMETERS.items()},
        dialect,
        int(cfg.get("block_size") or 0) or None,
    )
    if problems:  # preflight asserted these with the same rules; a sweep point lands here
        raise ValueError(" ".join(problems))
    if algorithm == "NONE":
        expect["speculative_algorithm"] = None
    else:
        spec = dialect["algorithms"][algorithm]
        flags.append(["--speculative-algorithm", spec["value"]])
        expect["speculative_algorithm"] = spec["value"]
        if spec.get("needs_drafter"):
            flags.append(["--speculative-draft-model-path", str(cfg["draft_model_path"])])
        for param in SPEC_PARAMS:
            rule = spec.get(param)
            if not rule:
                continue
            value = int(cfg[param])
            if rule.get("flag"):
                flags.append([rule["flag"], str(value)])
            elif rule.get("env"):
                env[rule["env"]] = str(value)
                continue
            if rule.get("info"):
                expect[rule["info"]] = value
    flags += [[str(extra)] for extra in cfg.get("extra_flags") or []]
    return {"flags": flags, "env": env, "expect": expect, "expect_env": dict(env)}


# The one map of the logical speculative parameters (what a sweep point and the command line call
# them): the role's variable, and the key of the launch configuration this filter renders from.
# The planner (sweep/store/store.py, a point's identity) reads it from here.
PARAMETERS: dict[str, dict[str, str]] = {
    "algorithm": {"var": "sglang_server_speculative_algorithm", "config": "speculative_algorithm"},
    "budget": {"var": "sglang_server_budget", "config": "budget"},
    "topk": {"var": "sglang_server_topk", "config": "topk"},
    "window": {"var": "sglang_server_window", "config": "window"},
}


def sglang_server_point_problems(
    point: dict[str, Any],
    dialect: dict[str, Any],
    block_size: int | None = None,
    logical_names: bool = False,
) -> list[str]:
    """Why a build (its dialect) cannot serve this algorithm/budget/topk/window; [] when it can.

    The one statement of these rules: preflight asserts it is empty, and the sweep planner
    (sweep/config/params.py expand) checks every point with it before anything runs. Messages
    name the role's variables, or with `logical_names` the logical parameters (PARAMETERS);
    block-size rules are skipped while the drafter's block size is not known (None).
    """
    name = {k: k if logical_names else v["var"] for k, v in PARAMETERS.items()}
    algorithm = str(point["algorithm"]).upper()
    if algorithm == "NONE":
        return []
    spec = (dialect.get("algorithms") or {}).get(algorithm)
    if spec is None:
        why = (dialect.get("unavailable") or {}).get(algorithm)
        return [
            f"{name['algorithm']}={point['algorithm']} is not available in "
            f"{dialect.get('version', 'this dialect')}"
            + (f": it cannot be given {'; '.join(why)}" if why else "")
            + f". It has: {', '.join(['NONE', *(dialect.get('algorithms') or {})])}."
        ]
    values: dict[str, int] = {}
    for key in ("budget", "topk", "window"):
        try:
            values[key] = int(point[key])
        except (TypeError, ValueError):
            return [f"{name[key]}={point[key]} must be a positive integer."]
    budget, topk, window = values["budget"], values["topk"], values["window"]
    problems = []
    rule = spec.get("topk")
    allowed = (
        "1"
        if rule is None
        else str(rule["choices"])
        if "choices" in rule
        else f"1 to {rule['max']}"
        if "max" in rule
        else None
    )
    if (
        (rule is None and topk != 1)
        or (rule is not None and "choices" in rule and topk not in rule["choices"])
        or (rule is not None and "max" in rule and topk > int(rule["max"]))
    ):
        problems.append(
            f"{name['topk']}={topk} cannot be expressed by {algorithm} in "
            f"{dialect.get('version')} (allowed: {allowed})."
        )
    if block_size:
        if (spec.get("budget") or {}).get("equals_block_size") and budget != block_size:
            problems.append(
                f"{name['budget']}={budget} differs from the drafter's block size {block_size}:"
                f" {algorithm} drafts exactly one block."
            )
        if "window" in spec and window < block_size:
            problems.append(
                f"{name['window']}={window} is smaller than the drafter's block size {block_size}."
            )
    return problems


def systemd_quote(value: Any) -> str:
    """Quotes one ExecStart word so systemd passes it through verbatim."""
    text = str(value)
    for raw, escaped in (("\\", "\\\\"), ('"', '\\"'), ("%", "%%"), ("$", "$$")):
        text = text.replace(raw, escaped)
    return f'"{text}"'


def _choose(candidates: list[dict[str, Any]], facts: dict[str, Any]) -> dict[str, Any] | None:
    """The first candidate rule this build offers, with the /server_info field it reports."""
    options = facts.get("options") or {}
    fields = set(facts.get("fields") or [])
    env_names = set(facts.get("env") or [])
    for candidate in candidates:
        rule = dict(candidate)
        info = rule.pop("info", None)
        if "flag" in rule:
            option = options.get(rule["flag"])
            if not option or not option.get("takes_value", True):
                continue
            info = option["dest"]  # the field the flag sets, whatever the candidate said
        elif "env" in rule:
            if rule["env"] not in env_names:
                continue
            info = None  # the environment never shows in /server_info
        if info is not None and info in fields:
            rule["info"] = info
        return rule
    return None


def _describe(candidate: dict[str, Any]) -> str:
    if "flag" in candidate:
        return f"flag {candidate['flag']}"
    if "env" in candidate:
        return f"environment variable {candidate['env']}"
    return f"fixed value {candidate.get('choices')}"


def sglang_dialect_discover(
    facts: dict[str, Any], candidates: dict[str, Any], serving: dict[str, list[str]] | None = None
) -> dict[str, Any]:
    """A dialect (the shape of vars/dialects.yml) chosen from what the installed build offers.

    `facts` is the output of files/sglang-build-facts.py. Algorithms the build has but cannot be
    given every parameter of land in `unavailable` with the reason, and serving options it has no
    flag for in `unavailable_serving`, for preflight to report.
    """
    offered = set(facts.get("algorithms") or [])
    options = facts.get("options") or {}
    dialect: dict[str, Any] = {
        "version": f"discovered from sglang {facts.get('version')} (build {facts.get('build_id')})",
        "algorithms": {},
        "unavailable": {},
        "serving": {},
        "unavailable_serving": [],
    }
    for key, flags in (serving or {}).items():
        found = [flag for flag in flags if flag in options]
        if found:
            dialect["serving"][key] = found[0]
        else:
            dialect["unavailable_serving"].append(f"{key} (none of: {', '.join(flags)})")
    for algorithm, rules in candidates.items():
        if algorithm not in offered:
            continue
        spec: dict[str, Any] = {
            "value": algorithm,
            "needs_drafter": bool(rules.get("needs_drafter")),
        }
        missing = []
        for param in SPEC_PARAMS:
            if param not in rules:
                continue
            rule = _choose(rules[param], facts)
            if rule is None:
                tried = ", ".join(_describe(c) for c in rules[param])
                missing.append(f"{param} (none of: {tried})")
            else:
                spec[param] = rule
        if missing:
            dialect["unavailable"][algorithm] = missing
        else:
            dialect["algorithms"][algorithm] = spec
    return dialect


def sglang_build_offers(facts: dict[str, Any]) -> str:
    """What a build offers for speculative decoding, for error messages."""
    options = sorted(o for o in (facts.get("options") or {}) if o.startswith("--speculative-"))
    env_names = sorted(n for n in (facts.get("env") or []) if "DDTREE" in n or "TOPK" in n)
    algorithms = ", ".join(facts.get("algorithms") or [])
    return (
        f"sglang {facts.get('version')} offers algorithms {algorithms};"
        f" speculative flags {' '.join(options) or 'none'}"
        + (f"; environment {' '.join(env_names)}" if env_names else "")
    )


_GPU_LINE = re.compile(r"^GPU \d+: (.+?)(?: \(UUID: [^)]*\))?\s*$")


def sglang_gpu_class(list_gpus: list[str] | str) -> str:
    """The hardware class in `nvidia-smi --list-gpus` output: "<count>x <model>", models joined
    with " + " when they differ; "" when no GPU is listed. UUIDs are dropped: two hosts with the
    same GPUs are one class."""
    lines = list_gpus.splitlines() if isinstance(list_gpus, str) else list_gpus
    models = [m.group(1) for line in lines if (m := _GPU_LINE.match(str(line)))]
    if not models:
        return ""
    return f"{len(models)}x {' + '.join(sorted(set(models)))}"


def sglang_unknown_vars(names: Iterable[str], known: Iterable[str], prefix: str) -> list[str]:
    """The names not in `known`, each with the closest known one: a typo in the inventory
    (sglang_server_windw) would otherwise leave the default in force without a word. Names are
    compared past their shared `prefix`, which would make every one of them look close."""
    rest = {k.removeprefix(prefix): k for k in known}
    out = []
    for name in sorted(set(names) - set(rest.values())):
        hint = difflib.get_close_matches(name.removeprefix(prefix), list(rest), n=1)
        out.append(f"{name} (did you mean {rest[hint[0]]}?)" if hint else name)
    return out


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "sglang_server_launch": sglang_server_launch,
            "systemd_quote": systemd_quote,
            "sglang_dialect_discover": sglang_dialect_discover,
            "sglang_server_point_problems": sglang_server_point_problems,
            "sglang_build_offers": sglang_build_offers,
            "sglang_gpu_class": sglang_gpu_class,
            "sglang_unknown_vars": sglang_unknown_vars,
        }
