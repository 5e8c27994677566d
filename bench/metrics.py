"""THE metric definitions. Everything that turns raw timestamps into figures lives here.

Definitions (TTFT, ITL, TPOT, throughput and concurrency as SGLang's own benchmark,
`sglang/benchmark/serving.py`, computes them):

- A *token chunk* is a streamed chunk whose server-side `completion_tokens` grew.
- TTFT: request start to the first token chunk.
- ITL: each gap between consecutive token chunks, spread evenly over the tokens the later chunk
  carries (a chunk with k new tokens after a gap g contributes k values g/k).
- TPOT: (latency - TTFT) / (output_len - 1), for requests with at least 2 output tokens.
- Latency: request start to the end of the stream.
- Output throughput: output tokens of completed requests / wall duration of the cell.
- Concurrency reached: sum of request latencies / wall duration.
- Accept length: sum(completion_tokens) / sum(spec_verify_ct) over completed requests that report
  `spec_verify_ct` (i.e. the per-request accept lengths weighted by verify count); not
  /server_info's `avg_spec_accept_length`, which counts since start-up or the last /flush_cache
  and covers one DP rank only.
- Repetitions: median and median absolute deviation (unscaled) across repetitions.
- Open-loop cells (`open_loop_summary`; requests sent on a schedule, bench/arrivals.py): a
  request's send lag is its actual send (the moment aiohttp writes its body) minus its
  scheduled send, both offsets from the cell's start; the offered rate is the one asked for;
  the achieved rate is (n - 1) / (last send - first send) over the actual sends of all n
  requests, failed ones included (n - 1 gaps over their span: the same estimate for a schedule
  and for what was sent, unbiased by where the cell's clock starts). A cell whose p99 send lag
  exceeds `max_send_lag_ms` is invalid: the client fell behind its schedule, so the cell
  measured the client, not the server. It is still recorded, with all its requests.
- Per source (`by_source`: a chat-shaped cell mixes conversations of several domains or dataset
  sources, each request tagged with its own): the accept length as above over the source's
  requests, its TPOT and TTFT distributions, and its output tok/s PER REQUEST:
  sum(completion_tokens) / sum(latency) over its completed requests, the speed one user of
  that source sees (a source's requests share the cell's wall time with the others, so the
  cell's own throughput cannot be split by source).

All times are seconds internally; summaries report milliseconds (`*_ms`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

PERCENTILES = (90, 95, 99)


@dataclass
class RequestResult:
    """One request as observed by the client. Times are seconds, relative to `start`."""

    index: int
    start: float = 0.0  # perf_counter seconds relative to the cell's start
    ok: bool = False
    error: str | None = None
    incomplete: bool = False
    latency: float | None = None
    ttft: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int = 0
    cached_tokens: int | None = None
    spec_verify_ct: int | None = None
    finish_reason: str | None = None
    rid: str | None = None
    source: str = ""  # the prompt's domain or dataset tag (raw categories: the category)
    scheduled: float | None = None  # open loop: when it was due, seconds from the cell's start
    # Seconds since request start of each token chunk, and the cumulative completion tokens
    # the server reported in it.
    chunk_times: list[float] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["itl"] = itl(self.chunk_times, self.chunk_tokens)
        d["tpot"] = tpot(self)
        d["accept_length"] = accept_length_of(self)
        d["send_lag"] = send_lag(self)
        return d


def itl(chunk_times: Sequence[float], chunk_tokens: Sequence[int]) -> list[float]:
    """Inter-token latencies: each chunk gap spread evenly over the tokens of that chunk."""
    out: list[float] = []
    if not chunk_times:
        return out
    last_t, last_n = chunk_times[0], chunk_tokens[0]
    for t, n in zip(chunk_times[1:], chunk_tokens[1:], strict=True):
        new = n - last_n
        if new <= 0:  # like sglang's bench: the gap runs from the last chunk with tokens
            continue
        out.extend([(t - last_t) / new] * new)
        last_t, last_n = t, n
    return out


def tpot(r: RequestResult) -> float | None:
    if not r.ok or r.latency is None or r.ttft is None or r.completion_tokens < 2:
        return None
    return (r.latency - r.ttft) / (r.completion_tokens - 1)


def send_lag(r: RequestResult) -> float | None:
    """Seconds an open-loop request was sent after it was due (None in a closed loop)."""
    return None if r.scheduled is None else r.start - r.scheduled


def arrival_rate(times: Sequence[float]) -> float | None:
    """Arrivals per second: (n - 1) gaps over their span; None with fewer than 2 or no span."""
    if len(times) < 2:
        return None
    span = max(times) - min(times)
    return (len(times) - 1) / span if span > 0 else None


# The default p99 send lag above which an open-loop cell is invalid. SGLang schedules a batch
# per model step, 10-40 ms on a GPU with speculative decoding: a request a few milliseconds
# late still joins nearly always the batch it was due for. It is also well above what the
# client's own path costs (benchmarks/client_headroom.py), so it flags a client that is
# overloaded, not one that is merely noisy.
MAX_SEND_LAG_MS = 5.0


def open_loop_summary(
    results: Sequence[RequestResult],
    request_rate: float,
    burstiness: float,
    max_concurrency: int | None,
    max_send_lag_ms: float = MAX_SEND_LAG_MS,
) -> dict[str, Any]:
    """The open-loop figures of a cell (see the module docstring), merged into its summary."""
    lags = distribution((lag for lag in map(send_lag, results) if lag is not None), 1000.0)
    p99 = lags["p99"]
    valid = p99 is not None and p99 <= max_send_lag_ms
    reason = None
    if not valid:
        waited = (
            f" (with max_concurrency {max_concurrency} this includes waiting for a free slot)"
            if max_concurrency
            else ""
        )
        reason = (
            f"p99 send lag {p99:.2f} ms > max_send_lag_ms {max_send_lag_ms:g}: the client fell"
            f" behind its schedule{waited}: it measured the client, not the server"
            if p99 is not None
            else "no request has a send lag"
        )
    return {
        "request_rate": request_rate,
        "burstiness": burstiness,
        "max_concurrency": max_concurrency,
        "scheduled_rate": arrival_rate([r.scheduled for r in results if r.scheduled is not None]),
        "achieved_rate": arrival_rate([r.start for r in results]),
        "send_lag_ms": lags,
        "max_send_lag_ms": max_send_lag_ms,
        "valid": valid,
        "invalid_reason": reason,
    }


def accept_length_of(r: RequestResult) -> float | None:
    if not r.spec_verify_ct:
        return None
    return r.completion_tokens / r.spec_verify_ct


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default method)."""
    if not sorted_values:
        raise ValueError("percentile of an empty sequence")
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    frac = pos - lo
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * frac


def distribution(values: Iterable[float], scale: float = 1.0) -> dict[str, float | int | None]:
    """mean, median, std, min, max, p90, p95, p99 and count of `values` multiplied by `scale`."""
    v = sorted(x * scale for x in values)
    if not v:
        keys = ["mean", "median", "std", "min", "max"] + [f"p{p}" for p in PERCENTILES]
        return {"count": 0, **dict.fromkeys(keys)}
    out: dict[str, float | int | None] = {
        "count": len(v),
        "mean": statistics.fmean(v),
        "median": percentile(v, 50),
        "std": statistics.pstdev(v) if len(v) > 1 else 0.0,
        "min": v[0],
        "max": v[-1],
    }
    for p in PERCENTILES:
        out[f"p{p}"] = percentile(v, p)
    return out


def median_mad(values: Sequence[float]) -> tuple[float, float]:
    """Median and (unscaled) median absolute deviation."""
    if not values:
        raise ValueError("median_mad of an empty sequence")
    med = statistics.median(values)
    return med, statistics.median(abs(x - med) for x in values)


def summarize(results: Sequence[RequestResult], duration: float) -> dict[str, Any]:
    """Cell summary from per-request results. Failed and incomplete requests are counted, and
    excluded from latency distributions (they have no complete timing)."""
    done = [r for r in results if r.ok]
    failed = [r for r in results if not r.ok and not r.incomplete]
    incomplete = [r for r in results if not r.ok and r.incomplete]
    out_tokens = sum(r.completion_tokens for r in done)
    in_tokens = sum(r.prompt_tokens or 0 for r in done)
    spec = [r for r in done if r.spec_verify_ct]
    verify = sum(r.spec_verify_ct or 0 for r in spec)
    errors: dict[str, int] = {}
    for r in results:
        if not r.ok:
            key = (r.error or "unknown")[:200]
            errors[key] = errors.get(key, 0) + 1
    all_itl: list[float] = []
    for r in done:
        all_itl.extend(itl(r.chunk_times, r.chunk_tokens))
    tpots = [t for t in (tpot(r) for r in done) if t is not None]
    prompt_lens = [r.prompt_tokens for r in done if r.prompt_tokens is not None]
    per_s = 1.0 / duration if duration > 0 else 0.0
    return {
        "requests": len(results),
        "completed": len(done),
        "failed": len(failed),
        "incomplete": len(incomplete),
        "errors": errors,
        "duration_s": duration,
        "request_throughput": len(done) * per_s,
        "output_throughput": out_tokens * per_s,
        "total_token_throughput": (out_tokens + in_tokens) * per_s,
        "output_tokens": out_tokens,
        "input_tokens": in_tokens,
        "concurrency_reached": sum(r.latency or 0.0 for r in done) * per_s,
        "prompt_tokens_min": min(prompt_lens) if prompt_lens else None,
        "prompt_tokens_max": max(prompt_lens) if prompt_lens else None,
        "ttft_ms": distribution((r.ttft for r in done if r.ttft is not None), 1000.0),
        "itl_ms": distribution(all_itl, 1000.0),
        "tpot_ms": distribution(tpots, 1000.0),
        "e2e_latency_ms": distribution((r.latency for r in done if r.latency is not None), 1000.0),
        "accept_length": out_tokens_of(spec) / verify if verify else None,
        "accept_length_requests": len(spec),
        "accept_length_dist": distribution(
            a for a in (accept_length_of(r) for r in spec) if a is not None
        ),
        "completion_tokens": distribution(float(r.completion_tokens) for r in done),
        "by_source": by_source(results),
    }


def source_summary(results: Sequence[RequestResult]) -> dict[str, Any]:
    """The per-source figures of one source's requests (see the module docstring)."""
    done = [r for r in results if r.ok]
    spec = [r for r in done if r.spec_verify_ct]
    verify = sum(r.spec_verify_ct or 0 for r in spec)
    busy = sum(r.latency or 0.0 for r in done)
    return {
        "requests": len(results),
        "completed": len(done),
        "output_tokens": out_tokens_of(done),
        "request_output_throughput": out_tokens_of(done) / busy if busy > 0 else None,
        "accept_length": out_tokens_of(spec) / verify if verify else None,
        "tpot_ms": distribution((t for t in (tpot(r) for r in done) if t is not None), 1000.0),
        "ttft_ms": distribution((r.ttft for r in done if r.ttft is not None), 1000.0),
        "completion_tokens": distribution(float(r.completion_tokens) for r in done),
    }


def by_source(results: Sequence[RequestResult]) -> dict[str, dict[str, Any]]:
    """source -> source_summary of its requests, sources in order of first appearance."""
    groups: dict[str, list[RequestResult]] = {}
    for r in results:
        groups.setdefault(r.source, []).append(r)
    return {source: source_summary(rs) for source, rs in groups.items()}


def out_tokens_of(results: Iterable[RequestResult]) -> int:
    return sum(r.completion_tokens for r in results)


# Figures aggregated across repetitions (median and MAD) and compared by the speed-up.
HEADLINE = {
    "output_throughput": ("output_throughput",),
    "request_throughput": ("request_throughput",),
    "total_token_throughput": ("total_token_throughput",),
    "ttft_median_ms": ("ttft_ms", "median"),
    "itl_median_ms": ("itl_ms", "median"),
    "tpot_median_ms": ("tpot_ms", "median"),
    "tpot_mean_ms": ("tpot_ms", "mean"),
    "e2e_median_ms": ("e2e_latency_ms", "median"),
    "accept_length": ("accept_length",),
    "concurrency_reached": ("concurrency_reached",),
}


def summary_value(summary: dict[str, Any], path: Sequence[str]) -> float | None:
    """The number at `path` (keys, one per level) of a summary; None where there is none."""
    v: Any = summary
    for k in path:
        v = v.get(k) if isinstance(v, dict) else None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def headline(summary: dict[str, Any]) -> dict[str, float | None]:
    return {name: summary_value(summary, path) for name, path in HEADLINE.items()}


def aggregate_repetitions(summaries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Median and MAD of the headline figures across repetitions of one point."""
    out: dict[str, Any] = {"repetitions": len(summaries)}
    out["failed"] = sum(s.get("failed", 0) for s in summaries)
    out["incomplete"] = sum(s.get("incomplete", 0) for s in summaries)
    # open-loop repetitions whose client fell behind (closed-loop summaries have no `valid`)
    out["invalid"] = sum(1 for s in summaries if s.get("valid") is False)
    heads = [headline(s) for s in summaries]
    for name in HEADLINE:
        vals = [v for v in (h[name] for h in heads) if v is not None]
        if vals:
            med, mad = median_mad(vals)
            out[f"{name}_median"], out[f"{name}_mad"] = med, mad
        else:
            out[f"{name}_median"] = out[f"{name}_mad"] = None
    return out
