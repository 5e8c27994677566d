"""The sweep report on the controller: summary.csv, report.md and plots, from the point directories.

Works on a partial sweep too (points still missing are listed as not run). Speed-ups come from
bench.speedup against the sweep's baseline point (speculation off), cell by cell.
"""

from __future__ import annotations

import csv
import io
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.records import aggregate_points, load_records, write_atomic
from bench.speedup import compare
from sweep import layout
from sweep.record import RECORDS

COLUMNS = (
    "point",
    "status",
    "algorithm",
    "budget",
    "topk",
    "window",
    "cell",
    "context",
    "concurrency",
    "output_len",
    "category",
    "output_throughput",
    "ttft_p50_ms",
    "ttft_p99_ms",
    "tpot_p50_ms",
    "tpot_p99_ms",
    "accept_length",
    "speedup",
    "speedup_tpot",
    "failed_requests",
    "incomplete_requests",
    "valid",
)


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


def _cells(pdir: Path) -> list[dict[str, Any]]:
    records = load_records(pdir / RECORDS)
    by_point: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_point.setdefault(r["cell"]["point_id"], []).append(r["summary"])
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
            }
        )
    return out


def load_points(sweep_dir: Path) -> list[PointResult]:
    sweep = layout.read_sweep(sweep_dir) or {}
    planned = {p["id"]: p for p in sweep.get("points") or []}
    found: dict[str, PointResult] = {}
    for pdir in layout.point_dirs(sweep_dir):
        status = layout.point_status(sweep_dir, pdir.name)
        name = layout.POINT_FILE if status == "complete" else layout.FAILURE_FILE
        meta = layout.read_json(pdir / name) or {}
        found[pdir.name] = PointResult(
            pdir.name,
            status,
            meta.get("server") or planned.get(pdir.name, {}).get("server") or {},
            bool(meta.get("baseline")),
            meta,
            _cells(pdir) if status == "complete" else [],
        )
    for pid, p in planned.items():
        if pid not in found:
            found[pid] = PointResult(
                pid, "not run", p.get("server") or {}, bool(p.get("baseline")), {}
            )
    return sorted(found.values(), key=lambda p: (not p.baseline, p.point_id))


def rows(points: list[PointResult]) -> list[dict[str, Any]]:
    base = next((p for p in points if p.baseline and p.status == "complete"), None)
    out = []
    for p in points:
        speed = {r["point_id"]: r for r in compare(base.cells, p.cells)} if base else {}
        common = {
            "point": p.point_id,
            "status": p.status,
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
            s = speed.get(c["point_id"], {})
            out.append(
                {
                    **common,
                    "cell": c["point_id"],
                    **{k: c.get(k) for k in ("context", "concurrency", "output_len", "category")},
                    "output_throughput": c.get("output_throughput_median"),
                    "ttft_p50_ms": c["ttft_p50_ms"],
                    "ttft_p99_ms": c["ttft_p99_ms"],
                    "tpot_p50_ms": c["tpot_p50_ms"],
                    "tpot_p99_ms": c["tpot_p99_ms"],
                    "accept_length": c.get("accept_length_median"),
                    "speedup": s.get("speedup_output_throughput"),
                    "speedup_tpot": s.get("speedup_tpot"),
                    "failed_requests": c.get("failed"),
                    "incomplete_requests": c.get("incomplete"),
                    "valid": s.get("valid", not (c.get("failed") or c.get("incomplete"))),
                }
            )
    return out


def best_per_cell(table: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per context x concurrency (and output length, category): the valid row with the highest
    output throughput."""
    best: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in table:
        if r.get("output_throughput") is None or not r.get("valid"):
            continue
        key = (r["context"], r["concurrency"], r["output_len"], r["category"])
        if key not in best or r["output_throughput"] > best[key]["output_throughput"]:
            best[key] = r
    return [best[k] for k in sorted(best)]


def _f(v: Any, spec: str = ".1f") -> str:
    if v is None or v == "":
        return "-"
    return format(v, spec) if isinstance(v, float) else str(v)


def to_csv(table: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(COLUMNS), extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in table:
        w.writerow({k: "" if r.get(k) is None else r.get(k) for k in COLUMNS})
    return buf.getvalue()


def to_markdown(
    name: str, points: list[PointResult], table: list[dict[str, Any]], plots: list[str]
) -> str:
    complete = sum(1 for p in points if p.status == "complete")
    failed = [p for p in points if p.status == "failed"]
    lines = [
        f"# Sweep {name}",
        "",
        f"{complete} of {len(points)} points complete, {len(failed)} failed, "
        f"{len(points) - complete - len(failed)} not run.",
        "",
        "## Points",
        "",
        "| point | status | algorithm | budget | topk | window | restarted | load s | bench s "
        "| wall s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in points:
        t = p.meta.get("timings") or {}
        s = p.server
        lines.append(
            f"| {p.point_id} | {p.status} | {_f(s.get('algorithm'))} | {_f(s.get('budget'))} "
            f"| {_f(s.get('topk'))} | {_f(s.get('window'))} | {_f(t.get('restarted'))} "
            f"| {_f(t.get('load_s'))} | {_f(t.get('bench_s'))} | {_f(t.get('wall_s'))} |"
        )
    lines += [
        "",
        "## Every point x cell",
        "",
        "Throughput in output tokens/s; speed-up = throughput / the baseline's for the same cell "
        "(bench.speedup); x TPOT = baseline TPOT / TPOT.",
        "",
        "| point | cell | tok/s | TTFT p50 | TTFT p99 | TPOT p50 | TPOT p99 | accept | speed-up "
        "| x TPOT | failed | valid |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table:
        if r.get("cell") is None:
            continue
        fails = (r.get("failed_requests") or 0) + (r.get("incomplete_requests") or 0)
        lines.append(
            f"| {r['point']} | {r['cell']} | {_f(r['output_throughput'])} "
            f"| {_f(r['ttft_p50_ms'])} | {_f(r['ttft_p99_ms'])} | {_f(r['tpot_p50_ms'], '.2f')} "
            f"| {_f(r['tpot_p99_ms'], '.2f')} | {_f(r['accept_length'], '.2f')} "
            f"| {_f(r['speedup'], '.2f')} | {_f(r['speedup_tpot'], '.2f')} | {fails} "
            f"| {'yes' if r['valid'] else 'NO'} |"
        )
    lines += [
        "",
        "## Best point per context x concurrency",
        "",
        "| context | concurrency | output len | category | best point | tok/s | speed-up |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in best_per_cell(table):
        lines.append(
            f"| {r['context']} | {r['concurrency']} | {r['output_len']} | {r['category']} "
            f"| {r['point']} | {_f(r['output_throughput'])} | {_f(r['speedup'], '.2f')} |"
        )
    if failed:
        lines += ["", "## Failures", ""]
        for p in failed:
            lines.append(
                f"- **{p.point_id}** (attempt {p.meta.get('attempt', '?')}, "
                f"task {p.meta.get('failed_task') or '?'}): "
                + " / ".join(str(p.meta.get("reason", "")).splitlines()[:3])[:500]
            )
            journal = p.meta.get("journal") or []
            if journal:
                lines += ["", "  ```", *[f"  {j}" for j in journal[-15:]], "  ```"]
    if plots:
        lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in plots]
    return "\n".join(lines) + "\n"


def incomplete(sweep_dir: Path, points: list[Any]) -> list[str]:
    """Points the latest run planned that are not complete (failed, or never ran)."""
    runs = (layout.read_sweep(sweep_dir) or {}).get("runs") or []
    planned = runs[-1].get("points", []) if runs else [p.point_id for p in points]
    status = {p.point_id: p.status for p in points}
    return [pid for pid in planned if status.get(pid) != "complete"]


def write_report(sweep_dir: Path, with_plots: bool = True) -> dict[str, Any]:
    points = load_points(sweep_dir)
    table = rows(points)
    plots: list[str] = []
    if with_plots:
        from sweep.plots import write_plots

        plots = write_plots(sweep_dir, table)
    write_atomic(sweep_dir / "summary.csv", to_csv(table))
    write_atomic(sweep_dir / "report.md", to_markdown(sweep_dir.name, points, table, plots))
    return {
        "report": str(sweep_dir / "report.md"),
        "summary": str(sweep_dir / "summary.csv"),
        "plots": [str(sweep_dir / p) for p in plots],
        "points": {p.point_id: p.status for p in points},
        "incomplete": incomplete(sweep_dir, points),
        "best": [
            f"ctx {r['context']} c {r['concurrency']}: {r['point']} "
            f"{_f(r['output_throughput'])} tok/s, x{_f(r['speedup'], '.2f')}"
            for r in best_per_cell(table)
        ],
    }
