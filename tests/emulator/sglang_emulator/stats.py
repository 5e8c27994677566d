"""Server-wide counters: /metrics, /server_info internal_states, reset by /flush_cache."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

TTFT_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 40.0, 60.0, 120.0)
ITL_BUCKETS = (0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.15, 0.2, 0.4, 1.0)
E2E_BUCKETS = (0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 320.0)


@dataclass
class Histogram:
    buckets: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    n: int = 0

    def __post_init__(self) -> None:
        self.counts = [0] * (len(self.buckets) + 1)

    def observe(self, value: float, times: int = 1) -> None:
        self.counts[bisect.bisect_left(self.buckets, value)] += times
        self.total += value * times
        self.n += times


@dataclass
class ServerStats:
    generation_tokens: int = 0
    prompt_tokens: int = 0
    verify_calls: int = 0
    # Since start-up or the last /flush_cache (SGLang's cum_spec_accept_*).
    spec_accepted_tokens: int = 0
    spec_verify_calls: int = 0
    spec_correct_drafts: int = 0
    spec_proposed_drafts: int = 0
    last_gen_throughput: float = 0.0
    ttft: Histogram = field(default_factory=lambda: Histogram(TTFT_BUCKETS))
    itl: Histogram = field(default_factory=lambda: Histogram(ITL_BUCKETS))
    e2e: Histogram = field(default_factory=lambda: Histogram(E2E_BUCKETS))

    def reset_accept(self) -> None:
        self.spec_accepted_tokens = 0
        self.spec_verify_calls = 0
        self.spec_correct_drafts = 0
        self.spec_proposed_drafts = 0

    @property
    def avg_accept_length(self) -> float | None:
        if self.spec_verify_calls == 0:
            return None
        return self.spec_accepted_tokens / self.spec_verify_calls

    @property
    def accept_rate(self) -> float:
        if self.spec_proposed_drafts == 0:
            return 0.0
        return self.spec_correct_drafts / self.spec_proposed_drafts
