"""Monotonic properties of the emulator's performance model (in-process, no server)."""

from __future__ import annotations

import random
import statistics

import pytest
from sglang_emulator.perf_model import PerfModel, SpecShape, expected_accept_length
from sglang_emulator.settings import Settings

DFLASH = SpecShape(algorithm="DFLASH", num_draft_tokens=16, window=2048)
OFF = SpecShape()


def ddtree(
    budget: int | None = 16, max_topk: int = 6, window: int | None = 2048, block: int = 16
) -> SpecShape:
    return SpecShape(
        algorithm="DDTREE", num_draft_tokens=block, budget=budget, window=window, max_topk=max_topk
    )


def model(spec: SpecShape, **settings: object) -> PerfModel:
    return PerfModel(Settings(**settings), spec)  # type: ignore[arg-type]


def sampled_accept_length(spec: SpecShape, category: str, seed: int, steps: int = 3000) -> float:
    m, rng = model(spec), random.Random(seed)
    return statistics.fmean(m.sample_step(rng, category, 1000) + 1 for _ in range(steps))


def test_step_time_grows_with_batch_and_context():
    m = model(DFLASH)
    assert m.step_ms(1, 1000) < m.step_ms(8, 8000) < m.step_ms(48, 48000)
    assert m.step_ms(16, 16_000) < m.step_ms(16, 160_000)


def test_step_time_grows_with_ddtree_budget_and_width():
    steps = [model(ddtree(budget=b)).step_ms(32, 64_000) for b in (4, 8, 16, 32, 64)]
    assert steps == sorted(steps) and len(set(steps)) == len(steps)
    # A wider tree (a higher SGLANG_DDTREE_MAX_TOPK cap at a budget that reaches it) costs more.
    wide, narrow = model(ddtree(64, max_topk=8)), model(ddtree(64, max_topk=2))
    assert narrow.step_ms(32, 64_000) < wide.step_ms(32, 64_000)


@pytest.mark.parametrize(
    ("budget", "max_topk", "block", "width"),
    [
        (None, 6, 16, 1),  # default budget: block - 1, a plain chain
        (4, 6, 16, 1),
        (15, 8, 16, 1),  # at most block - 1: a chain whatever the cap
        (16, 6, 16, 2),  # above: min(max(budget // 15 + 1, 2), MAX_TOPK)
        (30, 6, 16, 3),
        (64, 6, 16, 5),
        (64, 4, 16, 4),  # MAX_TOPK only caps it
        (200, 6, 16, 6),
        (7, 6, 8, 1),  # block 8: the depth is 7
        (8, 6, 8, 2),
        (40, 6, 8, 6),
    ],
)
def test_ddtree_tree_width_follows_the_fork(budget, max_topk, block, width):
    spec = ddtree(budget, max_topk=max_topk, block=block)
    assert spec.width == width
    assert spec.verify_width == (block - 1 if budget is None else budget) + 1


def test_ddtree_topk_has_no_effect_on_a_chain_budget():
    for budget in (4, 8, 15):
        low, high = ddtree(budget, max_topk=1), ddtree(budget, max_topk=8)
        assert expected_accept_length(low, "chat", 1000) == expected_accept_length(
            high, "chat", 1000
        )
        assert model(low).step_ms(16, 16_000) == model(high).step_ms(16, 16_000)


def test_step_time_grows_with_the_drafter_window():
    ctx = 32 * 16_000
    small = model(SpecShape("DFLASH", 16, window=1024)).step_ms(32, ctx)
    trained = model(SpecShape("DFLASH", 16, window=2048)).step_ms(32, ctx)
    unbounded = model(SpecShape("DFLASH", 16, window=None)).step_ms(32, ctx)
    assert small < trained < unbounded


def test_plausible_scale_for_a_590gb_target():
    m = model(DFLASH)
    assert 20 < m.step_ms(1, 2000) < 100  # tens of ms per step
    assert 20 < m.step_ms(48, 48 * 4000) < 200
    code = expected_accept_length(DFLASH, "code", 1000)
    assert 3 <= code <= 7


def test_accept_length_by_category():
    ctx = 1000
    lengths = [expected_accept_length(DFLASH, c, ctx) for c in ("code", "math", "chat", "random")]
    assert lengths == sorted(lengths, reverse=True)
    assert lengths[-1] < 1.1  # random tokens: almost nothing accepted
    assert sampled_accept_length(DFLASH, "code", 1) > sampled_accept_length(DFLASH, "chat", 1)


def test_speculation_off_is_one_token_per_step():
    m, rng = model(OFF), random.Random(0)
    assert expected_accept_length(OFF, "code", 100) == 1.0
    assert all(m.sample_step(rng, "code", 100) == 0 for _ in range(100))


def test_ddtree_width_raises_acceptance_and_budget_raises_acceptance():
    assert expected_accept_length(ddtree(64, max_topk=6), "chat", 1000) > expected_accept_length(
        ddtree(64, max_topk=1), "chat", 1000
    )
    budgets = (4, 8, 15, 16, 32, 64)
    by_budget = [expected_accept_length(ddtree(budget=b), "code", 1000) for b in budgets]
    assert by_budget == sorted(by_budget) and len(set(by_budget)) == len(by_budget)


def test_ddtree_budget_has_an_optimum():
    # Acceptance saturates (the width is capped by SGLANG_DDTREE_MAX_TOPK, the depth by the
    # block) while the verify cost keeps growing: tokens/s peaks inside the budget range, and
    # at a smaller budget for a bigger batch.
    budgets = [4, 8, 12, 15, 16, 24, 32, 48, 64, 96, 128, 192]

    def best(batch: int) -> int:
        def rate(b: int) -> float:
            spec = ddtree(b)
            return expected_accept_length(spec, "code", 2000) / model(spec).step_ms(
                batch, batch * 2000
            )

        return max(budgets, key=rate)

    single, loaded = best(1), best(32)
    assert budgets[0] < single < budgets[-1]
    assert budgets[0] < loaded < single


def test_window_has_an_optimum_at_the_trained_size_for_long_contexts():
    ctx = 12_000

    def tokens_per_ms(window: int) -> float:
        spec = SpecShape("DFLASH", 16, window=window)
        return expected_accept_length(spec, "code", ctx) / model(spec).step_ms(32, 32 * ctx)

    windows = [256, 512, 1024, 2048, 4096, 8192, 16384]
    rates = [tokens_per_ms(w) for w in windows]
    assert windows[rates.index(max(rates))] == 2048
    # Small windows lose acceptance once the context exceeds them.
    short = SpecShape("DFLASH", 16, window=512)
    assert expected_accept_length(short, "code", ctx) < expected_accept_length(DFLASH, "code", ctx)
    assert expected_accept_length(short, "code", 400) == expected_accept_length(DFLASH, "code", 400)


def test_sampling_is_deterministic_given_the_seed():
    rng1, rng2, rng3 = random.Random(7), random.Random(7), random.Random(8)
    m = model(DFLASH)
    seq1 = [m.sample_step(rng1, "code", 500) for _ in range(200)]
    seq2 = [m.sample_step(rng2, "code", 500) for _ in range(200)]
    seq3 = [m.sample_step(rng3, "code", 500) for _ in range(200)]
    assert seq1 == seq2
    assert seq1 != seq3


def test_time_scale_and_fixed_timings():
    assert model(DFLASH, time_scale=0.0).step_seconds(8, 8000) == 0.0
    assert model(DFLASH, time_scale=0.0).prefill_seconds(1000, 0) == 0.0
    fixed = model(DFLASH, fixed_step_ms=50.0, fixed_ttft_ms=200.0)
    assert fixed.step_seconds(48, 1_000_000) == pytest.approx(0.05)
    assert fixed.prefill_seconds(9000, 0) == pytest.approx(0.2)
    half = model(DFLASH, time_scale=0.5)
    assert half.step_seconds(8, 8000) == pytest.approx(model(DFLASH).step_seconds(8, 8000) / 2)
