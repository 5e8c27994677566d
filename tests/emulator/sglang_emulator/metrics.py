"""Prometheus text for /metrics (--enable-metrics), with the metric names SGLang exposes."""

from __future__ import annotations

from typing import Any

from .scheduler import Scheduler
from .stats import Histogram, ServerStats


def _labels(extra: dict[str, str] | None, base: dict[str, str]) -> str:
    merged = {**base, **(extra or {})}
    return "{" + ",".join(f'{k}="{v}"' for k, v in merged.items()) + "}"


def _metric(
    out: list[str], name: str, kind: str, help_: str, value: float, base: dict[str, str]
) -> None:
    out.append(f"# HELP {name} {help_}")
    out.append(f"# TYPE {name} {kind}")
    out.append(f"{name}{_labels(None, base)} {value}")


def _histogram(out: list[str], name: str, help_: str, h: Histogram, base: dict[str, str]) -> None:
    out.append(f"# HELP {name} {help_}")
    out.append(f"# TYPE {name} histogram")
    cumulative = 0
    for le, count in zip(h.buckets, h.counts, strict=False):
        cumulative += count
        out.append(f"{name}_bucket{_labels({'le': str(le)}, base)} {cumulative}")
    out.append(f"{name}_bucket{_labels({'le': '+Inf'}, base)} {h.n}")
    out.append(f"{name}_sum{_labels(None, base)} {h.total}")
    out.append(f"{name}_count{_labels(None, base)} {h.n}")


def render(
    stats: ServerStats,
    sched: Scheduler,
    model_name: str,
    startup: dict[str, Any],
    release: tuple[int, ...] = (0, 5, 23),
) -> str:
    """The series the emulated release has: sglang:spec_verify_calls_total from 0.5.13, and
    sglang:startup_time_seconds from 0.5.17 (0.5.19 observability/metrics_collector.py:1508,
    :1531); 0.5.11 has neither."""
    base = {"model_name": model_name, "engine_type": "unified", "tp_rank": "0", "pp_rank": "0"}
    out: list[str] = []
    _metric(
        out,
        "sglang:num_running_reqs",
        "gauge",
        "The number of running requests.",
        len(sched.running),
        base,
    )
    _metric(
        out,
        "sglang:num_queue_reqs",
        "gauge",
        "The number of requests in the waiting queue.",
        len(sched.waiting),
        base,
    )
    _metric(out, "sglang:token_usage", "gauge", "The token usage.", sched.token_usage(), base)
    _metric(
        out,
        "sglang:gen_throughput",
        "gauge",
        "The generation throughput (token/s).",
        stats.last_gen_throughput,
        base,
    )
    _metric(
        out,
        "sglang:spec_accept_length",
        "gauge",
        "The average acceptance length.",
        stats.avg_accept_length or 0.0,
        base,
    )
    _metric(
        out,
        "sglang:spec_accept_rate",
        "gauge",
        "The average acceptance rate.",
        stats.accept_rate,
        base,
    )
    # SGLang increments it only for spec_verify_ct > 0, and its multiprocess collector shows no
    # series before the first increment (speculation off: never), so bench's accept_length stays
    # undefined there too (and on 0.5.11-0.5.12, which have no such counter).
    if stats.verify_calls > 0 and release >= (0, 5, 13):
        _metric(
            out,
            "sglang:spec_verify_calls_total",
            "counter",
            "Number of verify calls.",
            stats.verify_calls,
            base,
        )
    _metric(
        out,
        "sglang:generation_tokens_total",
        "counter",
        "Number of generation tokens.",
        stats.generation_tokens,
        base,
    )
    _metric(
        out,
        "sglang:prompt_tokens_total",
        "counter",
        "Number of prefill tokens.",
        stats.prompt_tokens,
        base,
    )
    _histogram(
        out,
        "sglang:time_to_first_token_seconds",
        "Histogram of time to first token.",
        stats.ttft,
        base,
    )
    _histogram(
        out,
        "sglang:inter_token_latency_seconds",
        "Histogram of inter-token latency.",
        stats.itl,
        base,
    )
    _histogram(
        out,
        "sglang:e2e_request_latency_seconds",
        "Histogram of end-to-end latency.",
        stats.e2e,
        base,
    )
    if release >= (0, 5, 17):
        out.append("# HELP sglang:startup_time_seconds Start-up time per phase.")
        out.append("# TYPE sglang:startup_time_seconds gauge")
        for phase in ("load_weight", "kv_cache_allocation", "scheduler_e2e", "tokenizer_e2e"):
            value = float(startup.get(phase) or 0.0)
            out.append(f"sglang:startup_time_seconds{_labels({'phase': phase}, base)} {value}")
    return "\n".join(out) + "\n"
