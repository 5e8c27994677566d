"""The capacity search's state machine and the SLO (bench/capacity.py), and its command line."""

from __future__ import annotations

import math

import pytest

from bench.capacity import Search, Slo, Trial
from bench.cli import main
from bench.errors import BadArguments


def _drive(search: Search, capacity: float) -> list[float]:
    """Runs the search against a server whose true capacity is `capacity` req/s."""
    rates = []
    while (rate := search.next_rate()) is not None:
        rates.append(rate)
        search.add(Trial(rate, f"rate{rate:g}", 1.0 if rate <= capacity else 0.5, rate <= capacity))
    return rates


@pytest.mark.parametrize("capacity", [0.3, 1.0, 3.7, 42.0])
def test_the_search_brackets_the_capacity_within_its_precision(capacity):
    search = Search(start_rate=1.0, precision=0.05, max_trials=20)
    rates = _drive(search, capacity)
    result = search.result()
    assert result["settled"] is True
    lo, hi = result["bracket"]
    assert lo <= capacity < hi <= lo * 1.05
    assert result["capacity"] == lo
    assert "within 5%" in result["reason"]
    # doubling or halving to bracket, then bisection: logarithmic in the ratio and precision
    assert len(rates) <= abs(math.log2(capacity)) + 2 + math.ceil(
        math.log2(math.log(2) / math.log(1.05))
    )


def test_a_search_cut_by_its_trial_bound_is_not_settled():
    search = Search(start_rate=1.0, precision=0.05, max_trials=4)
    rates = _drive(search, 100.0)
    assert rates == [1.0, 2.0, 4.0, 8.0]
    result = search.result()
    assert result["settled"] is False and result["capacity"] is None
    assert result["bracket"] == [8.0, None]
    assert result["reason"] == "stopped at the bound of 4 trials"


def test_an_invalid_trial_is_a_ceiling_the_search_stays_below():
    search = Search(start_rate=4.0)
    search.add(Trial(4.0, "c-rate4", 1.0, True))
    search.add(Trial(8.0, "c-rate8", 1.0, True))
    assert search.next_rate() == 16.0
    # the client fell behind at 16 (the server saturated the CPUs), twice: no bound on the
    # server, the search goes on between what was met and where the client cannot measure
    search.add(Trial(16.0, "c-rate16", 0.2, False, valid=False))
    assert search.next_rate() == 16.0
    search.add(Trial(16.0, "c-rate16-again", 0.2, False, valid=False))
    assert search.next_rate() == pytest.approx(math.sqrt(8 * 16))
    search.add(Trial(11.3, "c-rate11.3", 0.5, False))  # a valid miss: the bracket [8, 11.3]
    assert search.next_rate() == pytest.approx(math.sqrt(8 * 11.3))
    assert search.high == 11.3 and search.low == 8.0
    # an invalid trial that met the SLO does not raise the floor either
    search.add(Trial(9.5, "c-rate9.5", 1.0, True, valid=False))
    assert search.low == 8.0
    assert search.next_rate() == 9.5
    search.add(Trial(9.5, "c-rate9.5-again", 1.0, True, valid=False))
    assert search.low == 8.0
    assert search.next_rate() == pytest.approx(math.sqrt(8 * 9.5))


def test_a_client_stall_is_measured_again_and_the_valid_verdict_stands():
    # the timing test's DDTREE 64 search (capacity 17.1 req/s) as it ran on a machine whose
    # other processes stalled the client for a moment at 19 req/s
    search = Search(start_rate=16.0)
    for rate, attained, met in ((16.0, 0.84, True), (32.0, 0.05, False)):
        search.add(Trial(rate, f"rate{rate:g}", attained, met))
    assert search.next_rate() == pytest.approx(math.sqrt(16 * 32))
    search.add(Trial(math.sqrt(16 * 32), "rate22.6", 0.07, False))
    stalled = math.sqrt(16 * math.sqrt(16 * 32))
    assert search.next_rate() == stalled
    search.add(Trial(stalled, "rate19-r0", 0.31, False, valid=False))
    assert search.next_rate() == stalled  # once more: a stall is not a ceiling
    assert search.attempts(stalled) == 1
    search.add(Trial(stalled, "rate19-r1", 0.31, False))
    assert search.ceiling is None and search.high == stalled
    assert search.next_rate() == pytest.approx(math.sqrt(16 * stalled))


def test_a_stalled_first_attempt_at_each_rate_still_settles():
    """Every first attempt above 17 req/s stalls, every second keeps to its schedule: the search
    brackets the capacity (taken as a ceiling at once, the first stall ended it unbracketed)."""
    search = Search(start_rate=16.0, max_trials=20)
    while (rate := search.next_rate()) is not None:
        met = rate <= 17.1
        valid = rate <= 17.0 or search.attempts(rate) == 1
        search.add(Trial(rate, f"rate{rate:g}", 1.0 if met else 0.3, met, valid=valid))
    result = search.result()
    assert result["settled"], result
    lo, hi = result["bracket"]
    assert lo <= 17.1 < hi <= lo * 1.05


def test_a_ceiling_within_precision_of_the_floor_ends_unsettled_naming_the_client():
    search = Search(start_rate=1.0)
    search.add(Trial(1.0, "c-rate1", 1.0, True))
    search.add(Trial(2.0, "c-rate2", 1.0, False, valid=False))
    search.add(Trial(2.0, "c-rate2-again", 1.0, False, valid=False))
    assert search.next_rate() == pytest.approx(math.sqrt(2))
    search.add(Trial(1.41, "c-rate1.41", 1.0, True))
    search.add(Trial(1.45, "c-rate1.45", 1.0, False, valid=False))
    assert search.next_rate() == 1.45
    search.add(Trial(1.45, "c-rate1.45", 1.0, False, valid=False))
    assert search.next_rate() is None
    result = search.result()
    assert result["settled"] is False and result["capacity"] is None
    assert result["bracket"] == [1.41, None]  # the client's limit bounds nothing
    assert "client fell behind its schedule at 1.45 req/s (c-rate1.45)" in result["reason"]
    assert "at least 1.41 req/s" in result["reason"]


def test_an_invalid_first_trial_halves_below_it():
    search = Search(start_rate=8.0, min_rate=1.0)
    search.add(Trial(8.0, "c-rate8", 0.0, False, valid=False))
    assert search.next_rate() == 8.0
    search.add(Trial(8.0, "c-rate8-again", 0.0, False, valid=False))
    assert search.next_rate() == 4.0
    search.add(Trial(4.0, "c-rate4", 0.0, False))  # valid miss below the ceiling: halve on
    assert search.next_rate() == 2.0
    search = Search(start_rate=1.5, min_rate=1.0)
    search.add(Trial(1.5, "c-rate1.5", 0.0, False, valid=False))
    search.add(Trial(1.5, "c-rate1.5-again", 0.0, False, valid=False))
    assert search.next_rate() is None
    assert "below --capacity-min-rate" in search.result()["reason"]


def test_a_server_that_misses_at_every_rate_stops_at_the_floor():
    search = Search(start_rate=1.0, min_rate=0.1)
    rates = _drive(search, 0.0)
    assert rates == [1.0, 0.5, 0.25, 0.125]
    assert "misses the SLO" in search.result()["reason"]
    assert search.result()["capacity"] is None


def test_noise_that_inverts_the_bracket_stops_the_search():
    search = Search(start_rate=4.0)
    search.add(Trial(4.0, "a", 0.95, True))
    search.add(Trial(8.0, "b", 0.5, False))
    search.add(Trial(math.sqrt(32), "c", 0.5, False))
    search.add(Trial(5.0, "d", 0.5, False))
    search.add(Trial(5.5, "e", 0.95, True))  # met above a rate that missed
    assert search.next_rate() is None
    assert "noise" in search.result()["reason"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_trials": 1}, "--capacity-max-trials 1 cannot bracket"),
        ({"start_rate": 0.0}, "--capacity-start-rate must be a positive number, got 0.0"),
        ({"precision": -1.0}, "--capacity-precision must be a positive number, got -1.0"),
    ],
)
def test_bounds_that_cannot_bracket_are_named(kwargs, message):
    with pytest.raises(BadArguments, match=message):
        Search(**kwargs)


def test_a_good_request_meets_every_target_given():
    slo = Slo(ttft_ms=100, tpot_ms=20)
    assert slo.good({"ok": True, "ttft": 0.099, "tpot": 0.019})
    assert not slo.good({"ok": True, "ttft": 0.101, "tpot": 0.019})
    assert not slo.good({"ok": True, "ttft": 0.050, "tpot": 0.021})
    assert not slo.good({"ok": False, "ttft": 0.050, "tpot": 0.010})
    # one token: no TPOT to miss; a longer answer without one is not good
    assert slo.good({"ok": True, "ttft": 0.050, "tpot": None, "completion_tokens": 1})
    assert not slo.good({"ok": True, "ttft": 0.050, "tpot": None, "completion_tokens": 5})
    assert not slo.good({"ok": True, "ttft": None, "tpot": 0.01})
    assert Slo(tpot_ms=20).good({"ok": True, "ttft": 9.0, "tpot": 0.010})
    rows = [{"ok": True, "ttft": 0.01, "tpot": 0.01}] * 9 + [{"ok": False}]
    assert slo.attainment(rows) == pytest.approx(0.9)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "needs an SLO"),
        ({"ttft_ms": 0.0}, "--slo-ttft-ms must be a positive number, got 0.0"),
        ({"tpot_ms": 10.0, "share": 1.5}, r"--slo-share must be in \(0, 1\], got 1.5"),
    ],
)
def test_a_bad_slo_is_named(kwargs, message):
    with pytest.raises(BadArguments, match=message):
        Slo(**kwargs)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--concurrency", "1", "--slo-ttft-ms", "100"],
            "--slo-ttft-ms applies to a capacity search",
        ),
        (["--capacity"], "needs an SLO"),
        (["--capacity", "--slo-tpot-ms", "abc"], "--slo-tpot-ms"),
        (["--capacity", "--slo-tpot-ms", "10", "--capacity-max-trials", "1"], "cannot bracket"),
        (["--capacity", "--slo-tpot-ms", "10", "--burstiness", "0"], "--burstiness"),
    ],
)
def test_the_command_line_names_bad_capacity_input_before_any_request(
    extra, message, tmp_path, capsys
):
    # port 9 (discard): nothing listens; a check that reached the server would say so instead
    rc = main(
        [
            "run",
            "--url",
            "http://127.0.0.1:9",
            "--out",
            str(tmp_path / "o"),
            "--contexts",
            "64",
            *extra,
        ]
    )
    assert rc == 2
    err = capsys.readouterr().err
    assert message in err
    assert "127.0.0.1:9" not in err
    assert not (tmp_path / "o").exists()
