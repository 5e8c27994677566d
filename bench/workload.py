"""The workload matrix: context length x load x output length x category x repetition.

A context or output length of 0 is `natural`: a chat-shaped prompt as its template renders it,
an output that ends where the model ends its turn (capped by the request's own max_tokens).

The load of a cell is either closed-loop, `concurrency` requests kept in flight (id
`...-c8-...`), or open-loop, requests sent at `request_rate` per second on a seeded schedule
(bench/arrivals.py; id `...-rate2.5-...`, with `-b<burstiness>` when it is not 1 and
`-mc<N>` under a cap of N in flight). `--concurrency` gives closed-loop cells and
`--request-rate` open-loop ones; a run may have both. In an open-loop cell `concurrency` is the
cap on requests in flight, 0 for none.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from dataclasses import asdict, dataclass

from bench.errors import BadArguments
from bench.prompt_sets import CATEGORIES, CHAT_CATEGORIES

NATURAL = 0


@dataclass(frozen=True)
class Cell:
    context: int
    concurrency: int
    output_len: int
    category: str
    repetition: int
    num_requests: int
    warmup: int
    request_rate: float | None = None  # open loop: requests per second; None: closed loop
    burstiness: float | None = None  # open loop: shape of the gamma gaps (1: Poisson)

    @property
    def open_loop(self) -> bool:
        return self.request_rate is not None

    @property
    def max_concurrency(self) -> int | None:
        """Open loop: the cap on requests in flight, None for none."""
        return (self.concurrency or None) if self.open_loop else None

    @property
    def load_label(self) -> str:
        if self.request_rate is None:
            return f"c{self.concurrency}"
        label = f"rate{num_label(self.request_rate)}"
        if self.burstiness is not None and self.burstiness != 1.0:
            label += f"-b{num_label(self.burstiness)}"
        return label + (f"-mc{self.concurrency}" if self.concurrency else "")

    @property
    def point_id(self) -> str:
        """The cell's measurement point, the same for all its repetitions."""
        return (
            f"ctx{size_label(self.context)}-{self.load_label}-out{size_label(self.output_len)}"
            f"-{self.category}"
        )

    @property
    def cell_id(self) -> str:
        return f"{self.point_id}-r{self.repetition}"

    def seed(self, base: int) -> int:
        """Deterministic per-cell seed: repetitions get different prompts, reruns the same."""
        return _digest_seed(f"{base}:{self.cell_id}")

    def arrival_seed(self, base: int) -> int:
        """Seed of an open-loop cell's schedule: the cell's without its rate, so every rate of
        a cell family gets the same pattern of gaps, scaled (arrivals.schedule): a capacity
        search's trials differ in their rate only, not in where Poisson's bursts fall."""
        family = (
            f"ctx{size_label(self.context)}-b{num_label(self.burstiness or 1.0)}"
            f"-out{size_label(self.output_len)}-{self.category}-r{self.repetition}"
        )
        return _digest_seed(f"{base}:arrivals:{family}")

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "cell_id": self.cell_id, "point_id": self.point_id}


def requests_for(concurrency: int, per_slot: int, minimum: int) -> int:
    """Requests per cell: scales with concurrency so every slot is reused `per_slot` times."""
    return max(minimum, concurrency * per_slot)


def open_loop_requests(rate: float, seconds: float, minimum: int) -> int:
    """Requests of an open-loop cell: `seconds` of arrivals at `rate`, at least `minimum`."""
    return max(minimum, math.ceil(rate * seconds))


def build_matrix(
    contexts: list[int],
    concurrencies: list[int],
    output_lens: list[int],
    categories: list[str],
    repetitions: int,
    per_slot: int = 4,
    min_requests: int = 8,
    warmup: int = 1,
    request_rates: list[float] | None = None,
    burstiness: float = 1.0,
    max_concurrency: int | None = None,
    open_loop_seconds: float = 60.0,
) -> list[Cell]:
    """Cells in run order: repetitions outermost, so an interrupted run has whole sweeps.
    Per context, the closed-loop cells (`concurrencies`) come first, then the open-loop ones
    (`request_rates`)."""
    rates = request_rates or []
    if not concurrencies and not rates:
        raise BadArguments("give --concurrency (closed loop), --request-rate (open loop) or both")
    for name, values, natural in (
        ("--contexts", contexts, True),
        ("--concurrency", concurrencies or [1], False),  # may be empty beside request rates
        ("--output-len", output_lens, True),
    ):
        least = NATURAL if natural else 1
        if not values or any(v < least for v in values):
            what = "positive integers or natural" if natural else "positive integers"
            raise BadArguments(f"{name} needs {what}, got {values}")
    for name, value in [
        *(("--request-rate", r) for r in rates),
        ("--burstiness", burstiness),
        ("--open-loop-seconds", open_loop_seconds),
    ]:
        check_positive(name, value)
    if max_concurrency is not None and max_concurrency < 1:
        raise BadArguments(f"--max-concurrency must be a positive integer, got {max_concurrency}")
    bad = [c for c in categories if c not in CATEGORIES]
    if not categories or bad:
        raise BadArguments(f"--categories must be among {', '.join(CATEGORIES)}; got {bad}")
    raw = [c for c in categories if c not in CHAT_CATEGORIES]
    if NATURAL in contexts and raw:
        raise BadArguments(
            f"--contexts natural needs chat-shaped categories ({', '.join(CHAT_CATEGORIES)}): "
            f"{', '.join(raw)} have no natural length"
        )
    if repetitions < 1 or per_slot < 1 or min_requests < 1 or warmup < 0:
        raise BadArguments("--repetitions, --requests-per-slot, --min-requests must be >= 1")
    # (concurrency, requests, rate, burstiness) of each load
    loads: list[tuple[int, int, float | None, float | None]] = [
        (c, requests_for(c, per_slot, min_requests), None, None) for c in concurrencies
    ]
    loads += [
        (
            max_concurrency or 0,
            open_loop_requests(r, open_loop_seconds, min_requests),
            float(r),
            float(burstiness),
        )
        for r in rates
    ]
    return [
        Cell(
            context=ctx,
            concurrency=conc,
            output_len=out,
            category=cat,
            repetition=rep,
            num_requests=n,
            warmup=warmup,
            request_rate=rate,
            burstiness=shape,
        )
        for rep, cat, ctx, (conc, n, rate, shape), out in itertools.product(
            range(repetitions), categories, contexts, loads, output_lens
        )
    ]


def size_label(n: int) -> str:
    return "natural" if n == NATURAL else str(n)


def num_label(x: float) -> str:
    """A rate or shape in a cell id: the shortest form that reads back as the same float."""
    text = repr(float(x))
    return text[:-2] if text.endswith(".0") else text


def check_positive(name: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise BadArguments(f"{name} must be a positive number, got {value!r}")


def parse_float(text: str, name: str) -> float:
    """A positive finite number given on the command line; BadArguments naming it otherwise."""
    try:
        value = float(text)
    except ValueError:
        raise BadArguments(f"{name} must be a positive number, got {text!r}") from None
    check_positive(name, value)
    return value


def parse_float_list(text: str, name: str) -> list[float]:
    """ "1,2.5,10" -> [1.0, 2.5, 10.0]: positive finite numbers, each named when it is not."""
    values = [parse_float(part.strip(), name) for part in text.split(",") if part.strip()]
    if not values:
        raise BadArguments(f"{name} needs positive numbers, got {text!r}")
    return values


def parse_int_list(text: str, natural: bool = False) -> list[int]:
    """ "512,8192,32k" -> [512, 8192, 32768]; with `natural`, "natural" -> 0."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip().lower()
        if not part:
            continue
        if natural and part == "natural":
            out.append(NATURAL)
            continue
        mult = 1024 if part.endswith("k") else 1
        try:
            value = int(part.rstrip("k")) * mult
        except ValueError as e:
            raise BadArguments(f"not an integer list: {text!r}") from e
        if natural and value == NATURAL:  # 0 is how natural is kept, never how it is said
            raise BadArguments(f"{text!r}: lengths are positive integers or natural")
        out.append(value)
    return out


def _digest_seed(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
