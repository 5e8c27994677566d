"""What "best" means in a sweep report: one value per repetition of a bench cell, by the
definitions of bench/objective.py (the host's package: the bench decides from them whether a point
needs more repetitions, bench/more_repetitions.py). This module adds what the controller needs
around them: the checked settings, the description, the direction.

Since every objective gives one value per repetition, sweep.results.stats' interval and test apply
to each.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import objective as definitions
from bench.objective import (
    DEFAULT,
    HIGHER_IS_BETTER,
    OBJECTIVES,
    goodput,
    meets_slo,
    observations,
)

__all__ = ["DEFAULT", "OBJECTIVES", "Objective", "goodput", "make", "meets_slo"]


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
        return definitions.value(self.name, records_dir, record, self.slo_ttft_ms, self.slo_tpot_ms)

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
        return Objective(name, "tok/s", HIGHER_IS_BETTER[name])
    if name == "tpot":
        return Objective(name, "ms", HIGHER_IS_BETTER[name])
    if slo_ttft_ms is None or slo_tpot_ms is None:
        raise ValueError(
            "objective 'goodput' needs both slo_ttft_ms and slo_tpot_ms, got "
            f"slo_ttft_ms={slo_ttft_ms!r}, slo_tpot_ms={slo_tpot_ms!r}"
        )
    return Objective(name, "req/s", HIGHER_IS_BETTER[name], float(slo_ttft_ms), float(slo_tpot_ms))
