"""Open-loop arrival schedules: when each request of a cell is due, as offsets from its start.

Gaps between arrivals are gamma-distributed with shape `burstiness` and mean 1/rate, the
convention of sglang.bench_serving and vLLM's `--burstiness`: burstiness 1 is a Poisson
process (exponential gaps), below 1 burstier, above 1 more regular (coefficient of variation
1/sqrt(burstiness)). The first request is due at offset 0.

A schedule is a pure function of (seed, rate, burstiness, n): every server configuration gets
the same arrival times, so paired comparisons hold. Its span is exactly (n - 1) / rate: a cell
offers the rate it names (schedule()). It is drawn from `random.Random` and uses
only its `random()` method, the one output Python promises to keep for a given integer seed
across versions (its gamma and normal samplers carry no such promise, and numpy's Generator
may change its streams between releases; numpy is not a dependency of the bench either): a
point recorded under one Python and its baseline measured later under another still get the
same arrivals. Samplers on top of it: inverse transform for exponential gaps, Marsaglia and
Tsang's method for gamma (with the U^(1/k) boost for shapes below 1), Box-Muller normals.
"""

from __future__ import annotations

import hashlib
import math
import random


def schedule(n: int, rate: float, burstiness: float = 1.0, seed: int = 0) -> list[float]:
    """Offsets in seconds of `n` arrivals at `rate` per second, non-decreasing, the first 0."""
    if n < 0:
        raise ValueError(f"n must be 0 or more, got {n}")
    for name, value in (("rate", rate), ("burstiness", burstiness)):
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a positive number, got {value}")
    rng = random.Random(stream_seed(seed))
    gaps = [_gamma(rng, burstiness) for _ in range(n - 1)]
    # Scaled so the n - 1 gaps span exactly (n - 1) / rate: the process conditioned on its
    # count (exponential gaps so normalized are a Poisson process's uniform spacings). Left
    # free, a schedule of 200 arrivals misses its rate by 7 % at one standard deviation, and
    # a cell at "20 req/s" would have offered 18.6 or 21.4. The same seed at another rate is
    # the same pattern.
    total = sum(gaps)
    scale = (n - 1) / (rate * total) if total > 0 else 0.0
    out = [0.0] if n else []
    t = 0.0
    for gap in gaps:
        t += gap * scale
        out.append(t)
    return out


def stream_seed(seed: int) -> int:
    """The generator's seed, derived from the cell's: the prompts are drawn from the same cell
    seed, and arrivals must not be correlated with them."""
    return int.from_bytes(hashlib.sha256(f"arrivals:{seed}".encode()).digest()[:8], "big")


def _uniform(rng: random.Random) -> float:
    return 1.0 - rng.random()  # (0, 1]: safe under log and powers


def _normal(rng: random.Random) -> float:
    return math.sqrt(-2.0 * math.log(_uniform(rng))) * math.cos(2.0 * math.pi * rng.random())


def _gamma(rng: random.Random, shape: float) -> float:
    """One gamma(shape, scale 1) variate."""
    if shape == 1.0:
        return -math.log(_uniform(rng))
    if shape < 1.0:
        return _gamma(rng, shape + 1.0) * math.pow(_uniform(rng), 1.0 / shape)
    d = shape - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x = _normal(rng)
        v = math.pow(1.0 + c * x, 3)
        if v <= 0.0:
            continue
        if math.log(_uniform(rng)) < 0.5 * x * x + d - d * v + d * math.log(v):
            return d * v
