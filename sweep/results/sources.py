"""Figures per source: the domains of the built-in workload, or the `source` tags of a dataset.

A chat-shaped cell mixes conversations of several sources, and the accept length, hence the
winner, depends on what the model is asked. Each request record carries its source and each
cell record a `by_source` summary (bench.metrics.by_source); here, per point x cell x source,
the accept length, output tok/s per request and TPOT p50 across repetitions (sweep.results.stats
intervals), and the winner or tie per source by the objective's per-source figure:

- throughput: the source's output tok/s per request (its requests' tokens over their own
  latencies: a source shares the cell's wall time with the others);
- tpot: the source's TPOT p50;
- goodput: the source's requests meeting both SLOs, per second of the repetition.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.metrics import summary_value
from bench.records import load_records, load_requests
from sweep.config.objectives import Objective, meets_slo
from sweep.results.decision import CELL_KEYS, decide, objective_columns
from sweep.results.stats import Estimate, estimate
from sweep.store.record import RECORDS

KEYS = ("cell", *CELL_KEYS, "source")
# per-source figure -> its path in a by_source entry
METRICS: dict[str, tuple[str, ...]] = {
    "accept_length": ("accept_length",),
    "tok_s": ("request_output_throughput",),
    "tpot_p50_ms": ("tpot_ms", "median"),
}


def _objective_value(
    objective: Objective, records_dir: Path, record: dict[str, Any], source: str
) -> float | None:
    entry = (record["summary"].get("by_source") or {}).get(source) or {}
    if objective.name == "throughput":
        return summary_value(entry, METRICS["tok_s"])
    if objective.name == "tpot":
        return summary_value(entry, METRICS["tpot_p50_ms"])
    assert objective.slo_ttft_ms is not None and objective.slo_tpot_ms is not None
    duration = summary_value(record["summary"], ("duration_s",))
    if not duration:
        return None
    try:
        requests = load_requests(records_dir, record["cell"]["cell_id"])
    except (OSError, ValueError):
        return None
    good = sum(
        1
        for r in requests
        if r.get("source") == source and meets_slo(r, objective.slo_ttft_ms, objective.slo_tpot_ms)
    )
    return good / duration


def point_rows(
    point: str, host_class: Any, records_dir: Path, objective: Objective
) -> list[dict[str, Any]]:
    """One row per cell x source of one point's records."""
    records = load_records(records_dir)
    # (cell point_id, source) -> figure -> [(repetition, value)]
    obs: dict[tuple[str, str], dict[str, list[tuple[int, float]]]] = {}
    cells: dict[str, dict[str, Any]] = {}
    invalid: set[tuple[str, str]] = set()
    for rec in records:
        cell = rec["cell"]
        cells[cell["point_id"]] = cell
        rep = int(cell.get("repetition") or 0)
        for source, entry in (rec["summary"].get("by_source") or {}).items():
            figures = obs.setdefault((cell["point_id"], source), {})
            if entry.get("completed") != entry.get("requests"):
                invalid.add((cell["point_id"], source))
            for name, path in METRICS.items():
                v = summary_value(entry, path)
                if v is not None:
                    figures.setdefault(name, []).append((rep, v))
            v = _objective_value(objective, records_dir, rec, source)
            if v is not None:
                figures.setdefault("objective", []).append((rep, v))
    rows = []
    for (cid, source), figures in sorted(obs.items()):
        cell = cells[cid]
        values = {k: [v for _, v in sorted(vs)] for k, vs in figures.items()}
        est: dict[str, Estimate | None] = {k: estimate(values.get(k, [])) for k in METRICS}
        rows.append(
            {
                "point": point,
                "host_class": host_class,
                "cell": cid,
                **{k: cell.get(k) for k in CELL_KEYS},
                "source": source,
                "valid": (cid, source) not in invalid,
                "estimates": est,
                "repetitions": len({r for vs in figures.values() for r, _ in vs}),
                **objective_columns(values.get("objective", [])),
            }
        )
    return rows


def rows(sweep_dir: Path, points: Sequence[Any], objective: Objective) -> list[dict[str, Any]]:
    """Every complete point's rows (results.PointResult-like points)."""
    out: list[dict[str, Any]] = []
    for p in points:
        if p.status == "complete":
            out += point_rows(
                p.point_id, p.meta.get("host_class"), sweep_dir / p.point_id / RECORDS, objective
            )
    return out


def mixed(table: list[dict[str, Any]]) -> bool:
    """Whether any cell holds more than one source (otherwise the per-cell table says it all)."""
    seen: dict[str, set[str]] = {}
    for r in table:
        seen.setdefault(r["cell"], set()).add(r["source"])
    return any(len(s) > 1 for s in seen.values())


def winners(
    table: list[dict[str, Any]], objective: Objective, excluded: set[str] | None = None
) -> list[dict[str, Any]]:
    """Per cell and source, the winner or tie by the objective's per-source figure; points in
    `excluded` (refused by the greedy-output check) and rows with failed requests take no
    part."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in table:
        if r["valid"] and r["objective_values"] and r["point"] not in (excluded or set()):
            groups.setdefault(tuple(r[k] for k in KEYS), []).append(r)
    return [decide(KEYS, key, groups[key], objective) for key in sorted(groups, key=str)]
