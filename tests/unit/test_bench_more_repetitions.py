"""bench.more_repetitions: the rule the bench follows to add repetitions while a point may still
be the best."""

from __future__ import annotations

import json
import math
import re
import statistics

import pytest

from bench.errors import BadArguments
from bench.more_repetitions import MoreRule, pool

# two earlier points, three repetitions each, about 2 % apart
EARLIER = [[98.0, 100.0, 102.0], [196.0, 200.0, 204.0]]


def rule(best: float = 200.0, objective: str = "throughput", cap: int = 12) -> MoreRule:
    ss, df = pool(EARLIER)
    return MoreRule(objective, best, 3, ss, df, cap)


def test_pool_is_the_sum_of_squares_of_logs_around_each_runs_mean() -> None:
    ss, df = pool([[98.0, 100.0, 102.0], [5.0], [1.0, math.e]])
    logs = [math.log(v) for v in (98.0, 100.0, 102.0)]
    m = statistics.fmean(logs)
    assert df == 2 + 1  # a single value adds nothing
    assert ss == pytest.approx(sum((x - m) ** 2 for x in logs) + 0.5)
    assert pool([[0.0, 1.0]]) == (0.0, 0)  # a run with a value of 0 is no evidence of noise


def test_a_point_within_two_sd_of_the_best_or_ahead_gets_more_and_one_behind_does_not() -> None:
    r = rule()
    # pooled sd of one repetition ~2 %: the sd of a difference of two means of 3 is ~1.6 %, so
    # the bar is ~3.2 % under the best
    assert r.step([199.0, 200.0, 201.0]).more  # level with it: may still beat it by over 2 %
    assert r.step([210.0, 212.0, 214.0]).more  # ahead
    behind = r.step([186.0, 188.0, 190.0])  # 6 % behind
    assert not behind.more and "behind the best" in behind.why
    sd = math.sqrt(behind_var() * 2 / 3)
    assert behind.bar == pytest.approx(200.0 * math.exp(math.log1p(0.02) - 2 * sd))


def test_more_only_while_the_point_may_beat_the_best_by_more_than_the_margin() -> None:
    """Repetitions past the bench's own go only to a point that can still change the answer: its
    mean + z sd of the difference above the best's by more than the margin. 2 % behind at ~2 %
    noise (z sd ~3.2 %) it may be ahead, but by no more than ~1.2 %: no more."""
    r = rule()
    step = r.step([194.0, 196.0, 198.0])
    assert not step.more and "cannot beat the best (200) by more than 2%" in step.why
    assert step.bar is not None and 196.0 < step.bar < 200.0


def test_a_tie_within_the_margin_stops_when_more_repetitions_cannot_move_it_out() -> None:
    """Two contenders, the best well measured (48 repetitions at ~2 % noise, where 9 tell the
    margin): a point level with it whose z-sd band reaches no further than the margin is a tie
    within it, which more repetitions cannot move out, after 6 (its noise's own stop: 9); after
    3 the band is still wider; 3 % ahead it may beat the best by more: more."""
    ss, df = pool([[98.0, 100.0, 102.0]] * 12)  # ~2 % noise, 24 degrees of freedom
    r = MoreRule("throughput", 200.0, 48, ss, df, 48)
    level = [v * 1.002 for v in (196.0, 204.0, 200.0, 200.0, 198.0, 202.0)]  # 0.2 % ahead
    tie = r.step(level)
    assert not tie.more and "a tie with the best (200) within 2%" in tie.why
    assert r.needed(ss / df) == 9
    assert r.step(level[:3]).more
    assert r.step([v * 1.03 for v in level]).more
    # the same point against a best of 3 repetitions: the band is wider, it goes on
    assert MoreRule("throughput", 200.0, 3, ss, df, 48).step(level).more


def test_a_first_repetition_clearly_out_stops_the_run_there() -> None:
    """MoreRule.first, after the run's first repetition: clearly out when it is below the best's
    mean less the margin by more than out_z (4) sd of one repetition against the best's mean,
    var the pooled noise of the points before (>= out_df, 6, degrees of freedom)."""
    runs = [[98.0, 100.0, 102.0], [196.0, 200.0, 204.0], [147.0, 150.0, 153.0]]  # ~2 %, df 6
    ss, df = pool(runs)
    r = MoreRule("throughput", 200.0, 3, ss, df, 48)
    sd = math.sqrt(ss / df * (1 + 1 / 3))
    bar = 200.0 * 0.98 * math.exp(-4 * sd)  # ~180
    out = r.first([bar * 0.995])
    assert not out.more and out.repetitions == 1 and "clearly out" in out.why
    assert out.bar == pytest.approx(bar)
    assert r.first([bar * 1.005]).more  # just above the bar: the bench goes on
    assert r.first([bar * 1.005, 10.0]).more  # only the first repetition counts
    slower = MoreRule("tpot", 10.0, 3, ss, df, 48)  # lower is better
    assert not slower.first([10.0 / 0.98 * math.exp(4 * sd) * 1.005]).more
    assert slower.first([10.5]).more


def test_never_clearly_out_for_the_first_points_or_while_the_noise_is_unknown() -> None:
    """No best (the first point), no spread measured (df 0: single repetitions so far), or too
    few degrees of freedom (two points of three: 4 < 6): a first repetition, however low, never
    stops the run; nor a value at or below 0 (nothing to compare)."""
    low = [1.0]
    assert MoreRule("throughput", None, 0, 0.0, 0, 48).first(low).more
    assert MoreRule("throughput", 200.0, 1, 0.0, 0, 48).first(low).more
    ss, df = pool(EARLIER)
    assert df == 4
    few = MoreRule("throughput", 200.0, 3, ss, df, 48).first(low)
    assert few.more and "not known well enough (4 degrees of freedom, 6 needed)" in few.why
    assert not MoreRule("throughput", 200.0, 3, ss, df, 48, out_df=4).first(low).more
    ss6, df6 = pool([*EARLIER, [150.0, 151.0, 152.0]])
    assert MoreRule("throughput", 200.0, 3, ss6, df6, 48).first([0.0]).more
    assert MoreRule("throughput", 200.0, 3, ss6, df6, 48).first([]).more


def behind_var() -> float:
    ss, df = pool([*EARLIER, [186.0, 188.0, 190.0]])
    return ss / df


def test_it_stops_at_the_cap_even_for_a_point_ahead() -> None:
    ahead = [206.0, 214.0, 210.0] * 2  # noisy enough that only the cap stops it
    step = rule(cap=6).step(ahead)
    assert not step.more and "max_repetitions (6) reached" in step.why
    assert rule(cap=6).step(ahead[:5]).more


def test_it_stops_once_the_noise_can_tell_the_margin() -> None:
    """n = 2 * (z * sd / margin)^2 repetitions tell a difference of the margin: at ~2 % noise
    about 8, at ~5 % about 50, so the cap stops that first."""
    r = rule(cap=24)
    tie = [196.0, 204.0] * 6  # a tie with the best, ~2 % noise
    ss, df = pool([*EARLIER, tie])
    need = math.ceil(2 * (2 * math.sqrt(ss / df) / 0.02) ** 2)
    assert r.needed(ss / df) == need and 6 <= need <= 12
    assert r.step(tie[: need - 1]).more
    done = r.step(tie[:need])
    assert not done.more and f"{need} tell a difference of 2% at this noise: enough" in done.why
    noisy = [[95.0, 100.0, 105.0], [190.0, 200.0, 210.0]]  # ~5 %
    ss, df = pool(noisy)
    loud = MoreRule("throughput", 200.0, 3, ss, df, 24)
    assert loud.step([190.0, 200.0, 210.0] * 4).more  # 12 of the ~50 it would need
    capped = loud.step([190.0, 200.0, 210.0] * 8)
    assert not capped.more and "max_repetitions (24) reached" in capped.why
    wide = MoreRule("throughput", 200.0, 3, ss, df, 24, margin=0.1)  # a 10 % margin: 2 do
    assert not wide.step([190.0, 200.0, 210.0]).more


def test_the_first_point_measured_is_the_best_so_far_and_goes_on_while_its_noise_needs() -> None:
    """No best yet (the planner's round 0): nothing to be behind, so only its own noise (and the
    cap) stops it; a mean of three would otherwise stand as the answer unchecked."""
    first = MoreRule("throughput", None, 0, 0.0, 0, 24)
    step = first.step([196.0, 200.0, 204.0])  # ~2 %: 8 needed
    assert step.more and step.bar is None and "the first point measured" in step.why
    assert not first.step([196.0, 200.0, 204.0, 198.0, 202.0, 200.0, 197.0, 203.0]).more
    assert first.step([200.0]).more  # one repetition: its noise unknown, so on to the cap
    assert not MoreRule("throughput", None, 0, 0.0, 0, 3).step([200.0] * 3).more
    assert MoreRule.from_json(first.to_json()) == first


def test_lower_is_better_for_tpot() -> None:
    r = rule(best=10.0, objective="tpot")
    assert r.step([9.5, 9.6, 9.7]).more  # lower: ahead
    assert not r.step([11.0, 11.1, 11.2]).more  # 10 % slower


def test_a_run_without_values_or_with_a_zero_gets_none() -> None:
    assert not rule().step([]).more
    assert not rule().step([200.0, 0.0, 200.0]).more


def test_the_json_the_planner_writes_round_trips_and_bad_fields_are_named() -> None:
    r = rule()
    assert MoreRule.from_json(r.to_json()) == r
    good = json.loads(r.to_json())
    # a rule written before out_z and out_df (an older planner) reads with their defaults
    old = {k: v for k, v in good.items() if k not in ("out_z", "out_df")}
    assert MoreRule.from_json(json.dumps(old)) == r and (r.out_z, r.out_df) == (4.0, 6)
    cases = [
        ("{", "not JSON"),
        ("[]", "not a JSON object"),
        (json.dumps({**good, "cap": 3}), "unknown field(s) cap"),
        (json.dumps({k: v for k, v in good.items() if k != "best"}), "missing field(s) best"),
        (json.dumps({**good, "objective": "speed"}), "objective='speed': not one of"),
        (json.dumps({**good, "best": 0}), "best=0: must be a positive number, or null"),
        (json.dumps({**good, "margin": 0}), "margin=0: must be a fraction in (0, 1)"),
        (json.dumps({**good, "best_repetitions": 0}), "best_repetitions=0"),
        (json.dumps({**good, "df": -1}), "df=-1"),
        (json.dumps({**good, "ss": "x"}), "ss='x'"),
        (json.dumps({**good, "max_repetitions": True}), "max_repetitions=True"),
        (json.dumps({**good, "objective": "goodput"}), "goodput needs both SLOs"),
        (json.dumps({**good, "out_z": 0}), "out_z=0: must be a positive number"),
        (json.dumps({**good, "out_df": 0}), "out_df=0: must be an integer >= 1"),
    ]
    for text, named in cases:
        with pytest.raises(BadArguments, match=r"--more-repetitions: .*" + re.escape(named)):
            MoreRule.from_json(text)
    ok = MoreRule.from_json(
        json.dumps({**good, "objective": "goodput", "slo_ttft_ms": 500, "slo_tpot_ms": 50})
    )
    assert ok.slo_tpot_ms == 50
