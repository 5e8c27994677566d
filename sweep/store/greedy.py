"""The greedy-output check on the controller: every speculative point's temperature-0 answers
(bench/greedy.py, `records/greedy.json`) against the baseline's of the same build and hardware
class, token by token.

Per point: `identical` (answers whose output ids equal the baseline's), `identical_share`,
`mean_common_prefix` (tokens both share from the start, averaged over the prompts) and
`mean_prefix_share` (that prefix over the longer of the two answers). A point PASSES when its
identical share is at least `greedy_match_min` (MATCH_MIN by default: the noise floor measured
on the real server and the reasoning are in docs/greedy-check.md). A point whose answers cannot
be compared (no baseline of its class, no greedy.json on either side, another prompt set) is
`unchecked`: the report says so, and `sweep winner`/deploy refuse it unless greedy_match_min=0.
The report never calls a point that fails a winner.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from sweep import layout

GREEDY_FILE = "greedy.json"  # bench.greedy.GREEDY_FILE, under the point's records/
MATCH_MIN = 0.75


@dataclass(frozen=True)
class Verdict:
    point: str
    status: str  # reference | pass | fail | unchecked
    baseline: str | None = None
    compared: int = 0
    identical: int = 0
    mean_common_prefix: float | None = None
    mean_prefix_share: float | None = None
    why: str = ""

    @property
    def identical_share(self) -> float | None:
        return self.identical / self.compared if self.compared else None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "identical_share": self.identical_share}

    def figures(self) -> str:
        if not self.compared:
            return self.why
        return (
            f"{self.identical}/{self.compared} outputs identical to {self.baseline}'s "
            f"({self.identical_share:.0%}), mean common prefix {self.mean_common_prefix:.1f} "
            f"tokens ({self.mean_prefix_share:.0%} of the longer answer)"
        )


def answers_of(point_dir: Path) -> dict[str, Any] | None:
    return layout.read_json(point_dir / "records" / GREEDY_FILE)


def _prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def compare(
    point: str, answers: dict[str, Any], baseline: str, reference: dict[str, Any], minimum: float
) -> Verdict:
    """The point's answers against the baseline's; `minimum` is greedy_match_min."""
    if answers.get("params") != reference.get("params"):
        return Verdict(
            point, "unchecked", baseline, why=f"its greedy set differs from {baseline}'s"
        )
    mine = answers.get("answers") or []
    theirs = reference.get("answers") or []
    if not theirs or len(mine) != len(theirs):
        return Verdict(point, "unchecked", baseline, why=f"{baseline} has no complete answers")
    identical = 0
    prefixes: list[int] = []
    shares: list[float] = []
    for a, b in zip(mine, theirs, strict=True):
        if a.get("prompt") != b.get("prompt") or "output_ids" not in b:
            return Verdict(point, "unchecked", baseline, why=f"{baseline}'s prompts differ")
        out = a.get("output_ids")
        ref = b["output_ids"]
        if not isinstance(out, list):  # the request failed: nothing matches
            prefixes.append(0)
            shares.append(0.0)
            continue
        p = _prefix(out, ref)
        identical += out == ref
        prefixes.append(p)
        shares.append(p / max(len(out), len(ref), 1))
    n = len(theirs)
    verdict = Verdict(
        point,
        "pass" if identical / n >= minimum else "fail",
        baseline,
        n,
        identical,
        sum(prefixes) / n,
        sum(shares) / n,
    )
    if verdict.status == "fail":
        return replace(verdict, why=f"below greedy_match_min {minimum:g}: {verdict.figures()}")
    return verdict


def verdicts(sweep_dir: Path, points: list[Any], minimum: float = MATCH_MIN) -> dict[str, Verdict]:
    """A verdict for every complete point of the sweep (results.PointResult-like: point_id,
    status, baseline, meta with host_class)."""
    complete = [p for p in points if p.status == "complete"]
    bases = {p.meta.get("host_class"): p for p in complete if p.baseline}
    out: dict[str, Verdict] = {}
    for p in complete:
        if p.baseline:
            out[p.point_id] = Verdict(p.point_id, "reference", why="the baseline itself")
            continue
        base = bases.get(p.meta.get("host_class"))
        if base is None:
            out[p.point_id] = Verdict(
                p.point_id, "unchecked", why="no complete baseline of its hardware class"
            )
            continue
        answers = answers_of(sweep_dir / p.point_id)
        reference = answers_of(sweep_dir / base.point_id)
        if answers is None or reference is None:
            missing = p.point_id if answers is None else base.point_id
            out[p.point_id] = Verdict(
                p.point_id, "unchecked", base.point_id, why=f"{missing} has no greedy.json"
            )
            continue
        out[p.point_id] = compare(p.point_id, answers, base.point_id, reference, minimum)
    return out
