"""sweep.results.stats: Student t quantiles (scipy's), t intervals, the paired and Welch's tests,
ratio intervals; scipy stays on the controller."""

from __future__ import annotations

import ast
import math
import subprocess
import sys
from pathlib import Path

import pytest

from bench.objective import observations
from sweep.results.stats import (
    cell_estimates,
    estimate,
    ratio,
    t_quantile,
    welch,
)

# t(0.975, df) as printed in statistics tables (3 decimals)
T975 = {
    1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
    10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110,
    18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060,
    26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042, 60: 2.000, 120: 1.980,
}  # fmt: skip


@pytest.mark.parametrize("df, expected", [(2, 4.303), (5, 2.571), (30, 2.042)])
def test_t_quantiles_match_known_values(df: int, expected: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=5e-4)


def test_t_quantiles_match_the_table_for_every_df() -> None:
    got = {df: round(t_quantile(0.975, df), 3) for df in T975}
    assert got == T975


def test_t_quantile_other_levels_and_limits() -> None:
    assert t_quantile(0.995, 10) == pytest.approx(3.169, abs=5e-4)
    assert t_quantile(0.95, 1) == pytest.approx(6.314, abs=5e-4)
    assert t_quantile(0.025, 5) == pytest.approx(-2.571, abs=5e-4)
    assert t_quantile(0.5, 7) == pytest.approx(0.0, abs=1e-9)
    assert t_quantile(0.975, math.inf) == pytest.approx(1.95996, abs=1e-5)
    assert t_quantile(0.975, 10**6) == pytest.approx(1.95996, abs=1e-4)
    # fractional degrees of freedom (Welch) lie between their neighbours
    assert T975[4] < t_quantile(0.975, 3.5) < T975[3]
    with pytest.raises(ValueError):
        t_quantile(1.0, 3)
    with pytest.raises(ValueError):
        t_quantile(0.9, 0)


def test_estimate_is_a_t_interval_of_the_mean() -> None:
    e = estimate([100.0, 110.0, 90.0])
    assert e is not None
    assert (e.n, e.mean, e.median, e.sd) == (3, 100.0, 100.0, 10.0)
    half = 4.303 * 10.0 / math.sqrt(3)
    assert e.ci_low == pytest.approx(100.0 - half, abs=1e-2)
    assert e.ci_high == pytest.approx(100.0 + half, abs=1e-2)


def test_estimate_with_one_value_has_no_interval_and_none_without_values() -> None:
    e = estimate([42.0])
    assert e is not None
    assert (e.n, e.mean, e.sd, e.ci_low, e.ci_high) == (1, 42.0, None, None, None)
    assert estimate([]) is None


def test_welch_within_the_spread_is_not_significant() -> None:
    c = welch([102.0, 96.0, 108.0], [100.0, 110.0, 90.0])
    assert c.difference == pytest.approx(2.0)
    # R: t.test(c(102,96,108), c(100,110,90)) -> t = 0.29704, df = 3.2748, p-value = 0.7843
    assert c.df == pytest.approx(3.2748, abs=1e-4)
    assert c.p_value == pytest.approx(0.7843, abs=1e-4)
    assert c.ci_low is not None and c.ci_high is not None
    assert c.ci_low < 0 < c.ci_high
    assert not c.significant


def test_welch_clear_difference_is_significant() -> None:
    c = welch([150.0, 151.0, 149.0], [100.0, 101.0, 99.0])
    assert c.significant
    assert c.p_value is not None and c.p_value < 1e-5
    assert c.ci_low is not None and c.ci_high is not None
    assert 0 < c.ci_low < 50.0 < c.ci_high


def test_welch_with_one_repetition_cannot_tell() -> None:
    c = welch([150.0], [100.0, 101.0, 99.0])
    assert c.difference == pytest.approx(50.0)
    assert (c.ci_low, c.p_value, c.significant) == (None, None, False)
    with pytest.raises(ValueError):
        welch([], [1.0])


def test_welch_without_any_spread() -> None:
    assert welch([2.0, 2.0], [1.0, 1.0]).significant
    assert not welch([1.0, 1.0], [1.0, 1.0]).significant
    c = welch([2.0, 2.0, 2.0], [1.0, 1.0])
    assert (c.difference, c.ci_low, c.ci_high, c.df, c.p_value) == (1.0, 1.0, 1.0, None, 0.0)
    c = welch([1.0, 1.0], [1.0, 1.0, 1.0])
    assert (c.p_value, c.significant) == (1.0, False)


def test_welch_interval_and_fractional_df_as_r_gives_them() -> None:
    # R: t.test(c(102,96,108), c(100,110,90)): 95 percent CI -18.44532 22.44532
    c = welch([102.0, 96.0, 108.0], [100.0, 110.0, 90.0])
    assert c.ci_low == pytest.approx(-18.44532, abs=1e-4)
    assert c.ci_high == pytest.approx(22.44532, abs=1e-4)
    # the interval is the difference ± t(0.975, df) · se with Welch's fractional df
    se = math.sqrt(36.0 / 3 + 100.0 / 3)
    assert c.df is not None and c.ci_high is not None
    assert c.ci_high - c.difference == pytest.approx(t_quantile(0.975, c.df) * se)
    # two-sided, as scipy.stats.ttest_ind(equal_var=False) gives it for these values
    assert c.p_value == pytest.approx(0.78429, abs=1e-5)
    # a 1% test is wider
    wide = welch([102.0, 96.0, 108.0], [100.0, 110.0, 90.0], alpha=0.01)
    assert wide.ci_low is not None and wide.ci_low < c.ci_low


def test_welch_with_one_constant_side_is_quiet(recwarn: pytest.WarningsRecorder) -> None:
    c = welch([100.0, 100.0, 100.0], [99.0, 101.0, 100.5])
    assert c.df == pytest.approx(2.0)  # all the variance is the other side's
    assert c.p_value is not None and 0.0 < c.p_value < 1.0
    assert not c.significant
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_ratio_interval_by_the_delta_method() -> None:
    num, den = estimate([150.0, 151.0, 149.0]), estimate([100.0, 110.0, 90.0])
    assert num is not None and den is not None
    r = ratio(num, den)
    assert r is not None and r.ci_low is not None and r.ci_high is not None
    assert r.value == pytest.approx(1.5)
    # relative variance is dominated by the baseline's (sd 10 of 100 over 3 repetitions)
    a, b = (1 / 150) ** 2 / 3, (10 / 100) ** 2 / 3
    df = (a + b) ** 2 / (a**2 / 2 + b**2 / 2)
    assert 2.0 < df < 2.1
    assert r.ci_high - r.value == pytest.approx(r.value - r.ci_low)
    assert r.ci_high - r.value == pytest.approx(1.5 * t_quantile(0.975, df) * math.sqrt(a + b))
    one = estimate([150.0])
    assert one is not None
    assert ratio(one, den) == type(r)(1.5, None, None)
    zero = estimate([0.0, 0.0])
    assert zero is not None and ratio(num, zero) is None


def _record(point_id: str, rep: int, throughput: float | None) -> dict:
    summary = {"tpot_ms": {"median": 10.0 + rep}, "ttft_ms": {"median": 50.0}}
    if throughput is not None:
        summary["output_throughput"] = throughput
    return {"cell": {"point_id": point_id, "repetition": rep}, "summary": summary}


def test_observations_and_cell_estimates_group_repetitions_by_cell() -> None:
    records = [
        _record("ctx512-c1", 2, 90.0),
        _record("ctx512-c1", 0, 100.0),
        _record("ctx512-c1", 1, 110.0),
        _record("ctx512-c8", 0, 800.0),
        _record("ctx512-c8", 1, None),
    ]
    obs = observations(records, lambda r: r["summary"].get("output_throughput"))
    assert obs == {"ctx512-c1": [100.0, 110.0, 90.0], "ctx512-c8": [800.0]}
    est = cell_estimates(records)
    assert est["ctx512-c1"]["output_throughput"].n == 3
    assert est["ctx512-c1"]["tpot_p50_ms"].mean == pytest.approx(11.0)
    assert est["ctx512-c8"]["output_throughput"].ci_low is None
    assert est["ctx512-c8"]["tpot_p50_ms"].n == 2


def test_paired_differences_cancel_a_common_swing() -> None:
    from sweep.results.stats import compare_repetitions, paired

    a, b = [100.0, 150.0, 200.0], [95.0, 146.0, 194.0]
    c = paired(a, b)
    # differences 5, 4, 6: mean 5, s 1, t = 5 / (1 / sqrt 3) with 2 degrees of freedom
    assert c.difference == pytest.approx(5.0) and c.df == 2.0 and c.significant
    assert c.p_value == pytest.approx(0.0132, abs=1e-3)
    assert compare_repetitions(a, b, pairs=True).significant
    assert not compare_repetitions(a, b, pairs=False).significant  # Welch: lost in the swing
    assert not paired([1.0], [0.0]).significant  # one repetition cannot tell
    assert paired([1.0], [0.0]).ci_low is None
    with pytest.raises(ValueError):
        paired([1.0, 2.0], [1.0])


def test_paired_interval_as_r_gives_it() -> None:
    from sweep.results.stats import paired

    # R: t.test(c(100,150,200), c(95,146,194), paired=TRUE): 95 percent CI 2.515862 7.484138
    c = paired([100.0, 150.0, 200.0], [95.0, 146.0, 194.0])
    assert c.ci_low == pytest.approx(2.515862, abs=1e-5)
    assert c.ci_high == pytest.approx(7.484138, abs=1e-5)
    assert isinstance(c.df, float) and isinstance(c.p_value, float)


def test_paired_without_any_spread_of_the_difference() -> None:
    from sweep.results.stats import paired

    c = paired([100.0, 150.0, 200.0], [98.0, 148.0, 198.0])
    assert (c.difference, c.ci_low, c.ci_high, c.df, c.p_value) == (2.0, 2.0, 2.0, None, 0.0)
    assert c.significant
    same = paired([100.0, 150.0], [100.0, 150.0])
    assert (same.p_value, same.significant) == (1.0, False)


def test_scipy_is_the_controller_s_only() -> None:
    root = Path(__file__).resolve().parents[2]
    for path in sorted((root / "bench").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            assert not any(n.split(".")[0] == "scipy" for n in names), path
    # and importing sweep.results.stats does not load it: only an interval or a test does
    code = "import sys, sweep.results.stats; assert 'scipy' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=root, check=True)
