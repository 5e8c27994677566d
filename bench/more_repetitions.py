"""More repetitions of a point while its server is up, as long as it may still be the best.

A search (sweep/model_search.py) ranks points by means of a few repetitions; at 5 % noise a mean
of three is off by about 3 %, more than the 2 % a winner must hold. Measuring a contender again
later costs a restart; adding repetitions now, on the server the point already runs, does not.
So the planner hands the bench a rule (`--more-repetitions JSON`, MoreRule) with what the search
knows so far: the best point's geometric mean and repetitions, and the pooled noise of every
point measured (log values: a sum of squares and its degrees of freedom). After the run's own
repetitions the bench adds as many again (new prompts: each repetition has its own seed) while
both hold:

- the point may still be the best: its mean is within z (2) sd of a difference from the best's,

      s * (mean log of this point) >= s * log(best) - z * sqrt(var / n + var / n_best)

  with s = 1 when higher is better (-1 for TPOT), n this point's repetitions so far and var the
  pooled variance of one repetition including this point's; or it is ahead of the best; or no
  point was measured before it (`best` null: it is the best so far);
- its repetitions are fewer than the noise needs to tell the tie margin (`margin`, 2 %):
  n < 2 * (z * sqrt(var) / margin) ** 2, the count at which the z-sd band of a difference of two
  such means is the margin: about 8 at 2 % noise; at 5 % about 50, so the cap stops it first.
  A single repetition shows no spread: then only the cap stops it.

It stops at `max_repetitions` (48) in any case: at 24 two contenders 2 to 3.4 % apart at 5 %
noise, both run to the cap, swapped on 9 of 600 generated surfaces (benchmarks/README.md, "The
answer's neighbours, and 48 repetitions"). Decided after each batch from the records on
disk (bench/objective.py run_values), and written to more.json beside them.

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
MAX_REPETITIONS = 48  # the default cap: sixteen times a sweep's usual three
MARGIN = 0.02  # the tie margin, the model search's default too (sweep/model_search.py)
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
    bar: float | None  # the mean it must reach (or, lower is better, not exceed); None: no best
    more: bool
    why: str


@dataclass(frozen=True)
class MoreRule:
    objective: str
    best: float | None  # the best point's geometric mean so far (its unit); None: none measured
    best_repetitions: int  # 0 with best None
    ss: float  # pooled over the points measured so far (pool)
    df: int
    max_repetitions: int = MAX_REPETITIONS
    slo_ttft_ms: float | None = None
    slo_tpot_ms: float | None = None
    z: float = Z
    margin: float = MARGIN

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
        if self.best is not None and (not number(self.best) or self.best <= 0):
            raise bad("best", "must be a positive number, or null (no point measured yet)")
        least = 0 if self.best is None else 1
        if not integer(self.best_repetitions) or self.best_repetitions < least:
            raise bad("best_repetitions", f"must be an integer >= {least}")
        if not number(self.ss) or self.ss < 0:
            raise bad("ss", "must be a number >= 0")
        if not integer(self.df) or self.df < 0:
            raise bad("df", "must be an integer >= 0")
        if not integer(self.max_repetitions) or self.max_repetitions < 1:
            raise bad("max_repetitions", "must be an integer >= 1")
        if not number(self.z) or self.z <= 0:
            raise bad("z", "must be a positive number")
        if not number(self.margin) or not 0 < self.margin < 1:
            raise bad("margin", "must be a fraction in (0, 1) (0.02: 2 %)")

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

    def needed(self, var: float) -> int:
        """The repetitions at which the z-sd band of a difference of two means of so many, at the
        variance `var` of one repetition (logs), is the tie margin."""
        return math.ceil(2.0 * (self.z * math.sqrt(var) / self.margin) ** 2)

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
        # no spread measured (a single repetition so far): the noise is unknown, only the cap
        # stops it
        geo, need = math.exp(mean), self.needed(var) if var > 0 else self.max_repetitions
        enough = f"{need} tell a difference of {self.margin:.0%} at this noise"
        if self.best is None:
            if n >= need:
                return Step(n, geo, None, False, f"the first point measured; {enough}: enough")
            if n >= self.max_repetitions:
                why = f"the first point measured; max_repetitions ({self.max_repetitions}) reached"
                return Step(n, geo, None, False, why)
            return Step(n, geo, None, True, "the first point measured (the best so far): more")
        sd = math.sqrt(var / n + var / self.best_repetitions)
        sign = 1.0 if HIGHER_IS_BETTER[self.objective] else -1.0
        bar_log = math.log(self.best) - sign * self.z * sd
        close = sign * mean >= sign * bar_log
        bar = math.exp(bar_log)
        if not close:
            why = f"behind the best ({self.best:.4g}) by more than {self.z:g} sd"
        elif n >= need:
            why = f"may be the best, but {enough}: enough"
        elif n >= self.max_repetitions:
            why = f"may be the best, but max_repetitions ({self.max_repetitions}) reached"
        else:
            why = f"within {self.z:g} sd of the best ({self.best:.4g}) or ahead: more"
        return Step(n, geo, bar, close and n < min(need, self.max_repetitions), why)

    def record(self, steps: Sequence[Step]) -> dict[str, Any]:
        """more.json: the rule and every decision."""
        return {"rule": asdict(self), "steps": [asdict(s) for s in steps]}
