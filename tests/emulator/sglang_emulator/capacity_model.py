"""Analytic load model of the emulator: running batch, TPOT and TTFT at a request rate,
capacity under a latency SLO, and the crossover load where speculation stops paying.

Everything is in wall-clock units: milliseconds, and requests per second (lambda) of Poisson
arrivals. s = SGLANG_EMU_TIME_SCALE; S(b, c) = perf_model's step_ms(b, b c) (b sequences of
average context c); P(n) = 15 + 0.06 n, a prefill batch of n new tokens (prefix cache cold).
A workload: one emulator domain (perf_model.P_ACCEPT's key), prompts of C tokens, outputs of
exactly L tokens (ignore_eos); M = L - 1 tokens come from decode steps (the prefill yields the
first).

1. Steps per request. One verify step yields X = min(K + 1, tokens left) tokens, K geometric
   with the acceptance probability p = accept_probability(spec, domain, C + L/2), capped at the
   depth (off: X = 1). N = steps to produce M tokens, its distribution by dynamic programming
   (exact); the effective accept length alpha = M / E[N] (below expected_accept_length: the
   last step is cut at L).
2. Cycle. The scheduler prefills whatever waits, then runs one decode step of every running
   request. Per cycle of length tau the prefill costs, on average,
       pi = s (15 (1 - exp(-lambda tau)) + 0.06 C lambda tau)
   (Poisson arrivals during the previous cycle, one batch), and the step a request sees is
       step = s S(1 + m, C + L/2)
   with m the mean number of OTHER running requests (Poisson arrivals: a request finds the
   time average, PASTA), so tau = step + pi.
3. Running batch (Little's law). A request runs from its first token for N steps and the
   prefills of N - 1 cycles: D = E[N] tau - pi, and m = lambda D. Solved by bisection on m
   (tau by bisection inside); no root, or m >= max running requests: overloaded (inf).
4. TPOT (a request's (latency - TTFT) / (L - 1), as the bench computes it):
       TPOT_q = (N_q tau - pi) / M, N_q the q-quantile of N (q = 0.5: the median) on its
   mid-distribution function (linear between the values of N, each at F(n-1) + P(n)/2).
   At low load TPOT -> s S(1, .) / alpha.
5. TTFT. An arrival finds the server busy with probability 1 - exp(-m) (the running count is
   about Poisson(m)): it waits for the current cycle to end, uniform on [0, tau] (so tau/2 on
   average), then its prefill batch with the others that came in the same cycle,
   1 + lambda tau requests on average; on an idle server it is prefilled alone at once:
       TTFT_q = w_q + s P(C (1 + (1 - exp(-m)) lambda tau)),
       w_q = 0 if q <= exp(-m), else tau (q - exp(-m)) / (1 - exp(-m)).
   Left out: the spread of the running count over a request's life (TPOT percentiles above
   the median come out low, ~5-10 % at p90), prefill batches over --chunked-prefill-size, and
   queueing once the running count meets --max-running-requests.
6. Capacity lambda*: the highest rate meeting TTFT_q <= ttft_ms and TPOT_q <= tpot_ms; both grow
   with lambda, so bisection on [0, the overload rate).
7. Speed-up(lambda) = TPOT_base / TPOT_spec at the same rate and workload (median TPOT, the
   report's speedup_tpot: "slower than the baseline" means a higher median TPOT). Crossover
   lambda_x: the lowest rate where it falls to 1, searched below the speculative point's
   overload rate (or a given limit, e.g. its capacity); None when it stays above 1 there.

SGLANG_EMU_FIXED_STEP_MS / FIXED_TTFT_MS / FIXED_ACCEPT replace S, P and X as in the emulator.
Pure functions: no I/O, no clock.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

from .perf_model import (
    PREFILL_BASE_MS,
    PREFILL_MS_PER_TOKEN,
    PerfModel,
    SpecShape,
    accept_probability,
)
from .settings import Settings

BASELINE = SpecShape()
_BISECT_STEPS = 40  # halvings of a bracket: 1e-12 of its width


@dataclass(frozen=True)
class Workload:
    category: str  # the emulator's domain of the prompts (perf_model.P_ACCEPT)
    context: int  # prompt tokens
    output_len: int  # output tokens per request (fixed length, ignore_eos)


@dataclass(frozen=True)
class Slo:
    ttft_ms: float
    tpot_ms: float
    quantile: float = 0.5  # both figures at this percentile of the requests (0.5: median)


@dataclass(frozen=True)
class LoadPoint:
    """The model's steady state at one request rate (wall-clock ms)."""

    rate: float
    others: float  # m: mean number of other running requests a request shares its steps with
    step_ms: float
    prefill_ms_per_cycle: float
    cycle_ms: float
    steps: float  # E[N]
    accept_length: float  # effective: (L - 1) / E[N]
    tpot_ms: float
    ttft_ms: float

    @property
    def overloaded(self) -> bool:
        return math.isinf(self.tpot_ms)


def default_max_running(spec: SpecShape) -> int:
    """--max-running-requests when not given (flags.resolve): 48 for DFLASH/DDTREE, else 256."""
    return 48 if spec.algorithm in ("DFLASH", "DDTREE") else 256


# -- steps per request ----------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _step_distribution(p: float, depth: int, tokens: int) -> tuple[float, ...]:
    """P(N = n), n = 0.., N the verify steps to emit `tokens` tokens when each step gives
    min(K + 1, left), P(K >= k) = p^k for k <= depth (the emulator's sample_step)."""
    if tokens <= 0:
        return (1.0,)
    if depth <= 0 or p <= 0.0:
        return (0.0,) * tokens + (1.0,)
    gains = [p**k * (1.0 - p) for k in range(depth)] + [p**depth]  # P(K = k), k = 0..depth
    dist = [0.0]
    alive = {0: 1.0}  # tokens emitted -> probability, not finished yet
    while alive:
        nxt: dict[int, float] = {}
        done = 0.0
        for emitted, prob in alive.items():
            for k, g in enumerate(gains):
                t = emitted + k + 1
                if t >= tokens:
                    done += prob * g
                else:
                    nxt[t] = nxt.get(t, 0.0) + prob * g
        dist.append(done)
        alive = {t: q for t, q in nxt.items() if q > 1e-13}
    return tuple(dist)


def _fixed_steps(accept: float, tokens: int) -> int:
    """Steps under SGLANG_EMU_FIXED_ACCEPT (scheduler: carry-over, at least one per step)."""
    carry, emitted, steps = 0.0, 0, 0
    while emitted < tokens:
        carry += accept
        n = max(1, int(carry))
        carry -= n
        emitted += n
        steps += 1
    return steps


def _mean_context(w: Workload) -> float:
    return w.context + w.output_len / 2.0


def _distribution(spec: SpecShape, w: Workload, settings: Settings) -> tuple[float, ...]:
    tokens = w.output_len - 1
    if not spec.enabled:
        return (0.0,) * tokens + (1.0,)
    if settings.fixed_accept is not None:
        n = _fixed_steps(settings.fixed_accept, tokens)
        return (0.0,) * n + (1.0,)
    p = accept_probability(spec, w.category, round(_mean_context(w)))
    return _step_distribution(p, spec.max_depth, tokens)


def mean_steps(spec: SpecShape, w: Workload, settings: Settings) -> float:
    return sum(n * q for n, q in enumerate(_distribution(spec, w, settings)))


def steps_quantile(spec: SpecShape, w: Workload, settings: Settings, q: float) -> float:
    """The q-quantile of N on its mid-distribution function: each value n sits at
    F(n - 1) + P(n) / 2, linear in between (clamped at the ends). TPOT is continuous (the
    cycle varies from request to request), so the median request's steps lie between two
    values of N rather than on the higher one; a constant N stays itself at every q."""
    dist = _distribution(spec, w, settings)
    atoms: list[tuple[float, float]] = []  # (mid-CDF, n)
    cum = 0.0
    for n, prob in enumerate(dist):
        if prob > 0.0:
            atoms.append((cum + prob / 2.0, float(n)))
        cum += prob
    if q <= atoms[0][0]:
        return atoms[0][1]
    for (f0, n0), (f1, n1) in itertools.pairwise(atoms):
        if q <= f1:
            return n0 + (n1 - n0) * (q - f0) / (f1 - f0)
    return atoms[-1][1]


def accept_length(spec: SpecShape, w: Workload, settings: Settings) -> float:
    """Effective tokens per verify step over a request's decode: (L - 1) / E[N]."""
    return (w.output_len - 1) / mean_steps(spec, w, settings)


# -- one load point ---------------------------------------------------------------------------


def _step_ms(model: PerfModel, batch: float, context: float) -> float:
    return model.step_seconds(batch, batch * context) * 1000.0


def _prefill_ms(settings: Settings, batches: float, new_tokens: float) -> float:
    """Expected prefill time per cycle: `batches` prefill batches (a probability) of
    `new_tokens` new tokens in all."""
    if settings.fixed_ttft_ms is not None:
        return settings.fixed_ttft_ms * batches
    return settings.time_scale * (PREFILL_BASE_MS * batches + PREFILL_MS_PER_TOKEN * new_tokens)


def _cycle_ms(step: float, rate_ms: float, w: Workload, settings: Settings) -> float:
    """tau solving tau = step + pi(tau); inf when prefill alone outgrows the time."""

    def excess(tau: float) -> float:
        arrivals = rate_ms * tau
        return step + _prefill_ms(settings, -math.expm1(-arrivals), arrivals * w.context) - tau

    lo, hi = step, 2.0 * step
    while excess(hi) > 0:
        hi *= 2.0
        if hi > 1e9:
            return math.inf
    for _ in range(_BISECT_STEPS):
        mid = (lo + hi) / 2.0
        if excess(mid) > 0:
            lo = mid
        else:
            hi = mid
    return hi


def _overloaded(rate: float, steps: float, accept: float) -> LoadPoint:
    inf = math.inf
    return LoadPoint(rate, inf, inf, inf, inf, steps, accept, inf, inf)


def load_point(
    spec: SpecShape,
    w: Workload,
    rate: float,
    settings: Settings | None = None,
    max_running: int | None = None,
    quantile: float = 0.5,
) -> LoadPoint:
    """The steady state at `rate` requests per second (formulas 2-5 of the module docstring)."""
    s = settings or Settings()
    cap = max_running or default_max_running(spec)
    model = PerfModel(s, spec)
    mean_n = mean_steps(spec, w, s)
    n_q = steps_quantile(spec, w, s, quantile)
    accept = (w.output_len - 1) / mean_n
    rate_ms = rate / 1000.0
    ctx = _mean_context(w)

    def state(m: float) -> tuple[float, float, float]:
        step = _step_ms(model, 1.0 + m, ctx)
        tau = _cycle_ms(step, rate_ms, w, s)
        return step, tau, tau - step

    def excess(m: float) -> float:  # lambda D(m) - m: positive below the fixed point
        _, tau, pi = state(m)
        return rate_ms * (mean_n * tau - pi) - m

    if rate <= 0.0:
        m = 0.0
    else:
        lo, hi = 0.0, float(cap)
        if excess(hi) > 0:
            return _overloaded(rate, mean_n, accept)
        for _ in range(_BISECT_STEPS):
            mid = (lo + hi) / 2.0
            if excess(mid) > 0:
                lo = mid
            else:
                hi = mid
        m = hi
    step, tau, pi = state(m)
    if math.isinf(tau):
        return _overloaded(rate, mean_n, accept)
    tpot = (n_q * tau - pi) / (w.output_len - 1)
    idle = math.exp(-m)
    wait = 0.0 if quantile <= idle else tau * (quantile - idle) / (1.0 - idle)
    batch_tokens = w.context * (1.0 + (1.0 - idle) * rate_ms * tau)
    ttft = wait + _prefill_ms(s, 1.0, batch_tokens)
    return LoadPoint(rate, m, step, pi, tau, mean_n, accept, tpot, ttft)


# -- capacity, speed-up, crossover ------------------------------------------------------------


def overload_rate(
    spec: SpecShape, w: Workload, settings: Settings | None = None, max_running: int | None = None
) -> float:
    """The lowest rate the model calls overloaded (the running count reaches the cap, or
    prefill and decode outgrow the time)."""
    lo, hi = 0.0, 1.0
    while not load_point(spec, w, hi, settings, max_running).overloaded:
        lo, hi = hi, hi * 2.0
        if hi > 1e7:
            return math.inf
    for _ in range(_BISECT_STEPS):
        mid = (lo + hi) / 2.0
        if load_point(spec, w, mid, settings, max_running).overloaded:
            hi = mid
        else:
            lo = mid
    return lo


def meets(point: LoadPoint, slo: Slo) -> bool:
    return point.ttft_ms <= slo.ttft_ms and point.tpot_ms <= slo.tpot_ms


def capacity(
    spec: SpecShape,
    w: Workload,
    slo: Slo,
    settings: Settings | None = None,
    max_running: int | None = None,
) -> float:
    """lambda*: the highest rate (requests/s) whose TTFT and TPOT at slo.quantile meet the
    SLO; 0.0 when even an unloaded server misses it."""

    def ok(rate: float) -> bool:
        return meets(load_point(spec, w, rate, settings, max_running, slo.quantile), slo)

    if not ok(0.0):
        return 0.0
    lo, hi = 0.0, overload_rate(spec, w, settings, max_running)
    if ok(hi * (1.0 - 1e-9)):
        return hi
    for _ in range(_BISECT_STEPS):
        mid = (lo + hi) / 2.0
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def speedup(
    spec: SpecShape,
    w: Workload,
    rate: float,
    settings: Settings | None = None,
    baseline: SpecShape = BASELINE,
) -> float:
    """Median TPOT of the baseline over the speculative point's, at the same rate."""
    base = load_point(baseline, w, rate, settings).tpot_ms
    point = load_point(spec, w, rate, settings).tpot_ms
    if math.isinf(point):
        return 0.0
    return base / point


def crossover(
    spec: SpecShape,
    w: Workload,
    settings: Settings | None = None,
    below: float | None = None,
    baseline: SpecShape = BASELINE,
) -> float | None:
    """lambda_x: the lowest rate where the speculative point's median TPOT reaches the
    baseline's, searched below `below` (default: the point's overload rate); None if none."""
    limit = overload_rate(spec, w, settings) if below is None else below
    if math.isinf(limit):
        return None
    if speedup(spec, w, 0.0, settings, baseline) <= 1.0:
        return 0.0
    # The speed-up falls with the rate; a scan guards the bisection against a flat start.
    grid = [limit * i / 64 for i in range(1, 65)]
    grid[-1] = limit * (1.0 - 1e-9)
    lo = 0.0
    for hi in grid:
        if speedup(spec, w, hi, settings, baseline) <= 1.0:
            break
        lo = hi
    else:
        return None
    for _ in range(_BISECT_STEPS):
        mid = (lo + hi) / 2.0
        if speedup(spec, w, mid, settings, baseline) > 1.0:
            lo = mid
        else:
            hi = mid
    return hi


# -- the demo deployment ----------------------------------------------------------------------

DEMO_BLOCK = 16  # roles/sglang_emulator: the demo drafter's block_size
DEMO_WINDOW = 2048  # inventory/demo: sglang_server_window


def demo_point(budget: int | None = None, topk: int | None = None) -> SpecShape:
    """The demo host's server for a sweep point: DDTREE with the block-16 drafter, window 2048,
    topk as SGLANG_DDTREE_MAX_TOPK (the ddtree dialect); budget None: the baseline."""
    if budget is None:
        return BASELINE
    return SpecShape(
        algorithm="DDTREE",
        num_draft_tokens=DEMO_BLOCK,
        budget=budget,
        window=DEMO_WINDOW,
        max_topk=topk if topk is not None else 6,
    )


def demo_capacity(
    slo: Slo,
    w: Workload,
    budget: int | None = None,
    topk: int | None = None,
    time_scale: float = 1.0,
) -> float:
    """Analytic capacity (requests/s) of a demo sweep point (budget None: the baseline) at
    SGLANG_EMU_TIME_SCALE `time_scale`."""
    return capacity(demo_point(budget, topk), w, slo, Settings(time_scale=time_scale))


def demo_crossover(
    w: Workload, budget: int, topk: int | None = None, time_scale: float = 1.0
) -> float | None:
    """Analytic crossover rate (requests/s) of a demo DDTREE point against the baseline."""
    return crossover(demo_point(budget, topk), w, Settings(time_scale=time_scale))
