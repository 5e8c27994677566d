"""Capacity at a latency SLO: the highest open-loop request rate one running server sustains.

The SLO is goodput's, as DistServe and vLLM's `--goodput` define it: a request is good when it
succeeded and meets every latency target given (TTFT, TPOT); a rate meets the SLO when at
least `share` of its requests are good (default 0.9, DistServe's attainment target). Failed
requests are never good.

The search, on the server already running (no restart): the first trial at `start_rate`; while
trials meet the SLO the rate doubles, while they miss it halves, until one rate meets it and
another does not (the bracket); then geometric midpoints until the bracket's upper end is at
most `precision` above its lower end. The figure is the bracket's lower end.

A trial the client could not keep to its schedule (the cell is invalid: it measured the client)
bounds nothing about the server. It is measured once more at the same rate (the search's next
repetition of that cell): a client stalled for a moment (another process took the CPU for a few
hundred ms: at 19 req/s three sends late make p99 of a 10 s trial) keeps to its schedule the
second time, and that trial's verdict stands. Invalid twice, the rate becomes a ceiling and the
search goes on below it (the geometric midpoint of the highest rate met and the ceiling), where
the client keeps up. On a host whose CPUs the server saturates, the client falls behind exactly
where the server is overloaded (the real server on 2 cores: p99 send lag 109 ms at 16 req/s,
TPOT 654 ms). Without the second measurement, one stall made a permanent ceiling: the timing
test's DDTREE 64 search (capacity 17.1 req/s) ended "not bracketed" with a ceiling within 5 %
of the highest rate met.

Trials and time are bounded (`max_trials`, `max_seconds`); a search cut by a bound, by the
ceiling coming within `precision` of the highest rate met, or by `min_rate` with the SLO still
missed, is reported unsettled with whatever bracket it has.

Trials are ordinary open-loop cells (their own cell ids and records, all kept): a rerun replays
the search from the recorded trials and measures only what is missing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from bench.errors import BadArguments

CAPACITY_FILE = "capacity.json"  # beside the cell records: every search's result and trials
DEFAULT_SHARE = 0.9
DEFAULT_PRECISION = 0.05
DEFAULT_MAX_TRIALS = 12
DEFAULT_MIN_RATE = 0.01


@dataclass(frozen=True)
class Slo:
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    share: float = DEFAULT_SHARE

    def __post_init__(self) -> None:
        if self.ttft_ms is None and self.tpot_ms is None:
            raise BadArguments(
                "a capacity search needs an SLO: --slo-ttft-ms, --slo-tpot-ms or both"
            )
        for name, value in (("--slo-ttft-ms", self.ttft_ms), ("--slo-tpot-ms", self.tpot_ms)):
            if value is not None and not (math.isfinite(value) and value > 0):
                raise BadArguments(f"{name} must be a positive number, got {value}")
        if not 0 < self.share <= 1:
            raise BadArguments(f"--slo-share must be in (0, 1], got {self.share}")

    def good(self, request: dict[str, Any]) -> bool:
        """One recorded request (bench/records: seconds) against the targets (milliseconds):
        successful, with a TTFT, and within every target given. A TPOT is missing only from an
        answer of under two tokens, which has none to miss."""
        ttft, tpot = request.get("ttft"), request.get("tpot")
        if request.get("ok") is not True or not isinstance(ttft, (int, float)):
            return False
        if self.ttft_ms is not None and ttft * 1000.0 > self.ttft_ms:
            return False
        if self.tpot_ms is None:
            return True
        if tpot is None:
            return int(request.get("completion_tokens") or 0) < 2
        return isinstance(tpot, (int, float)) and tpot * 1000.0 <= self.tpot_ms

    def attainment(self, requests: Iterable[dict[str, Any]]) -> float:
        rows = list(requests)
        return sum(self.good(r) for r in rows) / len(rows) if rows else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"ttft_ms": self.ttft_ms, "tpot_ms": self.tpot_ms, "share": self.share}


@dataclass(frozen=True)
class Trial:
    rate: float
    cell_id: str
    attainment: float
    met: bool
    valid: bool = True


@dataclass
class Search:
    """The bracket-and-bisect state machine: `next_rate()` until None, `add()` each trial."""

    start_rate: float = 1.0
    precision: float = DEFAULT_PRECISION
    max_trials: int = DEFAULT_MAX_TRIALS
    min_rate: float = DEFAULT_MIN_RATE
    trials: list[Trial] = field(default_factory=list)
    stopped: str | None = None  # why it ended before settling

    def __post_init__(self) -> None:
        for name, value in (
            ("--capacity-start-rate", self.start_rate),
            ("--capacity-precision", self.precision),
            ("--capacity-min-rate", self.min_rate),
        ):
            if not (math.isfinite(value) and value > 0):
                raise BadArguments(f"{name} must be a positive number, got {value}")
        if self.max_trials < 2:
            raise BadArguments(
                f"--capacity-max-trials {self.max_trials} cannot bracket a capacity: a bracket "
                "needs a rate that meets the SLO and one that misses it (2 trials at least)"
            )

    @property
    def low(self) -> float | None:
        """The highest rate measured that meets the SLO."""
        met = [t.rate for t in self.trials if t.valid and t.met]
        return max(met) if met else None

    @property
    def high(self) -> float | None:
        """The lowest rate measured that misses it (an invalid trial measured the client: it
        bounds nothing)."""
        missed = [t.rate for t in self.trials if t.valid and not t.met]
        return min(missed) if missed else None

    @property
    def ceiling(self) -> Trial | None:
        """The lowest-rate trial the client fell behind in, with no valid trial at its rate: no
        rate above it is tried (once measured twice)."""
        measured = {t.rate for t in self.trials if t.valid}
        invalid = [t for t in self.trials if not t.valid and t.rate not in measured]
        return min(invalid, key=lambda t: t.rate) if invalid else None

    def attempts(self, rate: float) -> int:
        """Trials so far at exactly this rate (a retry repeats the rate it was given)."""
        return sum(t.rate == rate for t in self.trials)

    @property
    def settled(self) -> bool:
        lo, hi = self.low, self.high
        return lo is not None and hi is not None and lo < hi <= lo * (1.0 + self.precision)

    def add(self, trial: Trial) -> None:
        self.trials.append(trial)

    def next_rate(self) -> float | None:
        if self.stopped or self.settled:
            return None
        if len(self.trials) >= self.max_trials:
            self.stopped = f"stopped at the bound of {self.max_trials} trials"
            return None
        if not self.trials:
            return self.start_rate
        lo, hi, cap = self.low, self.high, self.ceiling
        if cap is not None and (hi is None or cap.rate < hi):
            if self.attempts(cap.rate) < 2:
                return cap.rate
            return self._below_ceiling(lo, cap)
        if hi is None:
            assert lo is not None
            return lo * 2.0
        if lo is None:
            if hi / 2.0 < self.min_rate:
                self.stopped = (
                    f"even {hi:g} req/s misses the SLO and the next halving is below "
                    f"--capacity-min-rate {self.min_rate:g}"
                )
                return None
            return hi / 2.0
        if hi < lo:
            self.stopped = (
                f"{hi:g} req/s missed the SLO but {lo:g} req/s met it: the share sits within the"
                " noise of this workload (more requests per trial: --open-loop-seconds)"
            )
            return None
        return math.sqrt(lo * hi)

    def _below_ceiling(self, lo: float | None, cap: Trial) -> float | None:
        """The next rate when the client fell behind below any rate the server missed at."""
        behind = (
            f"the client fell behind its schedule at {cap.rate:g} req/s ({cap.cell_id}): "
            "that trial measured the client, not the server"
        )
        if lo is None:
            if cap.rate / 2.0 < self.min_rate:
                self.stopped = f"{behind}, and the next halving is below --capacity-min-rate"
                return None
            return cap.rate / 2.0
        if cap.rate <= lo * (1.0 + self.precision):
            self.stopped = (
                f"{behind}; the server met the SLO at {lo:g} req/s, within "
                f"{self.precision:.0%} of it: the capacity is at least {lo:g} req/s, not bracketed"
            )
            return None
        return math.sqrt(lo * cap.rate)

    def result(self) -> dict[str, Any]:
        lo, hi = self.low, self.high
        return {
            "capacity": lo if self.settled else None,
            "bracket": [lo, hi],
            "settled": self.settled,
            "reason": (
                f"bracket [{lo:g}, {hi:g}] req/s is within {self.precision:.0%}"
                if self.settled and lo is not None and hi is not None
                else self.stopped or "not finished"
            ),
            "trials": [t.__dict__ for t in self.trials],
        }
