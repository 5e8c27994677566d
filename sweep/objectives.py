"""What "best" means in a sweep report: one value per repetition of a bench cell.

- throughput: output tokens/s of the repetition (summary `output_throughput`); higher is better.
- tpot: median TPOT of the repetition in ms (summary `tpot_ms.median`); lower is better.
- goodput: requests/s that meet both SLOs, as DistServe and vLLM's `--goodput` define it:
  successful requests (`ok`) with TTFT <= slo_ttft_ms and TPOT <= slo_tpot_ms, divided by the
  repetition's measured duration (summary `duration_s`, the wall time of its measured requests).
  Per request, from `<cell-id>.requests.jsonl` (bench.metrics.RequestResult.to_dict): `ttft`
  and `tpot` in seconds; a successful request with fewer than 2 output tokens has no TPOT and
  meets the TPOT SLO (vLLM counts its TPOT as 0). Higher is better.

Since every objective gives one value per repetition, sweep.stats' interval and test apply to
each.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.capacity import Slo
from bench.records import load_requests
from sweep.stats import observations, summary_value

OBJECTIVES = ("throughput", "tpot", "goodput")
DEFAULT = "throughput"


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


@dataclass(frozen=True)
class Objective:
    name: str
    unit: str
    higher_is_better: bool
    slo_ttft_ms: float | None = None
    slo_tpot_ms: float | None = None

    def describe(self) -> str:
        better = "higher" if self.higher_is_better else "lower"
        if self.name == "throughput":
            what = "output throughput (output tokens/s)"
        elif self.name == "tpot":
            what = "TPOT p50 (ms, the repetition's median time per output token)"
        else:
            what = (
                f"goodput (successful requests/s with TTFT <= {self.slo_ttft_ms:g} ms and "
                f"TPOT <= {self.slo_tpot_ms:g} ms, over the measured duration)"
            )
        return f"{what}, {better} is better"

    def value(self, records_dir: Path, record: dict[str, Any]) -> float | None:
        """This objective for one repetition's record; None when it has no value."""
        summary = record["summary"]
        if self.name == "throughput":
            return summary_value(summary, ("output_throughput",))
        if self.name == "tpot":
            return summary_value(summary, ("tpot_ms", "median"))
        return self._goodput(records_dir, record)

    def _goodput(self, records_dir: Path, record: dict[str, Any]) -> float | None:
        assert self.slo_ttft_ms is not None and self.slo_tpot_ms is not None
        duration = summary_value(record["summary"], ("duration_s",))
        if duration is None or duration <= 0:
            return None
        try:
            requests = load_requests(records_dir, record["cell"]["cell_id"])
        except (OSError, ValueError):
            return None
        return goodput(requests, duration, self.slo_ttft_ms, self.slo_tpot_ms)

    def observations(
        self, records_dir: Path, records: list[dict[str, Any]]
    ) -> dict[str, list[float]]:
        """Per bench cell, the objective's value of each repetition."""
        return observations(records, lambda r: self.value(records_dir, r))

    def better(self, a: float, b: float) -> bool:
        return a > b if self.higher_is_better else a < b


def _check_slo(name: str, value: float | None) -> None:
    if value is None:
        return
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive number of milliseconds, got {value!r}")


def make(
    name: str = DEFAULT, slo_ttft_ms: float | None = None, slo_tpot_ms: float | None = None
) -> Objective:
    """The objective called `name`; ValueError for an unknown one, a non-positive SLO, or
    goodput without both SLOs. SLOs given with another objective are not used."""
    if name not in OBJECTIVES:
        raise ValueError(f"unknown objective {name!r}; choose one of {', '.join(OBJECTIVES)}")
    _check_slo("slo_ttft_ms", slo_ttft_ms)
    _check_slo("slo_tpot_ms", slo_tpot_ms)
    if name == "throughput":
        return Objective(name, "tok/s", True)
    if name == "tpot":
        return Objective(name, "ms", False)
    if slo_ttft_ms is None or slo_tpot_ms is None:
        raise ValueError(
            "objective 'goodput' needs both slo_ttft_ms and slo_tpot_ms, got "
            f"slo_ttft_ms={slo_ttft_ms!r}, slo_tpot_ms={slo_tpot_ms!r}"
        )
    return Objective(name, "req/s", True, float(slo_ttft_ms), float(slo_tpot_ms))
