"""sweep/failures.py: what a failed start rules out, and the model search that never starts it."""

from __future__ import annotations

import pytest

from sweep import descent, failures, model_search
from sweep.failures import Failure
from sweep.points import Point


def ddtree(b: int, k: int, w: int, **kw: object) -> Point:
    return Point("DDTREE", b, k, w, **kw)  # type: ignore[arg-type]


GRID = [ddtree(b, k, w) for w in (1024, 2048, 4096) for k in (1, 2, 4) for b in (8, 16, 32, 64)]


def test_out_of_memory_rules_out_every_point_at_least_as_large_on_every_axis() -> None:
    failed = ddtree(32, 2, 2048)
    out = failures.ruled_out(GRID, [Failure(failed, failures.OUT_OF_MEMORY, "8xH200")])
    expected = {
        p.point_id
        for p in GRID
        if p.budget >= 32 and p.topk >= 2 and p.window >= 2048 and p != failed
    }
    assert set(out) == expected
    assert len(expected) == 2 * 2 * 2 - 1
    # smaller on one axis, larger on the others: not ruled out
    assert ddtree(16, 4, 4096).point_id not in out
    assert ddtree(64, 1, 4096).point_id not in out
    assert ddtree(64, 4, 1024).point_id not in out
    line = out[ddtree(64, 4, 4096).point_id].line()
    assert line == (
        "not run: at least as large as ddtree-b32-k2-w2048, which ran out of memory on class 8xH200"
    )


@pytest.mark.parametrize("cause", [failures.CRASH, failures.READINESS_TIMEOUT, failures.HOST_LOST])
def test_a_failure_for_another_cause_rules_out_nothing(cause: str) -> None:
    failed = ddtree(8, 1, 1024)  # every point of the grid is at least as large as it
    assert failures.ruled_out(GRID, [Failure(failed, cause, "8xH200")]) == {}
    assert failures.retry_elsewhere(cause, 1, other_hosts=1)
    assert not failures.retry_elsewhere(cause, 2, other_hosts=1)  # once only
    assert not failures.retry_elsewhere(cause, 1, other_hosts=0)


def test_memory_is_compared_only_within_one_algorithm_environment_and_class() -> None:
    failed = ddtree(8, 1, 1024)
    other = [
        Point("DFLASH", 64, 1, 4096),
        ddtree(64, 4, 4096, env=(("SGLANG_X", "1"),)),
        ddtree(64, 4, 4096, pin="8xRTX"),
        Point("NONE", 64, 4, 4096),
    ]
    assert failures.ruled_out(other, [Failure(failed, failures.OUT_OF_MEMORY)]) == {}
    assert not failures.retry_elsewhere(failures.OUT_OF_MEMORY, 1, other_hosts=3)


def test_a_rejected_flag_rules_out_the_points_that_render_it_whatever_their_size() -> None:
    failed = ddtree(64, 4, 4096)
    rendered = {p.point_id: ["--speculative-num-draft-tokens"] for p in GRID}
    rendered[ddtree(8, 1, 1024).point_id] = ["--speculative-num-steps"]
    f = Failure(failed, failures.REJECTED_FLAG, flags=("--speculative-num-draft-tokens",))
    out = failures.ruled_out(GRID, [f], lambda p: rendered.get(p.point_id))
    assert ddtree(8, 1, 2048).point_id in out  # smaller, but renders the flag
    assert ddtree(8, 1, 1024).point_id not in out
    assert len(out) == len(GRID) - 2
    assert "renders --speculative-num-draft-tokens" in out[ddtree(8, 1, 2048).point_id].line()
    # the flags unknown: nothing is ruled out on a guess
    assert failures.ruled_out(GRID, [f], lambda p: None) == {}


def test_an_unknown_cause_is_refused() -> None:
    with pytest.raises(ValueError, match="cause='oom'"):
        Failure(ddtree(8, 1, 1024), "oom")


def test_the_model_search_never_starts_a_point_a_memory_failure_rules_out() -> None:
    grid = descent.Grid.of({p.point_id: (p.budget, p.topk, p.window) for p in GRID})
    edge = {p.point_id for p in GRID if p.budget * p.window >= 64 * 2048}
    started: list[str] = []

    def measure(p: Point, level: int) -> list[float]:
        started.append(p.point_id)
        if p.point_id in edge:
            return []
        return [100.0 + p.budget + p.window / 64 + 0.5 * i for i in range(3)]

    strat = model_search.ModelSearch()
    state, _ = model_search.search(GRID, grid, measure, strat, rules=failures.dominated(GRID))
    failed = [pid for pid in started if pid in edge]
    by_id = {p.point_id: p for p in GRID}
    for i, pid in enumerate(failed):
        for earlier in failed[:i]:
            assert not failures.at_least_as_large(by_id[pid], by_id[earlier]), (pid, earlier)
    assert state.ruled_out  # and they are named
    assert not set(state.ruled_out) & set(started)
    assert any(
        line.startswith("ruled out (by the failure of") for line in model_search.describe(state)
    )
    # without the rule the same search starts more failing points
    blind: list[str] = []

    def measure_blind(p: Point, level: int) -> list[float]:
        blind.append(p.point_id)
        return measure(p, level)

    model_search.search(GRID, grid, measure_blind, strat)
    assert len([pid for pid in blind if pid in edge]) > len(failed)


def test_points_excluded_before_the_search_are_never_picked_not_even_in_round_zero() -> None:
    grid = descent.Grid.of({p.point_id: (p.budget, p.topk, p.window) for p in GRID})
    excluded = {p.point_id for p in GRID if p.window == 2048}
    started: list[str] = []

    def measure(p: Point, level: int) -> list[float]:
        started.append(p.point_id)
        return [100.0 + p.budget, 101.0 + p.budget, 99.0 + p.budget]

    state, _ = model_search.search(
        GRID, grid, measure, model_search.ModelSearch(), excluded=excluded
    )
    assert started and not set(started) & excluded
    assert set(state.ruled_out) == excluded
