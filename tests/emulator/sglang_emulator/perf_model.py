"""Performance model: step and prefill times, accepted tokens per verify step.

Scaled to a ~590 GB MoE target on one 8-GPU node (TP 8): tens of ms per decode step.
See tests/emulator/README.md for the formulas and the reasoning behind each constant.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from .settings import Settings

# Per-draft-token acceptance probability of a DFlash chain drafter, by prompt domain
# (category.py): structured output is the most predictable, then code and worked math; answers
# over a long document copy from it; free conversation least; random tokens almost never.
P_ACCEPT = {
    "json": 0.86,
    "code": 0.82,
    "math": 0.80,
    "document": 0.70,
    "chat": 0.60,
    "random": 0.03,
}
TRAINED_WINDOW = 2048  # the drafter of the target deployment was trained with this window

# Decode step (milliseconds).
STEP_BASE_MS = 20.0  # reading the target weights once per step
VERIFY_MS_PER_TOKEN = 0.035  # per verified token in the batch (batch * verify width)
KV_MS_PER_TOKEN = 0.00005  # per context token in the batch (attention over the KV cache)
DRAFT_BASE_MS = 1.0
DRAFT_MS_PER_SEQ = 0.02
DRAFT_MS_PER_WINDOW_TOKEN = 0.00002  # drafter attention over its window, per sequence
TOPK_VERIFY_COST = 0.05  # tree attention masks: extra verify cost per extra branch
# Prefill (milliseconds).
PREFILL_BASE_MS = 15.0
PREFILL_MS_PER_TOKEN = 0.06
PREFILL_MS_PER_CACHED_TOKEN = 0.002


@dataclass(frozen=True)
class SpecShape:
    """The speculative-decoding configuration the model needs, from resolved server args."""

    algorithm: str | None = None
    num_draft_tokens: int = 1  # DFLASH/DDTREE: the block size
    topk: int = 1  # --speculative-eagle-topk (EAGLE family); DDTREE derives its width instead
    budget: int | None = None  # --speculative-ddtree-budget (None: the fork's default)
    window: int | None = None
    num_steps: int = 1
    max_topk: int = 6  # SGLANG_DDTREE_MAX_TOPK: an environment variable, not a server argument

    @classmethod
    def from_args(cls, args: dict[str, Any], ddtree_max_topk: int = 6) -> SpecShape:
        algo = args.get("speculative_algorithm")
        if algo is None:
            return cls()
        window = args.get("speculative_draft_window_size")
        if window is None:
            window = args.get("speculative_dflash_draft_window_size")
        return cls(
            algorithm=algo,
            num_draft_tokens=int(args.get("speculative_num_draft_tokens") or 1),
            topk=int(args.get("speculative_eagle_topk") or 1),
            budget=args.get("speculative_ddtree_budget"),
            window=window,
            num_steps=int(args.get("speculative_num_steps") or 1),
            max_topk=ddtree_max_topk,
        )

    @property
    def enabled(self) -> bool:
        return self.algorithm is not None

    @property
    def draft_depth(self) -> int:
        """Draft positions per block (DFLASH/DDTREE): block size - 1."""
        return max(self.num_draft_tokens - 1, 1)

    @property
    def ddtree_budget(self) -> int:
        """Tree nodes besides the root; the fork's worker defaults it to block size - 1."""
        return int(self.budget) if self.budget is not None else self.draft_depth

    @property
    def width(self) -> int:
        """Candidates per position. DDTREE, as the fork's tree builder does it
        (ddtree_utils.build_ddtree_tree): a budget of at most the draft depth (block - 1) is a
        plain chain, topk has no effect; above it the width is
        min(max(budget // depth + 1, 2), SGLANG_DDTREE_MAX_TOPK), so MAX_TOPK only caps it."""
        if self.algorithm != "DDTREE":
            return self.topk
        budget, depth = self.ddtree_budget, self.draft_depth
        if budget <= depth:
            return 1
        return max(1, min(max(budget // depth + 1, 2), self.max_topk))

    @property
    def verify_width(self) -> int:
        if not self.enabled:
            return 1
        if self.algorithm == "DDTREE":
            return self.ddtree_budget + 1
        return self.num_draft_tokens

    @property
    def uses_window(self) -> bool:
        return self.algorithm in ("DFLASH", "DDTREE")

    @property
    def max_depth(self) -> int:
        """Most draft tokens one verify step can accept."""
        if not self.enabled:
            return 0
        if self.algorithm == "DDTREE":
            # Branches spend budget: a wider tree is a shallower one (a chain: the budget).
            depth = round(self.ddtree_budget / (1.0 + 0.15 * (self.width - 1)))
            return max(1, min(self.draft_depth, depth))
        if self.algorithm in ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE"):
            return min(self.num_steps, self.num_draft_tokens - 1)
        return self.num_draft_tokens - 1

    @property
    def proposed_per_step(self) -> int:
        """Draft tokens counted as proposed per verify step (SGLang: num_draft_tokens - 1)."""
        return self.verify_width - 1


def window_factor(spec: SpecShape, context: int) -> float:
    """Acceptance multiplier for the drafter window versus the context it would like to see."""
    if not spec.uses_window:
        return 1.0
    seen = context if spec.window is None else min(context, spec.window)
    wanted = min(context, TRAINED_WINDOW)
    factor = 1.0
    if seen < wanted:  # window smaller than what the drafter was trained on
        factor *= 1.0 - 0.35 * (1.0 - seen / wanted)
    if seen > TRAINED_WINDOW:  # attending beyond the trained window drifts
        factor *= 1.0 - 0.12 * min(1.0, math.log2(seen / TRAINED_WINDOW) / 4.0)
    return factor


def accept_probability(spec: SpecShape, category: str, context: int) -> float:
    p = P_ACCEPT[category] * window_factor(spec, context)
    if spec.algorithm in ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE"):
        p *= 0.9
    elif spec.algorithm == "NGRAM":
        p *= 0.6
    if spec.width > 1:  # more candidates per position: a miss is less likely
        p = 1.0 - (1.0 - p) * spec.width**-0.35
    return min(p, 0.995)


def expected_accept_length(spec: SpecShape, category: str, context: int) -> float:
    """Expected tokens per verify step, bonus token included (1.0 when speculation is off)."""
    if not spec.enabled:
        return 1.0
    p = accept_probability(spec, category, context)
    depth = spec.max_depth
    return 1.0 + sum(p**i for i in range(1, depth + 1))


class PerfModel:
    def __init__(self, settings: Settings, spec: SpecShape) -> None:
        self.s = settings
        self.spec = spec
        self.scale = settings.time_scale

    def prefill_seconds(self, new_tokens: int, cached_tokens: int) -> float:
        if self.s.fixed_ttft_ms is not None:
            return self.s.fixed_ttft_ms / 1000.0
        ms = (
            PREFILL_BASE_MS
            + PREFILL_MS_PER_TOKEN * new_tokens
            + PREFILL_MS_PER_CACHED_TOKEN * cached_tokens
        )
        return ms * self.scale / 1000.0

    def step_seconds(self, batch: float, total_context: float) -> float:
        if self.s.fixed_step_ms is not None:
            return self.s.fixed_step_ms / 1000.0
        return self.step_ms(batch, total_context) * self.scale / 1000.0

    def step_ms(self, batch: float, total_context: float) -> float:
        spec = self.spec
        width = spec.verify_width
        tree = 1.0 + TOPK_VERIFY_COST * (spec.width - 1) if spec.algorithm == "DDTREE" else 1.0
        ms = STEP_BASE_MS + VERIFY_MS_PER_TOKEN * batch * width * tree
        ms += KV_MS_PER_TOKEN * total_context * (1.0 + 0.05 * (width - 1))
        if spec.enabled:
            avg_ctx = total_context / max(batch, 1)
            seen = (
                avg_ctx
                if spec.window is None or not spec.uses_window
                else min(avg_ctx, spec.window)
            )
            ms += DRAFT_BASE_MS + batch * (
                DRAFT_MS_PER_SEQ + DRAFT_MS_PER_WINDOW_TOKEN * seen * spec.num_draft_tokens / 16
            )
        return ms

    def sample_step(self, rng: random.Random, category: str, context: int) -> int:
        """Draft tokens accepted in one verify step (0..max_depth), bonus token excluded."""
        depth = self.spec.max_depth
        if depth == 0:
            return 0
        p = accept_probability(self.spec, category, context)
        # Geometric: successes before the first rejection, capped by the tree/chain depth.
        u = rng.random()
        if u <= 0.0:
            return depth
        k = int(math.log(u) / math.log(p))
        return min(depth, k)
