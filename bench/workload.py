"""The workload matrix: context length x concurrency x output length x category x repetition.

A context or output length of 0 is `natural`: a chat-shaped prompt as its template renders it,
an output that ends where the model ends its turn (capped by the request's own max_tokens).
"""

from __future__ import annotations

import hashlib
import itertools
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

    @property
    def point_id(self) -> str:
        """The cell's measurement point, the same for all its repetitions."""
        return (
            f"ctx{size_label(self.context)}-c{self.concurrency}-out{size_label(self.output_len)}"
            f"-{self.category}"
        )

    @property
    def cell_id(self) -> str:
        return f"{self.point_id}-r{self.repetition}"

    def seed(self, base: int) -> int:
        """Deterministic per-cell seed: repetitions get different prompts, reruns the same."""
        digest = hashlib.sha256(f"{base}:{self.cell_id}".encode()).digest()
        return int.from_bytes(digest[:8], "big")

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "cell_id": self.cell_id, "point_id": self.point_id}


def requests_for(concurrency: int, per_slot: int, minimum: int) -> int:
    """Requests per cell: scales with concurrency so every slot is reused `per_slot` times."""
    return max(minimum, concurrency * per_slot)


def build_matrix(
    contexts: list[int],
    concurrencies: list[int],
    output_lens: list[int],
    categories: list[str],
    repetitions: int,
    per_slot: int = 4,
    min_requests: int = 8,
    warmup: int = 1,
) -> list[Cell]:
    """Cells in run order: repetitions outermost, so an interrupted run has whole sweeps."""
    for name, values, natural in (
        ("--contexts", contexts, True),
        ("--concurrency", concurrencies, False),
        ("--output-len", output_lens, True),
    ):
        least = NATURAL if natural else 1
        if not values or any(v < least for v in values):
            what = "positive integers or natural" if natural else "positive integers"
            raise BadArguments(f"{name} needs {what}, got {values}")
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
    return [
        Cell(
            context=ctx,
            concurrency=conc,
            output_len=out,
            category=cat,
            repetition=rep,
            num_requests=requests_for(conc, per_slot, min_requests),
            warmup=warmup,
        )
        for rep, cat, ctx, conc, out in itertools.product(
            range(repetitions), categories, contexts, concurrencies, output_lens
        )
    ]


def size_label(n: int) -> str:
    return "natural" if n == NATURAL else str(n)


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
