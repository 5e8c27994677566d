"""sweep/store/failures.py: what a failed start rules out, and the model search that never starts
it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sweep.config.points import Point
from sweep.search import grid_axes, memory, model_search, search_rounds
from sweep.store import failures
from sweep.store.failures import Failure


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
    grid = grid_axes.Grid.of({p.point_id: (p.budget, p.topk, p.window) for p in GRID})
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
        line.startswith("ruled out (by the failure of")
        for line in search_rounds.describe_model(state)
    )
    # without the rule the same search starts more failing points
    blind: list[str] = []

    def measure_blind(p: Point, level: int) -> list[float]:
        blind.append(p.point_id)
        return measure(p, level)

    model_search.search(GRID, grid, measure_blind, strat)
    assert len([pid for pid in blind if pid in edge]) > len(failed)


def test_points_excluded_before_the_search_are_never_picked_not_even_in_round_zero() -> None:
    grid = grid_axes.Grid.of({p.point_id: (p.budget, p.topk, p.window) for p in GRID})
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


EMULATOR_CAPTURE = (
    "[2026-12-05 11:57:10] Capture cuda graph begin. This can take up to several minutes. "
    "avail mem=16.74 GB\n"
    "[2026-12-05 11:57:11] Capture cuda graph end. Time elapsed: 1.20 s. mem usage=9.04 GB. "
    "avail mem=7.70 GB.\n"
)
# SGLang 0.5.23's wording (model_runner_components/cuda_graph_setup.py), two captures
REAL_CAPTURES = (
    "Capture target verify CUDA graph begin. backend=fa3, num_tokens_per_req=9, "
    "avail mem=20.00 GB\n"
    "Capture target verify CUDA graph end. bs=[1, 2, 4], elapsed=3.10 s, mem usage=4.00 GB, "
    "avail mem=16.00 GB.\n"
    "Capture draft decode CUDA graph begin. backend=fa3, num_tokens_per_req=1, avail mem=16.00 GB\n"
    "Capture draft decode CUDA graph end. bs=[1, 2, 4], elapsed=1.00 s, mem usage=1.00 GB, "
    "avail mem=15.00 GB.\n"
)


def test_a_run_s_memory_share_is_read_from_its_capture_lines() -> None:
    assert memory.memory_share(EMULATOR_CAPTURE) == pytest.approx(1 - 7.70 / 16.74)
    assert memory.memory_share(REAL_CAPTURES) == pytest.approx(0.25)  # 1 - 15 / 20
    assert memory.memory_share(EMULATOR_CAPTURE.splitlines()[0]) is None  # it failed there
    assert memory.memory_share("Load weight begin. avail mem=139.52 GB") is None  # no graphs


def test_a_journal_is_read_up_to_the_ready_line(tmp_path: Path) -> None:
    journal = tmp_path / "journal.log"
    assert memory.memory_share_of(journal) is None  # no journal: nothing known
    late = "Capture cuda graph end. Time elapsed: 1 s. mem usage=1 GB. avail mem=1.00 GB.\n"
    journal.write_text(EMULATOR_CAPTURE + memory.READY + "\n" + late)
    assert memory.memory_share_of(journal) == pytest.approx(1 - 7.70 / 16.74)


def test_the_real_server_on_cpu_captures_no_graph_and_prints_the_ready_line(tmp_path: Path) -> None:
    """The REAL SGLang 0.5.23's start on CPU (graphs disabled, recorded): nothing to fit, and the
    ready line memory_share_of stops at is the one it prints."""
    fixture = Path(__file__).parents[1] / "fixtures" / "real_sglang" / "0.5.23" / "failures.json"
    lines = json.loads(fixture.read_text())["start_until_ready"]
    assert any(memory.READY in line for line in lines)
    journal = tmp_path / "journal.log"
    journal.write_text("\n".join(lines) + "\n")
    assert memory.memory_share_of(journal) is None
    journal.write_text("\n".join(lines[:-1]) + "\n" + EMULATOR_CAPTURE + lines[-1] + "\n")
    assert memory.memory_share_of(journal) == pytest.approx(1 - 7.70 / 16.74)


def _memory(p: Point) -> float:
    """A memory share that grows with budget and window and passes 1 at the edge below."""
    return (p.budget * p.window) / (48 * 2048) * (1 + 0.05 * p.topk) / 1.2


def test_the_model_search_does_not_start_what_the_runs_memory_puts_over_the_limit() -> None:
    grid = grid_axes.Grid.of({p.point_id: (p.budget, p.topk, p.window) for p in GRID})
    by_id = {p.point_id: p for p in GRID}
    edge = {p.point_id for p in GRID if _memory(p) >= 1}

    def run(memory: bool) -> tuple[list[str], model_search.ModelState[Point]]:
        started: list[str] = []

        def measure(p: Point, level: int) -> list[float]:
            started.append(p.point_id)
            if p.point_id in edge:
                return []
            return [100.0 + p.budget + p.window / 64 + 0.5 * i for i in range(3)]

        def share(pid: str) -> float | None:
            return None if pid in edge else _memory(by_id[pid])

        state, _ = model_search.search(
            GRID,
            grid,
            measure,
            model_search.ModelSearch(),
            rules=failures.dominated(GRID),
            sizes=failures.dominated(GRID),
            memory=share if memory else None,
        )
        return started, state

    blind, blind_state = run(False)
    started, state = run(True)
    fails = [pid for pid in started if pid in edge]
    assert len(fails) < len([pid for pid in blind if pid in edge])
    assert state.over_memory and not set(state.over_memory) & set(started)
    assert all(v > 1 for v in state.over_memory.values())
    assert set(state.over_memory) <= edge  # nothing that runs was put over
    assert state.best == blind_state.best  # the same answer, the best point that runs
    assert any(
        line.startswith("not started (the memory") for line in search_rounds.describe_model(state)
    )


def test_the_memory_fit_waits_for_enough_runs_and_numeric_axes() -> None:
    grid = grid_axes.Grid.of({p.point_id: (p.budget, p.topk, p.window) for p in GRID})
    by_id = {p.point_id: p for p in GRID}
    runs = [p.point_id for p in GRID if _memory(p) < 0.5]

    def share(pid: str) -> float | None:
        return _memory(by_id[pid])

    assert memory.over_limit(grid, runs[:4], share, ()) == {}  # 3 axes + 2 needed
    over = memory.over_limit(grid, runs, share, ())
    assert over and all(_memory(by_id[pid]) > 1 for pid in over)
    named = grid_axes.Grid.of({p.point_id: (f"b{p.budget}", p.topk, p.window) for p in GRID})
    assert memory.over_limit(named, runs, share, ()) == {}
