"""More repetitions of a point while its server is up, as long as it may still be the best.

A search (sweep/model_search.py) ranks points by means of a few repetitions; at 5 % noise a mean
of three is off by about 3 %, more than the 2 % a winner must hold. Measuring a contender again
later costs a restart; adding repetitions now, on the server the point already runs, does not.
So the planner hands the bench a rule (`--more-repetitions JSON`, MoreRule) with what the search
knows so far: the best point's geometric mean and repetitions, and the pooled noise of every
point measured (log values: a sum of squares and its degrees of freedom). After the run's own
repetitions the bench adds as many again (new prompts: each repetition has its own seed) while

    s * (mean log of this point) >= s * log(best) - z * sqrt(var / n + var / n_best)

with s = 1 when higher is better (-1 for TPOT), n this point's repetitions so far and var the
pooled variance of one repetition including this point's: its mean is within z (2) sd of a
difference from the best's, so it may still be the best. A point measured ahead of the best goes
on too. It stops at `max_repetitions`. Decided after each batch from the records on disk
(bench/objective.py run_values), and written to more.json beside them.

Why these figures: benchmarks/search_surfaces.py (benchmarks/README.md, "More repetitions").
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from bench.errors import BadArguments
from bench.objective import HIGHER_IS_BETTER

Z = 2.0
MAX_REPETITIONS = 12  # the default cap: four times a sweep's usual three
MORE_FILE = "more.json"


def pool(runs: Iterable[Sequence[float]]) -> tuple[float, int]:
    """The sum of squares of log values around each run's mean, and its degrees of freedom, over
    the runs with two or more positive values."""
    ss, df = 0.0, 0
    for values in runs:
        logs = [math.log(v) for v in values if v > 0]
        if len(logs) >= 2 and len(logs) == len(values):
            m = math.fsum(logs) / len(logs)
            ss += math.fsum((x - m) ** 2 for x in logs)
            df += len(logs) - 1
    return ss, df


@dataclass(frozen=True)
class Step:
    """One decision: after `repetitions`, this point's mean log against the bar; `more`."""

    repetitions: int
    mean: float  # the geometric mean of the run's values so far
    bar: float  # the mean it must reach (or, lower is better, not exceed) to go on
    more: bool
    why: str


@dataclass(frozen=True)
class MoreRule:
    objective: str
    best: float  # the best point's geometric mean so far (the objective's unit)
    best_repetitions: int
    ss: float  # pooled over the points measured so far (pool)
    df: int
    max_repetitions: int = MAX_REPETITIONS
    slo_ttft_ms: float | None = None
    slo_tpot_ms: float | None = None
    z: float = Z

    def __post_init__(self) -> None:
        def bad(field: str, why: str) -> BadArguments:
            value = getattr(self, field)
            return BadArguments(f"--more-repetitions: {field}={value!r}: {why}")

        def number(v: Any) -> bool:
            return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

        def integer(v: Any) -> bool:
            return isinstance(v, int) and not isinstance(v, bool)

        if self.objective not in HIGHER_IS_BETTER:
            raise bad("objective", f"not one of {', '.join(HIGHER_IS_BETTER)}")
        slos = (self.slo_ttft_ms, self.slo_tpot_ms)
        if self.objective == "goodput" and not all(
            v is not None and number(v) and v > 0 for v in slos
        ):
            raise bad("slo_ttft_ms", "goodput needs both SLOs, positive (slo_ttft_ms, slo_tpot_ms)")
        if not number(self.best) or self.best <= 0:
            raise bad("best", "must be a positive number")
        if not integer(self.best_repetitions) or self.best_repetitions < 1:
            raise bad("best_repetitions", "must be an integer >= 1")
        if not number(self.ss) or self.ss < 0:
            raise bad("ss", "must be a number >= 0")
        if not integer(self.df) or self.df < 0:
            raise bad("df", "must be an integer >= 0")
        if not integer(self.max_repetitions) or self.max_repetitions < 1:
            raise bad("max_repetitions", "must be an integer >= 1")
        if not number(self.z) or self.z <= 0:
            raise bad("z", "must be a positive number")

    @classmethod
    def from_json(cls, text: str) -> MoreRule:
        try:
            raw = json.loads(text)
        except ValueError as e:
            raise BadArguments(f"--more-repetitions: not JSON ({e}): {text!r}") from None
        if not isinstance(raw, dict):
            raise BadArguments(f"--more-repetitions: not a JSON object: {text!r}")
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(raw) - known)
        if unknown:
            raise BadArguments(f"--more-repetitions: unknown field(s) {', '.join(unknown)}")
        missing = sorted({"objective", "best", "best_repetitions", "ss", "df"} - set(raw))
        if missing:
            raise BadArguments(f"--more-repetitions: missing field(s) {', '.join(missing)}")
        return cls(**raw)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    def step(self, values: Sequence[float]) -> Step:
        """Whether the point whose run gave `values` (one a repetition) gets more."""
        n = len(values)
        if n == 0 or min(values) <= 0:
            return Step(n, 0.0, self.best, False, "no value to compare (a cell without any)")
        logs = [math.log(v) for v in values]
        mean = math.fsum(logs) / n
        ss, df = pool([values])
        ss, df = ss + self.ss, df + self.df
        var = ss / df if df else 0.0
        sd = math.sqrt(var / n + var / self.best_repetitions)
        sign = 1.0 if HIGHER_IS_BETTER[self.objective] else -1.0
        bar_log = math.log(self.best) - sign * self.z * sd
        close = sign * mean >= sign * bar_log
        geo, bar = math.exp(mean), math.exp(bar_log)
        if not close:
            why = f"behind the best ({self.best:.4g}) by more than {self.z:g} sd"
        elif n >= self.max_repetitions:
            why = f"may be the best, but max_repetitions ({self.max_repetitions}) reached"
        else:
            why = f"within {self.z:g} sd of the best ({self.best:.4g}) or ahead: more"
        return Step(n, geo, bar, close and n < self.max_repetitions, why)

    def record(self, steps: Sequence[Step]) -> dict[str, Any]:
        """more.json: the rule and every decision."""
        return {"rule": asdict(self), "steps": [asdict(s) for s in steps]}
