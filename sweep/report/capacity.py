"""Capacity and load in the report: each point's capacity at the SLO (bench/capacity.py's result,
`records/capacity.json`), the winner or tie among points, and each point's speed-up over the
baseline as a function of offered load with the crossover above which it is slower.

- Ranking: the point with the highest capacity (a settled search's figure, the lower end of its
  bracket) wins when its figure is at or above the upper end of every other point's bracket;
  points whose brackets reach above it tie with it. An unsettled search counts with its bracket
  ([lower, upper] or [lower, unbounded]): it may still tie, never win alone by default.
- Speed-up at a rate: the baseline's median TPOT over the point's at the same open-loop cell
  (same rate, context, output, category, arrival shape and repetition: the same cell id, so the
  same arrivals and prompts), from `request_rate` cells and capacity trials alike; a cell the
  client could not keep to its schedule (invalid) counts for neither.
- Crossover: the lowest offered load where the speed-up falls below 1, interpolated between the
  two measured rates around it on a log scale of the rate; "none below its capacity" when it stays
  at or above 1 at every rate measured up to the point's capacity (or its highest valid rate).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.capacity import CAPACITY_FILE
from bench.records import load_records
from bench.workload import num_label
from sweep.results.results import PointResult
from sweep.store.record import RECORDS


@dataclass
class Capacity:
    point_id: str
    capacity_id: str
    capacity: float | None
    low: float | None
    high: float | None
    settled: bool
    reason: str
    trials: int
    slo: dict[str, Any]
    verdict: str = ""  # winner | tie | "" (set by rank)


@dataclass
class Curve:
    """One point's speed-up over the baseline by offered load, for one series of cells."""

    point_id: str
    series: str  # the cells' id without the rate: ctx512-out256-chat-r0
    rates: list[float] = field(default_factory=list)
    speedups: list[float] = field(default_factory=list)
    crossover: float | None = None
    limit: float | None = None  # the highest rate the crossover was looked for below


def load(point_dir: Path) -> list[dict[str, Any]]:
    path = point_dir / RECORDS / CAPACITY_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [r for r in data if isinstance(r, dict)] if isinstance(data, list) else []


def capacities(sweep_dir: Path, points: list[PointResult]) -> list[Capacity]:
    out = []
    for p in points:
        if p.status != "complete":
            continue
        for r in load(sweep_dir / p.point_id):
            lo, hi = [*(r.get("bracket") or []), None, None][:2]
            out.append(
                Capacity(
                    p.point_id,
                    str(r["capacity_id"]),
                    r.get("capacity"),
                    lo,
                    hi,
                    bool(r.get("settled")),
                    str(r.get("reason") or ""),
                    len(r.get("trials") or []),
                    r.get("slo") or {},
                )
            )
    return out


def rank(
    caps: list[Capacity], excluded: frozenset[str] | set[str] = frozenset()
) -> dict[str, list[Capacity]]:
    """Per capacity search (capacity_id), its points best first, with winner / tie verdicts."""
    by_id: dict[str, list[Capacity]] = {}
    for c in caps:
        by_id.setdefault(c.capacity_id, []).append(c)
    for group in by_id.values():
        group.sort(key=lambda c: -(c.low or 0.0))
        contenders = [c for c in group if c.point_id not in excluded and c.low is not None]
        if not contenders:
            continue
        best = contenders[0]
        rivals = [c for c in contenders[1:] if c.high is None or c.high > (best.low or 0.0)]
        # the best's own bracket: unsettled and unbounded above cannot win against a rival
        if not rivals and best.settled:
            best.verdict = "winner"
        else:
            for c in [best, *rivals]:
                c.verdict = "tie"
    return by_id


def _series_and_rate(cell: dict[str, Any]) -> tuple[str, float] | None:
    rate = cell.get("request_rate")
    if rate is None:
        return None
    label = f"-rate{num_label(float(rate))}"
    return str(cell["cell_id"]).replace(label, "", 1), float(rate)


def _tpots(point_dir: Path) -> dict[tuple[str, float], float]:
    """Median TPOT (ms) of each valid open-loop cell, keyed by (series, rate)."""
    out = {}
    for rec in load_records(point_dir / RECORDS):
        key = _series_and_rate(rec["cell"])
        summary = rec["summary"]
        tpot = (summary.get("tpot_ms") or {}).get("median")
        if key and summary.get("valid", True) and isinstance(tpot, (int, float)) and tpot > 0:
            out[key] = float(tpot)
    return out


def curves(
    sweep_dir: Path,
    points: list[PointResult],
    caps: list[Capacity],
    baseline_of: dict[str, str],
) -> list[Curve]:
    """Each speculative point's speed-up by rate against its baseline (`baseline_of`: point id
    to its class's baseline point id), and its crossover."""
    tpots = {p.point_id: _tpots(sweep_dir / p.point_id) for p in points if p.status == "complete"}
    limit_of = {(c.point_id, c.capacity_id): c.low for c in caps}
    out = []
    for p in points:
        base_id = baseline_of.get(p.point_id)
        if p.baseline or base_id is None or p.point_id not in tpots or base_id not in tpots:
            continue
        mine, base = tpots[p.point_id], tpots[base_id]
        for series in sorted({s for s, _ in mine}):
            rates = sorted(r for s, r in mine if s == series and (s, r) in base)
            if not rates:
                continue
            speedups = [base[(series, r)] / mine[(series, r)] for r in rates]
            limit = limit_of.get((p.point_id, _capacity_id_of(series))) or rates[-1]
            cross = crossover(rates, speedups, limit)
            out.append(Curve(p.point_id, series, rates, speedups, cross, limit))
    return out


def _capacity_id_of(series: str) -> str:
    """ctx512-out256-chat-r0 -> ctx512-capacity-out256-chat-r0 (bench's capacity_id)."""
    head, _, tail = series.partition("-")
    return f"{head}-capacity-{tail}"


def crossover(rates: list[float], speedups: list[float], limit: float) -> float | None:
    """The lowest rate at or below `limit` where the speed-up falls below 1 (log-interpolated
    between the measured rates around it); None when it does not."""
    prev: tuple[float, float] | None = None
    for r, s in zip(rates, speedups, strict=True):
        if s < 1.0:
            if prev is None or prev[1] == s:
                x = r
            else:
                r0, s0 = prev
                t = (s0 - 1.0) / (s0 - s)
                x = math.exp(math.log(r0) + t * (math.log(r) - math.log(r0)))
            return x if x <= limit * (1 + 1e-9) else None
        prev = (r, s)
    return None


LOAD_PNG = "speedup_vs_load.png"


def _rate(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g}"


def markdown(ranked: dict[str, list[Capacity]], found: list[Curve], plot: str | None) -> list[str]:
    """The report's section: capacity per search and point, then speed-up by offered load."""
    if not ranked and not found:
        return []
    lines = ["## Capacity at the SLO and speed-up by offered load", ""]
    for capacity_id, group in sorted(ranked.items()):
        slo = group[0].slo
        targets = ", ".join(
            f"{name} <= {slo[key]:g} ms"
            for key, name in (("ttft_ms", "TTFT"), ("tpot_ms", "TPOT"))
            if slo.get(key) is not None
        )
        lines += [
            f"### {capacity_id}: {targets} for {slo.get('share', 0):.0%} of requests",
            "",
            "| point | capacity (req/s) | bracket | trials | verdict | search |",
            "|---|---|---|---|---|---|",
        ]
        for c in group:
            lines.append(
                f"| {c.point_id} | {_rate(c.capacity)} | [{_rate(c.low)}, {_rate(c.high)}] "
                f"| {c.trials} | {c.verdict or '-'} | {c.reason} |"
            )
        lines.append("")
    if found:
        rates = sorted({r for c in found for r in c.rates})
        lines += [
            "Speed-up over the baseline (its median TPOT / the point's) by offered load "
            "(req/s); crossover: the load above which the point is slower than the baseline.",
            "",
            "| point | cells | " + " | ".join(_rate(r) for r in rates) + " | crossover |",
            "|---|---|" + "---|" * len(rates) + "---|",
        ]
        for cv in found:
            by_rate = dict(zip(cv.rates, cv.speedups, strict=True))
            cells = " | ".join(f"{by_rate[r]:.2f}x" if r in by_rate else "-" for r in rates)
            cross = (
                f"{cv.crossover:.3g} req/s"
                if cv.crossover is not None
                else f"none below {_rate(cv.limit)} req/s"
            )
            lines.append(f"| {cv.point_id} | {cv.series} | {cells} | {cross} |")
        lines.append("")
    if plot:
        lines += [f"![{plot}]({plot})", ""]
    return lines


def best_lines(ranked: dict[str, list[Capacity]]) -> list[str]:
    out = []
    for capacity_id, group in sorted(ranked.items()):
        top = [c for c in group if c.verdict]
        if not top:
            continue
        if top[0].verdict == "winner":
            c = top[0]
            out.append(f"{capacity_id}: winner {c.point_id}, capacity {_rate(c.capacity)} req/s")
        else:
            out.append(
                f"{capacity_id}: tie between "
                + ", ".join(f"{c.point_id} [{_rate(c.low)}, {_rate(c.high)}]" for c in top)
            )
    return out


def plot(found: list[Curve], path: Path) -> bool:
    """Speed-up vs offered load, one line per point and cell series, the crossovers marked."""
    if not found:
        return False
    from sweep.report.plots import _grid, _save

    fig, axes = _grid(1, 1, 7.0, 4.5)
    ax = axes[0][0]
    for c in found:
        (line,) = ax.plot(c.rates, c.speedups, marker="o", label=f"{c.point_id} {c.series}")
        if c.crossover is not None:
            ax.axvline(c.crossover, color=line.get_color(), linestyle=":", linewidth=1)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("offered load (requests/s)")
    ax.set_ylabel("speed-up over the baseline (TPOT)")
    ax.legend(fontsize=7)
    _save(fig, path)
    return True


def section(
    sweep_dir: Path,
    points: list[PointResult],
    baseline_of: dict[str, str],
    excluded: set[str],
    with_plots: bool,
) -> tuple[list[str], list[str], list[str]]:
    """(report lines, best lines, plot files) of the capacity and load section."""
    caps = capacities(sweep_dir, points)
    ranked = rank(caps, excluded)
    found = curves(sweep_dir, points, caps, baseline_of)
    png = LOAD_PNG if with_plots and plot(found, sweep_dir / LOAD_PNG) else None
    return markdown(ranked, found, png), best_lines(ranked), [png] if png else []
