"""What "best" means, one value per repetition: of a bench cell, and of a whole run.

The definitions live here, in the host's package, because the bench itself uses them to decide
whether a point needs more repetitions (bench/more_repetitions.py); the controller's report and
searches read them through sweep/config/objectives.py.

- throughput: output tokens/s of the repetition (summary `output_throughput`); higher is better.
- tpot: median TPOT of the repetition in ms (summary `tpot_ms.median`); lower is better.
- goodput: requests/s that meet both SLOs, as DistServe and vLLM's `--goodput` define it:
  successful requests (`ok`) with TTFT <= slo_ttft_ms and TPOT <= slo_tpot_ms, divided by the
  repetition's measured duration (summary `duration_s`, the wall time of its measured requests).
  Per request, from `<cell-id>.requests.jsonl` (bench.metrics.RequestResult.to_dict): `ttft`
  and `tpot` in seconds; a successful request with fewer than 2 output tokens has no TPOT and
  meets the TPOT SLO (vLLM counts its TPOT as 0). Higher is better.
- A run's value for repetition i: the geometric mean of the objective over the run's cells
  (scale-free across concurrencies and contexts; 0 when a cell's value is 0).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from bench.capacity import Slo
from bench.metrics import summary_value
from bench.records import load_requests

HIGHER_IS_BETTER = {"throughput": True, "tpot": False, "goodput": True}
OBJECTIVES = tuple(HIGHER_IS_BETTER)
DEFAULT = "throughput"


def observations(
    records: Sequence[dict[str, Any]], value: Callable[[dict[str, Any]], float | None]
) -> dict[str, list[float]]:
    """Per bench cell (its `point_id`: context x concurrency x output length x category), the
    value of each repetition's record, in repetition order; records without a value are left
    out."""
    out: dict[str, list[tuple[int, float]]] = {}
    for r in records:
        v = value(r)
        if v is not None:
            cell = r["cell"]
            out.setdefault(cell["point_id"], []).append((int(cell.get("repetition") or 0), v))
    return {k: [v for _, v in sorted(vs)] for k, vs in out.items()}


def meets_slo(request: dict[str, Any], slo_ttft_ms: float, slo_tpot_ms: float) -> bool:
    """Whether one request of a requests.jsonl is good (the bench's rule, bench/capacity.py)."""
    return Slo(slo_ttft_ms, slo_tpot_ms).good(request)


def goodput(
    requests: Iterable[dict[str, Any]], duration_s: float, slo_ttft_ms: float, slo_tpot_ms: float
) -> float:
    """Good requests per second of `duration_s`."""
    if duration_s <= 0:
        raise ValueError(f"goodput needs a positive duration, got {duration_s}")
    return sum(1 for r in requests if meets_slo(r, slo_ttft_ms, slo_tpot_ms)) / duration_s


def value(
    name: str,
    records_dir: Path,
    record: dict[str, Any],
    slo_ttft_ms: float | None = None,
    slo_tpot_ms: float | None = None,
) -> float | None:
    """Objective `name` of one repetition's record; None when it has no value."""
    summary = record["summary"]
    if name == "throughput":
        return summary_value(summary, ("output_throughput",))
    if name == "tpot":
        return summary_value(summary, ("tpot_ms", "median"))
    if name != "goodput" or slo_ttft_ms is None or slo_tpot_ms is None:
        raise ValueError(f"objective {name!r} (goodput needs both SLOs)")
    duration = summary_value(summary, ("duration_s",))
    if duration is None or duration <= 0:
        return None
    try:
        requests = load_requests(records_dir, record["cell"]["cell_id"])
    except (OSError, ValueError):
        return None
    return goodput(requests, duration, slo_ttft_ms, slo_tpot_ms)


def run_values(
    name: str,
    records_dir: Path,
    records: Sequence[dict[str, Any]],
    slo_ttft_ms: float | None = None,
    slo_tpot_ms: float | None = None,
) -> tuple[float, ...]:
    """One value per repetition present in every cell: the geometric mean of the objective over
    the run's cells (0 when a cell's value is 0); () when the records give none."""
    per_cell = observations(
        records, lambda r: value(name, records_dir, r, slo_ttft_ms, slo_tpot_ms)
    )
    if not per_cell:
        return ()
    out = []
    for i in range(min(len(v) for v in per_cell.values())):
        values = [vs[i] for vs in per_cell.values()]
        if min(values) <= 0:
            out.append(0.0)
        else:
            out.append(math.exp(statistics.fmean(math.log(v) for v in values)))
    return tuple(out)
