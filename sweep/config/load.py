"""The load a sweep offers beside closed-loop concurrency: open-loop request rates and capacity
searches at a latency SLO (bench/arrivals.py, bench/capacity.py on the host).

Command line: `request_rate` (a list: one open-loop cell per rate, an axis like `concurrency`),
`burstiness`, `max_concurrency`, `open_loop_seconds`; `load=capacity` with `slo_ttft_ms` and/or
`slo_tpot_ms`, `slo_share`, `capacity_start_rate`, `capacity_precision`, `capacity_max_trials`,
`capacity_max_seconds`. What is given goes into the bench parameters, and so into every point's
identity (sweep/store/store.py); nothing is added when nothing is given, so the identities of sweeps
that never asked for open-loop load do not change. The rules of every value are the bench's own
(bench/workload.py, bench/capacity.py): checked here by the same code before any host is
contacted, the message naming the sweep's parameter.
"""

from __future__ import annotations

import re
from typing import Any

from bench.capacity import Search, Slo
from bench.errors import BadArguments
from bench.workload import check_positive
from sweep.config.params import SweepInputError, absent, items, positive_int

LOADS = ("closed", "capacity")
CAPACITY_OBJECTIVE = "capacity"  # ranks points by their capacity (sweep/report/capacity.py)
OPEN_LOOP_KEYS = ("burstiness", "max_concurrency", "open_loop_seconds", "max_send_lag_ms")
CAPACITY_KEYS = (
    "capacity_start_rate",
    "capacity_precision",
    "capacity_max_trials",
    "capacity_max_seconds",
)
SLO_KEYS = ("slo_ttft_ms", "slo_tpot_ms", "slo_share")
CLI_KEYS = ("request_rate", "load", *OPEN_LOOP_KEYS, *CAPACITY_KEYS, "slo_share")


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


def params(cli: dict[str, Any], objective: str) -> dict[str, Any]:
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


def bench_args(bench: dict[str, Any]) -> list[str]:
    """The bench's flags for the load parameters of `bench` (the sweep's bench parameters)."""
    args: list[str] = []
    if bench.get("request_rate"):
        args += ["--request-rate", ",".join(f"{r:g}" for r in bench["request_rate"])]
    for key in OPEN_LOOP_KEYS:
        if key in bench:
            args += ["--" + key.replace("_", "-"), f"{bench[key]:g}"]
    cap = bench.get("capacity")
    if cap:
        args.append("--capacity")
        for key, flag in (
            ("ttft_ms", "--slo-ttft-ms"),
            ("tpot_ms", "--slo-tpot-ms"),
            ("share", "--slo-share"),
            ("start_rate", "--capacity-start-rate"),
            ("precision", "--capacity-precision"),
            ("max_trials", "--capacity-max-trials"),
            ("max_seconds", "--capacity-max-seconds"),
        ):
            if cap.get(key) is not None:
                args += [flag, f"{cap[key]:g}"]
    return args
