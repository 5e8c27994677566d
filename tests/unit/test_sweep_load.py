"""The sweep's open-loop and capacity parameters (sweep/config/load.py): validated with the bench's
own rules, named as the sweep's parameters, and turned into the bench's flags."""

from __future__ import annotations

import pytest

from sweep.config.load import bench_args
from sweep.config.params import SweepInputError, bench_params
from sweep.config.params import load_params as params

INVENTORY = {"bench": {"contexts": [512], "concurrency": [1, 4], "output_len": [64]}}


def test_nothing_asked_adds_nothing_so_old_identities_stay():
    before = bench_params({}, INVENTORY)
    assert not {"request_rate", "capacity", "burstiness"} & set(before)
    assert before["concurrency"] == [1, 4]
    assert params({}, "throughput") == {}


def test_open_loop_rates_replace_the_inventory_concurrency_unless_asked():
    only = bench_params({"request_rate": "0.5,2"}, INVENTORY)
    assert only["request_rate"] == [0.5, 2.0] and only["concurrency"] == []
    both = bench_params({"request_rate": "2", "concurrency": "8"}, INVENTORY)
    assert both["concurrency"] == [8]
    assert bench_args(only) == ["--request-rate", "0.5,2"]


def test_a_capacity_search_is_part_of_the_identity_with_its_slo():
    cli = {"load": "capacity", "slo_ttft_ms": "500", "slo_tpot_ms": 40, "capacity_max_trials": 8}
    bench = bench_params(cli, INVENTORY)
    assert bench["capacity"] == {
        "ttft_ms": 500.0,
        "tpot_ms": 40.0,
        "share": 0.9,
        "start_rate": 1.0,
        "precision": 0.05,
        "max_trials": 8,
    }
    other = bench_params({**cli, "slo_tpot_ms": 30}, INVENTORY)
    assert other != bench  # another SLO is another measurement
    args = bench_args({**bench, "burstiness": 0.5})
    assert args[:2] == ["--burstiness", "0.5"]
    assert args[2:] == [
        "--capacity",
        "--slo-ttft-ms",
        "500",
        "--slo-tpot-ms",
        "40",
        "--slo-share",
        "0.9",
        "--capacity-start-rate",
        "1",
        "--capacity-precision",
        "0.05",
        "--capacity-max-trials",
        "8",
    ]


def test_the_bench_parses_what_the_sweep_passes(tmp_path):
    """The flags bench_args writes are the bench's own: its parser accepts them as given."""
    from bench.cli import _capacity, _open_loop, _parser

    bench = params(
        {"request_rate": "1,2", "load": "capacity", "slo_tpot_ms": 40, "max_concurrency": 4},
        "throughput",
    )
    a = _parser().parse_args(
        ["run", "--url", "u", "--out", str(tmp_path), "--contexts", "64", *bench_args(bench)]
    )
    assert _open_loop(a) == {"request_rates": [1.0, 2.0], "max_concurrency": 4}
    assert _capacity(a)["slo"].tpot_ms == 40.0


@pytest.mark.parametrize(
    ("cli", "objective", "message"),
    [
        ({"request_rate": "abc"}, "throughput", "request_rate=abc: not a number"),
        ({"max_concurrency": 4}, "throughput", "max_concurrency applies to open-loop load"),
        ({"capacity_precision": 0.1}, "throughput", "capacity_precision applies to load=capacity"),
        ({"slo_share": 0.5}, "goodput", "slo_share applies to load=capacity"),
        (
            {"load": "capacity", "slo_tpot_ms": 40, "slo_share": 1.5},
            "throughput",
            "slo_share must be in (0, 1], got 1.5",
        ),
        (
            {"load": "capacity", "slo_tpot_ms": 40, "capacity_start_rate": 0},
            "throughput",
            "capacity_start_rate must be a positive number, got 0.0",
        ),
    ],
)
def test_bad_load_parameters_are_named(cli, objective, message):
    with pytest.raises(SweepInputError) as e:
        params(cli, objective)
    assert message in str(e.value)


def test_slos_with_goodput_stay_allowed_without_a_capacity_search():
    assert params({"slo_ttft_ms": 500, "slo_tpot_ms": 40}, "goodput") == {}
