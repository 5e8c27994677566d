"""The canary's check (deploy.yml's first batch): does the deployed configuration reproduce, on the
host it now serves, what the sweep measured for that point on that hardware class?

The canary runs a short verification bench of the chosen cell: the sweep's own bench parameters
(the same workload, prompts and greedy set) for that one cell, fewer repetitions. Per repetition
the objective's value (sweep/config/objectives.py) is compared with the sweep's repetitions of the
same point and cell, measured on the same hardware class, by the project's own test
(sweep/results/stats.py welch: the canary's repetitions do not pair with the sweep's):

- a shortfall: the canary's mean is worse than the sweep's by more than `tolerance` (5 %), and
  Welch's two-sided t-test at 5 % against the sweep's values scaled by 1 - tolerance (1 + for a
  lower-is-better objective) says if it is significant. Either fails (the canary must reproduce):
  with two runs a side, a sweep whose runs differ by >12 % leaves a x4 slowdown not significant;
- the greedy-output check (sweep/store/greedy.py): the canary's temperature-0 answers against the
  sweep's baseline of the same class, as any point's are.

Either fails the canary, and deploy.yml rolls it back. A canary whose hardware class has no
measurement of the point in the sweep is `unmeasured`: refused unless `unmeasured_ok`.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

from bench.records import load_records
from sweep.config import objectives
from sweep.config.params import SweepInputError
from sweep.results.results import load_points
from sweep.results.stats import estimate, welch
from sweep.store import greedy, record

TOLERANCE = 0.05  # deploy_tolerance's default
REPETITIONS = 2  # deploy_canary_repetitions's default: runs of the verification bench


def bench_for(
    sweep_bench: dict[str, Any], cell: dict[str, Any], repetitions: int
) -> dict[str, Any]:
    """The verification bench: the sweep's bench parameters for the one cell."""
    return {
        **sweep_bench,
        "contexts": [cell["context"]],
        "concurrency": [cell["concurrency"]],
        "output_len": [cell["output_len"]],
        "categories": [cell["category"]],
        "repetitions": repetitions,
    }


def _cell_values(
    records_dir: Path, records: list[dict[str, Any]], cell: dict[str, Any], obj: Any
) -> list[float]:
    keys = ("context", "concurrency", "output_len", "category")
    chosen = [r for r in records if all(r["cell"].get(k) == cell[k] for k in keys)]
    by_point = obj.observations(records_dir, chosen)
    return next(iter(by_point.values()), [])


def check(
    sweep_dir: Path,
    archive: Path,
    point: str,
    cell: dict[str, Any],
    host_class: str,
    objective: dict[str, Any],
    tolerance: float = TOLERANCE,
    greedy_match_min: float = greedy.MATCH_MIN,
    unmeasured_ok: bool = False,
) -> dict[str, Any]:
    """The canary's verdict: {ok, line, sweep, canary, ratio, p_value, greedy, why}."""
    if not 0 <= tolerance < 1:
        raise SweepInputError(f"deploy_tolerance={tolerance}: a share between 0 and 1")
    obj = objectives.make(
        str(objective.get("objective") or objectives.DEFAULT),
        objective.get("slo_ttft_ms"),
        objective.get("slo_tpot_ms"),
    )
    points = {p.point_id: p for p in load_points(sweep_dir, obj)}
    measured = points.get(point)
    out: dict[str, Any] = {"point": point, "cell": cell, "host_class": host_class}
    if measured is None or measured.status != "complete":
        raise SweepInputError(f"point={point}: not a complete point of {sweep_dir}")
    if str(measured.meta.get("host_class") or "") != host_class:
        where = measured.meta.get("host_class") or "an unknown class"
        out["why"] = (
            f"the sweep measured {point} on {where}, not on this host's class {host_class!r}: "
            "there is nothing to reproduce here"
        )
        out["ok"] = unmeasured_ok
        out["unmeasured"] = True
        head = "UNMEASURED, deploy_unmeasured=true: " if unmeasured_ok else "UNMEASURED: "
        out["line"] = head + out["why"]
        return out
    sweep_records_dir = sweep_dir / point / record.RECORDS
    sweep_values = _cell_values(sweep_records_dir, load_records(sweep_records_dir), cell, obj)
    work = Path(tempfile.mkdtemp(prefix="canary-"))
    try:
        record.extract(archive, work)
        records_dir = work / record.RECORDS
        canary_values = _cell_values(records_dir, load_records(records_dir), cell, obj)
        answers = greedy.answers_of(work)
    finally:
        keep = _greedy_verdict(sweep_dir, points, host_class, answers, greedy_match_min)
        shutil.rmtree(work, ignore_errors=True)
    out.update(_compare(sweep_values, canary_values, obj, tolerance))
    out["greedy"] = keep.to_dict() if keep else None
    problems = []
    if out.get("shortfall"):
        problems.append(out["why"])
    if keep is not None and keep.status == "fail":
        problems.append(f"greedy-output check: {keep.figures()}")
    out["ok"] = not problems
    out["line"] = (
        "canary OK: " + out["summary"] if out["ok"] else "canary FAILED: " + "; ".join(problems)
    )
    return out


def _greedy_verdict(
    sweep_dir: Path,
    points: dict[str, Any],
    host_class: str,
    answers: dict[str, Any] | None,
    minimum: float,
) -> greedy.Verdict | None:
    bases = [
        p
        for p in points.values()
        if p.baseline
        and p.status == "complete"
        and str(p.meta.get("host_class") or "") == host_class
    ]
    if not bases or answers is None:
        return None
    reference = greedy.answers_of(sweep_dir / bases[0].point_id)
    if reference is None:
        return None
    return greedy.compare("canary", answers, bases[0].point_id, reference, minimum)


def _compare(
    sweep_values: list[float], canary_values: list[float], obj: Any, tolerance: float
) -> dict[str, Any]:
    if not sweep_values or not canary_values:
        whose = "the sweep's" if not sweep_values else "the canary's"
        why = f"no figures to compare ({whose})"
        return {"shortfall": True, "why": why, "summary": why}
    sweep_est = estimate(sweep_values)
    canary_est = estimate(canary_values)
    assert sweep_est and canary_est
    factor = 1 - tolerance if obj.higher_is_better else 1 + tolerance
    floor = [v * factor for v in sweep_values]
    test = welch(canary_values, floor)
    if obj.higher_is_better:
        worse = canary_est.mean < statistics.fmean(floor)
    else:
        worse = canary_est.mean > statistics.fmean(floor)
    significant = bool(test.significant and worse)
    kind = "a significant shortfall" if significant else "a shortfall"
    unsure = "" if significant else ", not significant (more runs: deploy_canary_repetitions)"
    ratio = canary_est.mean / sweep_est.mean if sweep_est.mean else None
    summary = (
        f"{obj.name} {canary_est.mean:.4g} {obj.unit} (n={canary_est.n}) against the sweep's "
        f"{sweep_est.mean:.4g} (n={sweep_est.n}), x{ratio:.3f}; Welch's test against the sweep's "
        f"figure {'- ' if obj.higher_is_better else '+ '}{tolerance:.0%}: p="
        + ("n/a" if test.p_value is None else f"{test.p_value:.3g}")
    )
    return {
        "sweep": {"mean": sweep_est.mean, "n": sweep_est.n, "values": sweep_values},
        "canary": {"mean": canary_est.mean, "n": canary_est.n, "values": canary_values},
        "ratio": ratio,
        "p_value": test.p_value,
        "tolerance": tolerance,
        "shortfall": worse,
        "significant": significant,
        "summary": summary,
        "why": f"{kind} beyond {tolerance:.0%}{unsure}: {summary}" if worse else "",
    }
