"""What a failed start says about the points not started yet. Pure logic, no I/O.

A start fails for one of five causes (failure.json `cause`, read from the journal by
module_utils/sglang_failure_cause.py): out of memory, a rejected flag, a crash (an exception),
a readiness timeout, or the host lost. Two of them say something about other points:

- Out of memory. The memory a speculative server takes beside the target's weights and KV pool
  grows with the draft budget (tokens in the tree of every request in the batch), the topk (the
  tree's width: more candidates per position), the drafter's sliding window (its KV cache) and
  the largest batch the server captures CUDA graphs for (a role setting, part of the identity).
  None of them ever shrinks it, so a point that ran out of memory rules out every point of the
  same algorithm and environment that is at least as large on every one of those axes, on the
  same hardware class, build and model (one sweep's hosts of one class; across sweeps, one
  store identity less the point's own flags: sweep/store/store.py). Where memory is flat along an
  axis (a build whose drafter keeps a fixed cache whatever the window) the rule still holds: the
  larger point takes the same memory and fails the same way. It breaks where memory FALLS as an
  axis rises (a build that switches to a cheaper layout past some window or width) and where an
  out-of-memory failure is not the configuration's (another process holding the card's memory):
  then a point that would run is ruled out. `-e fresh=true` forgets the verdicts of earlier
  sweeps.
- A rejected flag. The build refused a flag the role rendered: every point that renders that
  flag is refused too, whatever its size.

A crash, a readiness timeout or a lost host says nothing about another point: the point is tried
once more on another host where there is one, then recorded failed (sweep/cli/plan.py).

A start that ran says how close it came to the edge: sweep/search/memory.py.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from sweep.config.points import Point

CLASSIFIER = Path(__file__).resolve().parents[2] / "module_utils" / "sglang_failure_cause.py"


@functools.cache
def classifier() -> ModuleType:
    """module_utils/sglang_failure_cause.py, the project's one classifier and the causes' words
    (it runs on the host inside sglang_ready too), loaded by path: no ansible import in it."""
    spec = importlib.util.spec_from_file_location("sglang_failure_cause", CLASSIFIER)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


OUT_OF_MEMORY: str = classifier().OUT_OF_MEMORY
REJECTED_FLAG: str = classifier().REJECTED_FLAG
CRASH: str = classifier().CRASH
READINESS_TIMEOUT: str = classifier().READINESS_TIMEOUT
HOST_LOST: str = classifier().HOST_LOST
CAUSES: tuple[str, ...] = classifier().CAUSES
# the causes that say something about other points: never retried, they rule points out
TEACHING = (OUT_OF_MEMORY, REJECTED_FLAG)
MEMORY_AXES = ("budget", "topk", "window")


@dataclass(frozen=True)
class Failure:
    """A failed start: the point, its cause (one of CAUSES), the hardware class it failed on
    ("" when unknown) and, for a rejected flag, the flags the build refused."""

    point: Point
    cause: str
    where: str = ""
    flags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.cause not in CAUSES:
            raise ValueError(f"cause={self.cause!r}: must be one of {', '.join(CAUSES)}")


@dataclass(frozen=True)
class RuledOut:
    """A point not started because of `failure`."""

    point_id: str
    failure: Failure

    def line(self) -> str:
        """The report's words for it."""
        f = self.failure
        on = f" on class {f.where}" if f.where else ""
        if f.cause == OUT_OF_MEMORY:
            return f"not run: at least as large as {f.point.point_id}, which ran out of memory{on}"
        refused = ", ".join(f.flags) or "a flag"
        return f"not run: renders {refused}, which {f.point.point_id} had refused{on}"

    def to_dict(self) -> dict[str, object]:
        f = self.failure
        return {
            "point": self.point_id,
            "by": f.point.point_id,
            "cause": f.cause,
            "where": f.where,
            "flags": list(f.flags),
            "why": self.line(),
        }


def at_least_as_large(p: Point, failed: Point) -> bool:
    """Whether `p` takes at least the memory `failed` took: the same algorithm, environment and
    class pin, and no smaller on any memory axis. A baseline (no speculation) is never."""
    if p.is_baseline or failed.is_baseline:
        return False
    if (p.algorithm, p.env, p.pin) != (failed.algorithm, failed.env, failed.pin):
        return False
    return all(getattr(p, a) >= getattr(failed, a) for a in MEMORY_AXES)


def rules_out(
    failure: Failure, p: Point, flags_of: Callable[[Point], Collection[str] | None] | None = None
) -> bool:
    """Whether `failure` rules out `p` (never the failed point itself). A rejected flag rules out
    the points whose rendered flags (`flags_of`: None where unknown) hold one it refused."""
    if p.point_id == failure.point.point_id:
        return False
    if failure.cause == OUT_OF_MEMORY:
        return at_least_as_large(p, failure.point)
    if failure.cause == REJECTED_FLAG and failure.flags and flags_of is not None:
        rendered = flags_of(p)
        return rendered is not None and any(f in rendered for f in failure.flags)
    return False


def ruled_out(
    points: Iterable[Point],
    failures: Sequence[Failure],
    flags_of: Callable[[Point], Collection[str] | None] | None = None,
) -> dict[str, RuledOut]:
    """point id -> the first failure (in the order given) that rules the point out. A point
    that failed itself is not in it."""
    failed = {f.point.point_id for f in failures}
    out: dict[str, RuledOut] = {}
    for p in points:
        if p.point_id in failed:
            continue
        for f in failures:
            if rules_out(f, p, flags_of):
                out[p.point_id] = RuledOut(p.point_id, f)
                break
    return out


def dominated(points: Iterable[Point]) -> Callable[[str], frozenset[str]]:
    """For a search whose every failure is out of memory (the benchmark's edge surfaces): the
    points a failure at a point id rules out."""
    by_id = {p.point_id: p for p in points}

    def rule(pid: str) -> frozenset[str]:
        f = Failure(by_id[pid], OUT_OF_MEMORY)
        return frozenset(q for q, p in by_id.items() if rules_out(f, p))

    return rule


def retry_elsewhere(cause: str | None, attempts: int, other_hosts: int) -> bool:
    """Whether a point that failed `attempts` times in this invocation, the last with `cause`,
    is tried once more: not for a cause that teaches (it would fail again), only once, and only
    where another host can take it."""
    return cause not in TEACHING and attempts < 2 and other_hosts > 0
