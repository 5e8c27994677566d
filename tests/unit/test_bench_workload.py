import pytest

from bench.errors import BadArguments
from bench.workload import build_matrix, parse_float_list, parse_int_list, requests_for


def test_parse_int_list_with_k_suffix():
    assert parse_int_list("512, 8k,32K") == [512, 8192, 32768]
    with pytest.raises(BadArguments):
        parse_int_list("12,abc")


def test_matrix_is_the_product_and_ids_are_unique_and_stable():
    cells = build_matrix([512, 8192], [1, 16], [128], ["random", "code"], repetitions=2)
    assert len(cells) == 2 * 2 * 1 * 2 * 2
    ids = [c.cell_id for c in cells]
    assert len(set(ids)) == len(ids)
    again = build_matrix([512, 8192], [1, 16], [128], ["random", "code"], repetitions=2)
    assert ids == [c.cell_id for c in again]
    assert cells[0].cell_id == "ctx512-c1-out128-random-r0"
    assert cells[0].point_id == "ctx512-c1-out128-random"


def test_requests_scale_with_concurrency():
    assert requests_for(1, 4, 8) == 8
    assert requests_for(16, 4, 8) == 64
    cells = build_matrix([512], [48], [64], ["random"], 1, per_slot=2, min_requests=8)
    assert cells[0].num_requests == 96


def test_seeds_differ_per_repetition_and_are_deterministic():
    a, b = build_matrix([512], [1], [64], ["random"], 2)
    assert a.seed(0) != b.seed(0)
    assert a.seed(0) == build_matrix([512], [1], [64], ["random"], 2)[0].seed(0)


@pytest.mark.parametrize(
    "kw",
    [
        {"contexts": []},
        {"contexts": [0]},
        {"concurrencies": [-1]},
        {"categories": ["poetry"]},
        {"repetitions": 0},
    ],
)
def test_bad_matrix_arguments(kw):
    args = {
        "contexts": [512],
        "concurrencies": [1],
        "output_lens": [64],
        "categories": ["random"],
        "repetitions": 1,
    }
    args.update(kw)
    with pytest.raises(BadArguments):
        build_matrix(**args)


def test_open_loop_cells_beside_closed_loop_ones():
    cells = build_matrix([512], [4], [64], ["random"], 1, request_rates=[2.5, 10.0])
    assert [c.cell_id for c in cells] == [
        "ctx512-c4-out64-random-r0",  # closed-loop ids are what they always were
        "ctx512-rate2.5-out64-random-r0",
        "ctx512-rate10-out64-random-r0",
    ]
    closed, slow, fast = cells
    assert not closed.open_loop and closed.to_dict()["request_rate"] is None
    assert slow.open_loop and slow.request_rate == 2.5 and slow.burstiness == 1.0
    assert slow.concurrency == 0 and slow.max_concurrency is None
    # 60 s of arrivals by default, at least --min-requests
    assert (slow.num_requests, fast.num_requests) == (150, 600)
    assert slow.seed(0) != fast.seed(0)


def test_open_loop_ids_name_burstiness_and_cap_and_requests_follow_seconds():
    (cell,) = build_matrix(
        [512],
        [],
        [64],
        ["random"],
        1,
        min_requests=20,
        request_rates=[0.1],
        burstiness=0.5,
        max_concurrency=16,
        open_loop_seconds=30,
    )
    assert cell.cell_id == "ctx512-rate0.1-b0.5-mc16-out64-random-r0"
    assert cell.max_concurrency == 16 and cell.concurrency == 16
    assert cell.num_requests == 20  # ceil(0.1 * 30) = 3 < --min-requests


def test_parse_float_list_names_the_bad_value():
    assert parse_float_list("1, 2.5,10", "--request-rate") == [1.0, 2.5, 10.0]
    for text, shown in (("1,abc", "'abc'"), ("0", "0.0"), ("-2", "-2.0"), ("nan", "nan")):
        with pytest.raises(BadArguments, match="--request-rate must be a positive number") as e:
            parse_float_list(text, "--request-rate")
        assert shown in str(e.value)


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"concurrencies": []}, "--concurrency \\(closed loop\\), --request-rate"),
        ({"request_rates": [0.0]}, "--request-rate must be a positive number, got 0.0"),
        ({"burstiness": 0.0, "request_rates": [1.0]}, "--burstiness must be a positive number"),
        ({"max_concurrency": 0, "request_rates": [1.0]}, "--max-concurrency must be a positive"),
    ],
)
def test_bad_open_loop_arguments(kw, message):
    args = {"contexts": [512], "concurrencies": [1], "output_lens": [64], "categories": ["random"]}
    with pytest.raises(BadArguments, match=message):
        build_matrix(**{**args, "repetitions": 1, **kw})
