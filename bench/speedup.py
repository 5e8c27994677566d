"""Speed-up of a speculative run over a baseline run (the same server, speculation off).

    from bench.speedup import compute
    rows = compute("results/baseline", "results/dflash")   # list of dicts, one per point

Points are matched by `point_id` (context, concurrency, output length, category); each side
uses the median over its repetitions. A row with failed or incomplete requests on either side
has `valid: False`: its figures are shown but should not be trusted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.records import aggregate_points, load_records

POINT_KEYS = ("point_id", "context", "concurrency", "output_len", "category")


def _ratio(num: float | None, den: float | None) -> float | None:
    if num is None or den is None or den == 0:
        return None
    return num / den


def compare(base: list[dict[str, Any]], spec: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Speed-up rows from two lists of aggregate rows (see bench.records.aggregate_points)."""
    by_point = {b["point_id"]: b for b in base}
    rows = []
    for s in spec:
        b = by_point.get(s["point_id"])
        if b is None:
            continue
        rows.append(
            {
                **{k: s.get(k) for k in POINT_KEYS},
                "baseline_output_throughput": b["output_throughput_median"],
                "spec_output_throughput": s["output_throughput_median"],
                "speedup_output_throughput": _ratio(
                    s["output_throughput_median"], b["output_throughput_median"]
                ),
                "baseline_tpot_ms": b["tpot_median_ms_median"],
                "spec_tpot_ms": s["tpot_median_ms_median"],
                # lower TPOT is better, so the speed-up is baseline / speculative
                "speedup_tpot": _ratio(b["tpot_median_ms_median"], s["tpot_median_ms_median"]),
                "spec_accept_length": s["accept_length_median"],
                "baseline_repetitions": b["repetitions"],
                "spec_repetitions": s["repetitions"],
                "valid": not (b["failed"] or b["incomplete"] or s["failed"] or s["incomplete"]),
            }
        )
    return rows


def compute(baseline_dir: str | Path, spec_dir: str | Path) -> list[dict[str, Any]]:
    """Per-point speed-up of output tokens/s and TPOT, from two record directories."""
    base = aggregate_points(load_records(Path(baseline_dir)))
    spec = aggregate_points(load_records(Path(spec_dir)))
    return compare(base, spec)


def format_table(rows: list[dict[str, Any]]) -> str:
    def f(v: Any, spec: str = ".2f") -> str:
        return "-" if v is None else format(v, spec)

    lines = [
        f"{'point':<40} {'base tok/s':>10} {'spec tok/s':>10} {'x tok/s':>8} "
        f"{'x TPOT':>7} {'accept':>7} valid"
    ]
    for r in rows:
        lines.append(
            f"{r['point_id']:<40} {f(r['baseline_output_throughput'], '.1f'):>10} "
            f"{f(r['spec_output_throughput'], '.1f'):>10} {f(r['speedup_output_throughput']):>8} "
            f"{f(r['speedup_tpot']):>7} {f(r['spec_accept_length']):>7} {r['valid']}"
        )
    return "\n".join(lines)
