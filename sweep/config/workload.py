"""A sweep's traffic, decided on the controller: the user's dataset, sampled here so that only the
sample travels to the hosts (the bench parameters that say what every point is asked:
sweep/config/params.py bench_params).

`-e dataset=PATH` names a file on the controller (bench/datasets.py reads its three formats,
streamed); `dataset_sample=N` and `dataset_seed` pick N of its requests deterministically. The
sample is written once, content-addressed, to `<results>/.workloads/<digest>.jsonl` (the chat
JSONL format), and the bench parameters carry its digest: a point's identity (sweep/store/store.py)
holds the bench parameters, so an edited request that is sent re-measures every point, and an
unchanged sample reuses them. Every problem with the file is named here, before any host
is contacted (sweep.yml's first play runs `sweep check`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import conversation, datasets
from bench.conversation import Conversation
from bench.errors import BenchError
from bench.records import write_json
from sweep.layout import read_json

WORKLOADS = ".workloads"
FILES = "files"  # <results>/.workloads/files/<key>.json: which sample a dataset file gave
# A rendered conversation has at most one token per UTF-8 byte of its text (byte-level BPE and
# byte-fallback tokenizers alike), plus what the chat template adds: generously, this many per
# message and once. Used only to refuse a context no request can reach before any host changes;
# the bench names a closer miss on the host.
TEMPLATE_TOKENS_PER_MESSAGE = 64
TEMPLATE_TOKENS = 256


class WorkloadError(ValueError):
    """A bad dataset or dataset parameter; the message names it."""


@dataclass(frozen=True)
class Dataset:
    conversations: list[Conversation]
    digest: str
    total: int  # usable requests in the file
    skipped: int
    fmt: str
    sample: int | None
    seed: int

    def params(self) -> dict[str, Any]:
        """What the bench parameters (and so every point's identity) hold of it."""
        return {
            "digest": self.digest,
            "requests": len(self.conversations),
            "sample": self.sample,
            "seed": self.seed,
        }

    def sources(self) -> list[str]:
        return sorted({c.source for c in self.conversations})


def load(
    path: Any, sample: Any, seed: Any, fmt: Any, results_root: Path, contexts: list[int]
) -> Dataset:
    """The sample of the dataset at `path` (WorkloadError naming what is wrong, or a context of
    `contexts` none of its requests reaches: check_contexts), written under `results_root`
    (sample_file). A file whose path, size and modification time are those of an earlier load
    with the same sampling parameters is not read again: its sample is (every plan of a sweep
    asks; a large file takes a while to stream)."""
    n = _count("dataset_sample", sample, minimum=1)
    s = _count("dataset_seed", seed, minimum=0) or 0
    file = Path(str(path)).expanduser()
    fmt = str(fmt or "auto")
    key = _file_key(file, n, s, fmt)
    cached = _cached(results_root, key, n, s) if key else None
    if cached is not None:
        check_contexts(cached, contexts)
        return cached
    try:
        got = datasets.sample(file, n, s, fmt)
    except BenchError as e:
        raise WorkloadError(str(e)) from None
    ds = Dataset(
        got.conversations,
        conversation.digest(got.conversations),
        got.total,
        got.skipped,
        got.fmt,
        n,
        s,
    )
    check_contexts(ds, contexts)
    write(results_root, ds)
    if key:
        index = results_root / WORKLOADS / FILES / f"{key}.json"
        write_json(
            index, {"digest": ds.digest, "total": ds.total, "skipped": ds.skipped, "fmt": ds.fmt}
        )
    return ds


def _file_key(file: Path, n: int | None, seed: int, fmt: str) -> str | None:
    try:
        st = file.stat()
    except OSError:
        return None  # sample() names the problem
    ident = [str(file.resolve()), st.st_size, st.st_mtime_ns, n, seed, fmt]
    return hashlib.sha256(json.dumps(ident).encode()).hexdigest()[:32]


def _cached(results_root: Path, key: str, n: int | None, seed: int) -> Dataset | None:
    meta = read_json(results_root / WORKLOADS / FILES / f"{key}.json")
    if not meta:
        return None
    sample = results_root / WORKLOADS / f"{meta['digest']}.jsonl"
    try:
        conversations = list(datasets.read(sample, "chat"))
    except BenchError:
        return None
    if conversation.digest(conversations) != meta["digest"]:
        return None  # an edited sample is no cache
    return Dataset(
        conversations, meta["digest"], meta["total"], meta["skipped"], meta["fmt"], n, seed
    )


def _count(name: str, raw: Any, minimum: int) -> int | None:
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    text = str(raw).strip()
    if isinstance(raw, bool) or not text.isdigit() or int(text) < minimum:
        raise WorkloadError(f"{name}={raw}: not an integer >= {minimum}")
    return int(text)


def longest_tokens(conv: Conversation) -> int:
    """An upper bound of the conversation's rendered length (see TEMPLATE_TOKENS)."""
    text = sum(len(content.encode()) for _, content in conv.messages)
    return text + TEMPLATE_TOKENS_PER_MESSAGE * len(conv.messages) + TEMPLATE_TOKENS


def check_contexts(ds: Dataset, contexts: list[int]) -> None:
    """Refuses a context no request of the dataset can reach (conversations are cut to a
    context, never padded); 0 (natural) needs none."""
    bound = max(longest_tokens(c) for c in ds.conversations)
    too_long = [c for c in contexts if c and c > bound]
    if too_long:
        raise WorkloadError(
            f"contexts={','.join(map(str, too_long))}: no request of the dataset is long enough "
            f"(the longest of its {len(ds.conversations)} sampled requests has at most {bound} "
            "tokens once rendered); use shorter contexts, or contexts=natural to send them as "
            "they are"
        )


def sample_file(results_root: Path, ds: Dataset) -> Path:
    return results_root / WORKLOADS / f"{ds.digest}.jsonl"


def write(results_root: Path, ds: Dataset) -> Path:
    """The sample as chat JSONL, written once under its digest (never overwritten)."""
    path = sample_file(results_root, ds)
    if not path.is_file():
        datasets.write_jsonl(ds.conversations, path)  # atomic: a reader sees all or nothing
    return path
