import pytest

from bench.errors import BadArguments
from bench.workload import build_matrix, parse_int_list, requests_for


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
