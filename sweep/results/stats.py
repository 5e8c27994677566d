"""Statistics across repetitions: confidence intervals and the winner-or-tie test.

Each repetition of a bench cell is one observation (its record's summary gives one value per
metric). For n >= 2 observations the interval is Student's t interval of the mean:

    mean ± t(0.975, n-1) · s / √n        (s: sample standard deviation, n-1 in the denominator)

With n < 2 there is no interval (None). Two points are compared by a two-sided t-test at 5%:
paired by repetition when the repetitions pair up, Welch's otherwise (unequal variances; degrees
of freedom by Welch-Satterthwaite); with n < 2 on either side the difference cannot be told from
noise and is reported as not significant.

With no spread at all (every repetition equal on both sides, or the same paired difference in
every repetition) the difference is significant exactly when it is not zero (p 0, else 1).

The tests are scipy's (`scipy.stats.ttest_rel`; `ttest_ind` with `equal_var=False`), with their
own intervals of the difference; the t distribution's quantiles and tails are scipy's too
(`scipy.special.stdtrit` and `stdtr`, what `scipy.stats.t` computes them with, without its
per-call overhead), so fractional Welch degrees of freedom work. scipy is a controller dependency
only (requirements/controller.lock): bench/, which runs on the GPU hosts, never imports it. It is
imported on first use, so a command that computes no interval or test does not load it.
"""

from __future__ import annotations

import math
import statistics
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bench.metrics import summary_value
from bench.objective import observations

LEVEL = 0.95
ALPHA = 0.05
CI_METHOD = (
    "95% confidence interval of the mean across repetitions: Student t, "
    "mean ± t(0.975, n-1)·s/√n (no interval with n=1)"
)
TEST_METHOD = (
    "two-sided t-test at 5% of best vs runner-up, paired by repetition (repetition i of every "
    "point sends the same prompts, so their own spread cancels); Welch's (Welch-Satterthwaite "
    "degrees of freedom) when the repetitions do not pair up; not significant, or n=1: a tie"
)

# Summary metrics with an interval in the report: column name -> path in a record's summary.
SUMMARY_METRICS: dict[str, tuple[str, ...]] = {
    "output_throughput": ("output_throughput",),
    "tpot_p50_ms": ("tpot_ms", "median"),
    "ttft_p50_ms": ("ttft_ms", "median"),
}


# scipy's warning for a side whose repetitions are all equal (its variance is then exactly 0)
_CONSTANT_SIDE = "Precision loss occurred in moment calculation"


def _check_df(df: float) -> None:
    if not df > 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with `df` (possibly fractional, or infinite) degrees of
    freedom."""
    from scipy.special import stdtrit

    if not 0.0 < p < 1.0:
        raise ValueError(f"quantile needs 0 < p < 1, got {p}")
    _check_df(df)
    return float(stdtrit(df, p))


@dataclass(frozen=True)
class Estimate:
    """One metric of one cell across its repetitions; the interval is None with n < 2."""

    n: int
    mean: float
    median: float
    sd: float | None
    ci_low: float | None
    ci_high: float | None


def estimate(values: Sequence[float], level: float = LEVEL) -> Estimate | None:
    """Mean, median and the t interval of the mean of `values`; None when there are none."""
    if not values:
        return None
    n, mean = len(values), statistics.fmean(values)
    if n < 2:
        return Estimate(n, mean, mean, None, None, None)
    sd = statistics.stdev(values)
    half = t_quantile(0.5 + level / 2.0, n - 1) * sd / math.sqrt(n)
    return Estimate(n, mean, float(statistics.median(values)), sd, mean - half, mean + half)


@dataclass(frozen=True)
class Comparison:
    """a - b by a t-test (welch, paired). Without a test (n < 2) only `difference` is set."""

    difference: float
    ci_low: float | None
    ci_high: float | None
    df: float | None
    p_value: float | None
    significant: bool


def welch(a: Sequence[float], b: Sequence[float], alpha: float = ALPHA) -> Comparison:
    """Welch's two-sided t-test of mean(a) - mean(b), and the (1-alpha) interval of it."""
    if not a or not b:
        raise ValueError("welch needs observations on both sides")
    diff = statistics.fmean(a) - statistics.fmean(b)
    if len(a) < 2 or len(b) < 2:
        return Comparison(diff, None, None, None, None, False)
    from scipy.stats import ttest_ind

    if statistics.variance(a) == 0.0 and statistics.variance(b) == 0.0:
        # no spread at all on either side: any difference is real
        return Comparison(diff, diff, diff, None, 0.0 if diff else 1.0, diff != 0.0)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", _CONSTANT_SIDE, RuntimeWarning)
        test = ttest_ind(a, b, equal_var=False)
    ci = test.confidence_interval(confidence_level=1.0 - alpha)
    p = float(test.pvalue)
    return Comparison(diff, float(ci.low), float(ci.high), float(test.df), p, p < alpha)


def paired(a: Sequence[float], b: Sequence[float], alpha: float = ALPHA) -> Comparison:
    """Two-sided t-test of the mean of a[i] - b[i] (n - 1 degrees of freedom), and its (1-alpha)
    interval: for repetitions that measured the same workload on both sides."""
    if not a or len(a) != len(b):
        raise ValueError(f"paired needs two equally long, non-empty samples: {len(a)}, {len(b)}")
    d = [x - y for x, y in zip(a, b, strict=True)]
    diff = statistics.fmean(d)
    if len(d) < 2:
        return Comparison(diff, None, None, None, None, False)
    from scipy.stats import ttest_rel

    if statistics.stdev(d) == 0.0:  # the same difference in every repetition: it is real
        return Comparison(diff, diff, diff, None, 0.0 if diff else 1.0, diff != 0.0)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", _CONSTANT_SIDE, RuntimeWarning)
        test = ttest_rel(a, b)
    ci = test.confidence_interval(confidence_level=1.0 - alpha)
    p = float(test.pvalue)
    return Comparison(diff, float(ci.low), float(ci.high), float(test.df), p, p < alpha)


def compare_repetitions(
    a: Sequence[float], b: Sequence[float], pairs: bool, alpha: float = ALPHA
) -> Comparison:
    """`paired` when the repetitions pair up (`pairs`: every repetition of both sides present,
    as many on each), else `welch`."""
    if pairs and len(a) == len(b):
        return paired(a, b, alpha)
    return welch(a, b, alpha)


@dataclass(frozen=True)
class Ratio:
    """num / den of two means with an approximate interval (None when either side has n < 2)."""

    value: float
    ci_low: float | None
    ci_high: float | None


def ratio(num: Estimate, den: Estimate, level: float = LEVEL) -> Ratio | None:
    """mean(num) / mean(den), interval by the delta method for independent samples:
    relative variance r² = s_num²/(n_num·mean_num²) + s_den²/(n_den·mean_den²), interval
    value · (1 ± t·r), t with Welch-Satterthwaite degrees of freedom of the two terms."""
    if den.mean == 0.0:
        return None
    value = num.mean / den.mean
    if num.sd is None or den.sd is None or num.mean == 0.0:
        return Ratio(value, None, None)
    a = (num.sd / num.mean) ** 2 / num.n
    b = (den.sd / den.mean) ** 2 / den.n
    if a + b == 0.0:
        return Ratio(value, value, value)
    df = (a + b) ** 2 / (a**2 / (num.n - 1) + b**2 / (den.n - 1))
    half = abs(value) * t_quantile(0.5 + level / 2.0, df) * math.sqrt(a + b)
    return Ratio(value, value - half, value + half)


def _summary_metric(path: Sequence[str]) -> Callable[[dict[str, Any]], float | None]:
    return lambda record: summary_value(record["summary"], path)


def cell_estimates(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, Estimate]]:
    """Per bench cell: an Estimate of each SUMMARY_METRICS metric that has values."""
    out: dict[str, dict[str, Estimate]] = {}
    for name, path in SUMMARY_METRICS.items():
        obs = observations(records, _summary_metric(path))
        for cell, values in obs.items():
            est = estimate(values)
            if est is not None:
                out.setdefault(cell, {})[name] = est
    return out
