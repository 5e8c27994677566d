"""A sweep's results as rows: each point's status and cells from its directory (load_points), then
one row per point x bench cell with its speed-ups and intervals against the baseline (rows).

Works on a partial sweep too (points still missing are `not run`). Speed-ups come from
bench.speedup against the sweep's baseline point (speculation off), cell by cell; intervals are
sweep.results.stats'. A sweep over several hardware classes has a baseline per class: each point is
compared with its own class's, and its row carries its objective over that baseline's
(`objective_relative_values`), which sweep.results.decision.winners compares instead of raw figures.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.records import aggregate_points, load_records
from bench.speedup import compare
from sweep import layout
from sweep.config import objectives as objectives_mod
from sweep.config.objectives import Objective
from sweep.results.decision import CELL_KEYS, objective_columns
from sweep.results.stats import SUMMARY_METRICS, Estimate, cell_estimates, ratio
from sweep.store.record import RECORDS


@dataclass
class PointResult:
    point_id: str
    status: str  # complete | failed | not run
    server: dict[str, Any]
    baseline: bool
    meta: dict[str, Any]
    cells: list[dict[str, Any]] = field(default_factory=list)


def _median_stat(summaries: list[dict[str, Any]], metric: str, stat: str) -> float | None:
    vals = [
        float(v)
        for s in summaries
        if isinstance(v := (s.get(metric) or {}).get(stat), (int, float))
    ]
    return statistics.median(vals) if vals else None


def _cells(pdir: Path, objective: Objective) -> list[dict[str, Any]]:
    """The point's aggregate rows, one per bench cell, with per-metric Estimates across
    repetitions (`estimates`) and the objective's value of each repetition (`objective_values`)."""
    records = load_records(pdir / RECORDS)
    by_point: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_point.setdefault(r["cell"]["point_id"], []).append(r["summary"])
    estimates = cell_estimates(records)
    values = objective.observations(pdir / RECORDS, records)
    out = []
    for agg in aggregate_points(records):
        sums = by_point[agg["point_id"]]
        out.append(
            {
                **agg,
                "ttft_p50_ms": agg.get("ttft_median_ms_median"),
                "ttft_p99_ms": _median_stat(sums, "ttft_ms", "p99"),
                "tpot_p50_ms": agg.get("tpot_median_ms_median"),
                "tpot_p99_ms": _median_stat(sums, "tpot_ms", "p99"),
                "estimates": estimates.get(agg["point_id"], {}),
                "objective_values": values.get(agg["point_id"], []),
            }
        )
    return out


def load_points(sweep_dir: Path, objective: Objective | None = None) -> list[PointResult]:
    """Every point the sweep has a directory for or planned, the baseline(s) first."""
    objective = objective or objectives_mod.make()
    sweep = layout.read_sweep(sweep_dir) or {}
    planned = {p["id"]: p for p in sweep.get("points") or []}
    found: dict[str, PointResult] = {}
    names = [d.name for d in layout.point_dirs(sweep_dir)]
    for pid, r in layout.recorded(sweep_dir, names).items():
        meta = r.point if r.status == "complete" else r.failure
        found[pid] = PointResult(
            pid,
            r.status,
            meta.get("server") or planned.get(pid, {}).get("server") or {},
            bool(meta.get("baseline")),
            meta,
            _cells(r.dir, objective) if r.status == "complete" else [],
        )
    ruled = sweep.get("ruled_out") or {}
    for pid, p in planned.items():
        if pid not in found:
            why = ruled.get(pid)
            found[pid] = PointResult(
                pid,
                "ruled out" if why else "not run",
                p.get("server") or {},
                bool(p.get("baseline")),
                dict(why or {}),
            )
    return sorted(found.values(), key=lambda p: (not p.baseline, p.point_id))


def _ci_columns(name: str, est: Estimate | None) -> dict[str, Any]:
    return {
        f"{name}_mean": est.mean if est else None,
        f"{name}_ci_low": est.ci_low if est else None,
        f"{name}_ci_high": est.ci_high if est else None,
    }


def _speedup_ci(cell: dict[str, Any], base_cell: dict[str, Any] | None) -> dict[str, Any]:
    """Mean throughput / the baseline's, with its delta-method interval
    (sweep.results.stats.ratio)."""
    if base_cell is cell:  # the baseline against itself: 1 by definition, no interval
        return {"speedup_mean_ratio": 1.0, "speedup_ci_low": None, "speedup_ci_high": None}
    num = cell["estimates"].get("output_throughput")
    den = base_cell["estimates"].get("output_throughput") if base_cell else None
    r = ratio(num, den) if num and den else None
    return {
        "speedup_mean_ratio": r.value if r else None,
        "speedup_ci_low": r.ci_low if r else None,
        "speedup_ci_high": r.ci_high if r else None,
    }


def _cell_row(
    c: dict[str, Any], speed: dict[str, Any], base_cell: dict[str, Any] | None, objective: str
) -> dict[str, Any]:
    est: dict[str, Estimate] = c["estimates"]
    return {
        "cell": c["point_id"],
        **{k: c.get(k) for k in CELL_KEYS},
        "output_throughput": c.get("output_throughput_median"),
        "ttft_p50_ms": c["ttft_p50_ms"],
        "ttft_p99_ms": c["ttft_p99_ms"],
        "tpot_p50_ms": c["tpot_p50_ms"],
        "tpot_p99_ms": c["tpot_p99_ms"],
        "accept_length": c.get("accept_length_median"),
        "speedup": speed.get("speedup_output_throughput"),
        "speedup_tpot": speed.get("speedup_tpot"),
        "failed_requests": c.get("failed"),
        "incomplete_requests": c.get("incomplete"),
        "valid": speed.get("valid", not (c.get("failed") or c.get("incomplete"))),
        "repetitions": c.get("repetitions"),
        **{k: v for m in SUMMARY_METRICS for k, v in _ci_columns(m, est.get(m)).items()},
        **_speedup_ci(c, base_cell),
        "objective": objective,
        **objective_columns(c["objective_values"]),
    }


def baseline_of(points: list[PointResult]) -> dict[str, str]:
    """Each point's baseline (a complete one): hosts of several hardware classes have a baseline
    each (points.pin_baselines, ids baseline-<class>), and a point is compared with its own
    class's only."""
    bases = [p for p in points if p.baseline and p.status == "complete"]
    per_class = any(p.baseline and p.point_id != "baseline" for p in points)
    by_class = {b.meta.get("host_class"): b for b in bases}
    out = {}
    for p in points:
        base = (
            by_class.get(p.meta.get("host_class")) if per_class else (bases[0] if bases else None)
        )
        if base is not None:
            out[p.point_id] = base.point_id
    return out


def rows(
    points: list[PointResult], objective: str = objectives_mod.DEFAULT
) -> list[dict[str, Any]]:
    """One row per point x bench cell (one per point without cells): medians across
    repetitions as before, plus the means and intervals of sweep.results.stats and the
    objective's."""
    per_class = any(p.baseline and p.point_id != "baseline" for p in points)
    base_ids = baseline_of(points)
    by_id = {p.point_id: p for p in points}
    out = []
    for p in points:
        base = by_id[base_ids[p.point_id]] if p.point_id in base_ids else None
        base_cells = {c["point_id"]: c for c in base.cells} if base else {}
        speed = {r["point_id"]: r for r in compare(base.cells, p.cells)} if base else {}
        common = {
            "point": p.point_id,
            "status": p.status,
            "host_class": p.meta.get("host_class"),
            "per_class": per_class,
            "algorithm": p.server.get("algorithm"),
            # with speculation off these parameters mean nothing: left empty
            **{
                k: None if p.server.get("algorithm") == "NONE" else p.server.get(k)
                for k in ("budget", "topk", "window")
            },
        }
        if not p.cells:
            out.append(common)
            continue
        for c in p.cells:
            cid = c["point_id"]
            row = _cell_row(c, speed.get(cid, {}), base_cells.get(cid), objective)
            if per_class:
                row["objective_relative_values"] = _relative(c, base_cells.get(cid))
            out.append({**common, **row})
    return out


def _relative(cell: dict[str, Any], base_cell: dict[str, Any] | None) -> list[float]:
    """The objective of each repetition over its class baseline's for the same cell: by
    repetition when both have as many (repetition i of both measured the same prompts), else
    over the baseline's mean; [] without a baseline value to divide by."""
    values = cell["objective_values"]
    base = base_cell["objective_values"] if base_cell else []
    if not values or not base:
        return []
    if len(base) == len(values) and all(b > 0 for b in base):
        return [v / b for v, b in zip(values, base, strict=True)]
    mean = statistics.fmean(base)
    return [v / mean for v in values] if mean > 0 else []


def twins(points: list[PointResult]) -> dict[str, dict[str, Any]]:
    """point id -> {point, why}: the points recorded as another's measurement because they start
    the same server (sweep/cli/plan.py settle_same). Not contenders of their own: their twin is."""
    return {
        p.point_id: p.meta["same_as"]
        for p in points
        if p.status == "complete" and isinstance(p.meta.get("same_as"), dict)
    }
