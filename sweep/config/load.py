"""The load a sweep offers beside closed-loop concurrency: open-loop request rates and capacity
searches at a latency SLO (bench/arrivals.py, bench/capacity.py on the host).

Command line: `request_rate` (a list: one open-loop cell per rate, an axis like `concurrency`),
`burstiness`, `max_concurrency`, `open_loop_seconds`; `load=capacity` with `slo_ttft_ms` and/or
`slo_tpot_ms`, `slo_share`, `capacity_start_rate`, `capacity_precision`, `capacity_max_trials`,
`capacity_max_seconds`. What is given goes into the bench parameters, and so into every point's
identity (sweep/store/store.py); nothing is added when nothing is given, so the identities of sweeps
that never asked for open-loop load do not change. The rules of every value are the bench's own
(bench/workload.py, bench/capacity.py): sweep/config/params.py load_params checks them by the same
code before any host is contacted, the message naming the sweep's parameter; here, the bench's
flags for them.
"""

from __future__ import annotations

from typing import Any

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
