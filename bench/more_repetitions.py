"""More repetitions of a point while its server is up, as long as it may still be the best.

A search (sweep/search/model_search.py) ranks points by means of a few repetitions; at 5 % noise a
mean of three is off by about 3 %, more than the 2 % a winner must hold. Measuring a contender again
later costs a restart; adding repetitions now, on the server the point already runs, does not.
So the planner hands the bench a rule (`--more-repetitions JSON`, MoreRule) with what the search
knows so far: the best point's geometric mean and repetitions, and the pooled noise of every
point measured (log values: a sum of squares and its degrees of freedom). After the run's own
repetitions the bench adds as many again (new prompts: each repetition has its own seed) while
both hold:

- the point can still change the answer: it may beat the best by more than the tie margin
  (`margin`, 2 %), its mean + z (2) sd of a difference from the best's above the best's by more
  than the margin,

      s * (mean log of this point - log(best)) + z * sqrt(var / n + var / n_best) > log(1 + margin)

  with s = 1 when higher is better (-1 for TPOT), n this point's repetitions so far and var the
  pooled variance of one repetition including this point's; or no point was measured before it
  (`best` null: it is the best so far). Behind the best, a point that cannot beat it by more
  than the margin cannot change the answer (within the margin); ahead of it or level, a point
  whose band reaches no further than the margin is a tie with it within the margin, which more
  repetitions cannot move out (the tie is called: either answer is within the margin of the
  other). Without a spread measured (var 0) the bar is the best itself: only a point ahead goes
  on;
- its repetitions are fewer than the noise needs to tell the tie margin: n < 2 * (z *
  sqrt(var) / margin) ** 2, the count at which the z-sd band of a difference of two such means is
  the margin: about 8 at 2 % noise; at 5 % about 50, so the cap stops it first. A single
  repetition shows no spread: then only the cap stops it.

It stops at `max_repetitions` (32) in any case. Decided after each batch from the records on
disk (bench/objective.py run_values), and written to more.json beside them.

Before the run's own repetitions are all done, MoreRule.first says whether the FIRST one
already puts the point clearly out, the run to stop there (no more repetitions on that server):

      s * log(value) < s * log(best) + log(1 - margin) - out_z * sqrt(var * (1 + 1 / n_best))

with var the pooled variance of one repetition of the points measured before (ss / df), only
with at least `out_df` (6) degrees of freedom in it (never for the first points measured, never
while the noise is unknown), out_z 4: a value more than 4 sd of the difference of one
repetition and the best's mean beyond the margin below the best. At 2 % noise and a best of 9
repetitions that is about 10 % below the best; at 5 % and a best of 32, about 20 %. The bench's
runner asks it once the first repetition's cells are recorded, before the second's (bench/runner.py
run_benchmark); a point clearly out keeps its one repetition, and the decision goes to more.json.
benchmarks/surfaces_measure.py adaptive() (search_surfaces.py's) applies the same rule.

Why these figures: benchmarks/search_surfaces.py (benchmarks/README.md, "More repetitions" and
"An edge, two more families and the time", 2026-12-05: up to 48 repetitions and the old bar
(within 2 sd of the best, or ahead) cost a median of 65 to 89 % of the full grid's time at 5 %
noise on seed 1; with the bar above, the first repetition's stop and the cap at 32, 47 to 59 %
(the edge 69 %), the answers as good, and 47 to 78 % over seeds 1 to 5; at 24 and 12 two peaks,
the narrow peaks and the edge lost answers at 5 % noise).
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
OUT_Z = 4.0  # the first repetition is clearly out this many sd below the margin under the best
OUT_DF = 6  # ... judged only with this many degrees of freedom of pooled noise, or more
MAX_REPETITIONS = 32  # the default cap: about ten times a sweep's usual three
MARGIN = 0.02  # the tie margin, the model search's default too (sweep/search/model_search.py)
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
    out_z: float = OUT_Z
    out_df: int = OUT_DF

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
        if not number(self.out_z) or self.out_z <= 0:
            raise bad("out_z", "must be a positive number")
        if not integer(self.out_df) or self.out_df < 1:
            raise bad("out_df", "must be an integer >= 1")

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
        gap = sign * (mean - math.log(self.best))  # > 0: ahead of the best
        # the point may beat the best by more than the margin (gap + z sd above it); without
        # a spread measured, while it is ahead
        slack = math.log1p(self.margin) if var > 0 else 0.0
        bar_log = math.log(self.best) + sign * (slack - self.z * sd)
        close = gap + self.z * sd > slack
        bar = math.exp(bar_log)
        if not close and gap + self.z * sd < 0:
            why = f"behind the best ({self.best:.4g}) by more than {self.z:g} sd"
        elif not close and gap < 0:
            why = (
                f"cannot beat the best ({self.best:.4g}) by more than {self.margin:.0%} "
                f"(at {self.z:g} sd): it cannot change the answer"
            )
        elif not close:
            why = (
                f"a tie with the best ({self.best:.4g}) within {self.margin:.0%} (at {self.z:g} "
                "sd): more repetitions cannot move it out"
            )
        elif n >= need:
            why = f"may beat the best by more than {self.margin:.0%}, but {enough}: enough"
        elif n >= self.max_repetitions:
            why = (
                f"may beat the best by more than {self.margin:.0%}, but max_repetitions "
                f"({self.max_repetitions}) reached"
            )
        else:
            why = (
                f"may beat the best ({self.best:.4g}) by more than {self.margin:.0%} (at "
                f"{self.z:g} sd): more"
            )
        return Step(n, geo, bar, close and n < min(need, self.max_repetitions), why)

    def first(self, values: Sequence[float]) -> Step:
        """After the run's FIRST repetition (`values`: its value; more are ignored): whether the
        bench goes on with its own repetitions (more) or stops there, the point clearly out: its
        value below the best's geometric mean less the margin by more than `out_z` sd of the
        difference of one repetition and the best's mean,

            s * log(value) < s * log(best) + log(1 - margin) - out_z * sqrt(var * (1 + 1 / n_best))

        with var the pooled variance of one repetition (logs) of the points measured before. Only
        with a best and at least `out_df` degrees of freedom in that noise (never for the first
        points measured, never while the noise is unknown); a value at or below 0 is not judged."""
        if not values or values[0] <= 0:
            return Step(
                len(values[:1]), 0.0, self.best, True, "no value to judge: the bench goes on"
            )
        x = math.log(values[0])
        geo = values[0]
        if self.best is None:
            return Step(1, geo, None, True, "the first point measured: the bench goes on")
        if self.df < self.out_df:
            why = (
                f"the noise is not known well enough ({self.df} degrees of freedom, "
                f"{self.out_df} needed): the bench goes on"
            )
            return Step(1, geo, None, True, why)
        var = self.ss / self.df
        sign = 1.0 if HIGHER_IS_BETTER[self.objective] else -1.0
        sd = math.sqrt(var * (1.0 + 1.0 / self.best_repetitions))
        bar_log = math.log(self.best) + sign * (math.log1p(-self.margin) - self.out_z * sd)
        bar = math.exp(bar_log)
        if sign * x < sign * bar_log:
            why = (
                f"clearly out: its first repetition ({geo:.4g}) is more than {self.out_z:g} sd "
                f"beyond {self.margin:.0%} behind the best ({self.best:.4g}): no more"
            )
            return Step(1, geo, bar, False, why)
        return Step(1, geo, bar, True, "not clearly out after one repetition: the bench goes on")

    def record(self, steps: Sequence[Step]) -> dict[str, Any]:
        """more.json: the rule and every decision."""
        return {"rule": asdict(self), "steps": [asdict(s) for s in steps]}
