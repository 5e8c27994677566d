"""The sweep report on the controller: summary.csv, report.md and plots, from the point directories.

Works on a partial sweep too (points still missing are listed as not run). Speed-ups come from
bench.speedup against the sweep's baseline point (speculation off), cell by cell. Per cell the
best point by the objective (sweep.objectives) wins only when it beats the runner-up
significantly (sweep.stats: t intervals across repetitions, a t-test paired by repetition, or
Welch's); otherwise the cell is a tie naming both. A sweep over several hardware classes compares
each point's objective over its own class baseline's, not raw figures from different hardware.
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
from bench.workload import size_label
from sweep import greedy, layout, sources
from sweep import objectives as objectives_mod
from sweep.decision import CELL_KEYS, decide, interval
from sweep.objectives import Objective
from sweep.record import RECORDS
from sweep.search_rounds import SEARCH_FILE, full_benches
from sweep.stats import (
    CI_METHOD,
    SUMMARY_METRICS,
    TEST_METHOD,
    Estimate,
    cell_estimates,
    estimate,
    ratio,
)

COLUMNS = (
    "point",
    "status",
    "host_class",
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
    "repetitions",
    *(f"{m}_{k}" for m in SUMMARY_METRICS for k in ("mean", "ci_low", "ci_high")),
    "speedup_mean_ratio",
    "speedup_ci_low",
    "speedup_ci_high",
    "objective",
    "objective_mean",
    "objective_ci_low",
    "objective_ci_high",
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
    objective = objective or objectives_mod.make()
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
            _cells(pdir, objective) if status == "complete" else [],
        )
    for pid, p in planned.items():
        if pid not in found:
            found[pid] = PointResult(
                pid, "not run", p.get("server") or {}, bool(p.get("baseline")), {}
            )
    return sorted(found.values(), key=lambda p: (not p.baseline, p.point_id))


def _ci_columns(name: str, est: Estimate | None) -> dict[str, Any]:
    return {
        f"{name}_mean": est.mean if est else None,
        f"{name}_ci_low": est.ci_low if est else None,
        f"{name}_ci_high": est.ci_high if est else None,
    }


def _speedup_ci(cell: dict[str, Any], base_cell: dict[str, Any] | None) -> dict[str, Any]:
    """Mean throughput / the baseline's, with its delta-method interval (sweep.stats.ratio)."""
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
        **_ci_columns("objective", estimate(c["objective_values"])),
        "objective_n": len(c["objective_values"]),
        "objective_values": c["objective_values"],
    }


def rows(
    points: list[PointResult], objective: str = objectives_mod.DEFAULT
) -> list[dict[str, Any]]:
    """One row per point x bench cell (one per point without cells): medians across
    repetitions as before, plus the means and intervals of sweep.stats and the objective's."""
    bases = [p for p in points if p.baseline and p.status == "complete"]
    # Hosts of several hardware classes have a baseline each (plan.pin_baselines, ids
    # baseline-<class>): a point is compared with its own class's only.
    per_class = any(p.baseline and p.point_id != "baseline" for p in points)
    by_class = {b.meta.get("host_class"): b for b in bases}
    out = []
    for p in points:
        own = by_class.get(p.meta.get("host_class"))
        base = own if per_class else (bases[0] if bases else None)
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


def winners(
    table: list[dict[str, Any]], objective: Objective, excluded: set[str] | None = None
) -> list[dict[str, Any]]:
    """Per cell (context x concurrency x output length x category): the best point by the
    objective's mean across repetitions, the runner-up, and whether best vs runner-up is
    significant (sweep.stats.compare_repetitions: paired by repetition). Not significant: a tie
    (`tie` names both, `winner` is None). Rows with failed or incomplete requests, and the
    points in `excluded` (their outputs differ from the baseline's: sweep.greedy), take no
    part; the baseline does."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    relative = any(r.get("per_class") for r in table)
    for r in table:
        if relative:
            r = _as_relative(r)
        if r.get("cell") is None or not r.get("valid") or not r.get("objective_values"):
            continue
        if r["point"] in (excluded or set()):
            continue
        groups.setdefault(tuple(r[k] for k in CELL_KEYS), []).append(r)
    classes = {r.get("host_class") for rs in groups.values() for r in rs}
    mixed = not relative and len(classes) > 1
    return [
        {
            **decide(CELL_KEYS, key, groups[key], objective),
            "relative": relative,
            "mixed_classes": mixed,
        }
        for key in sorted(groups)
    ]


def _as_relative(row: dict[str, Any]) -> dict[str, Any]:
    """A row of a sweep over several hardware classes, its objective divided by its own class
    baseline's (`_relative`): raw values measured on different hardware do not compare."""
    values = row.get("objective_relative_values") or []
    return {
        **row,
        **_ci_columns("objective", estimate(values)),
        "objective_n": len(values),
        "objective_values": values,
    }


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


SPEC = {"throughput": ".1f", "tpot": ".2f", "goodput": ".3f"}


def _value_ci(mean: float | None, ci: list[float] | None, n: int | None, spec: str) -> str:
    """ "123.4 ± 5.6" (the interval's half-width), or the mean with "n=1, no interval"."""
    if mean is None:
        return "-"
    if ci is None:
        return (
            f"{mean:{spec}} (n={n}, no interval)" if n is not None and n < 2 else f"{mean:{spec}}"
        )
    return f"{mean:{spec}} ± {ci[1] - mean:{spec}}"


def _interval(lo: float | None, hi: float | None, n: int | None, spec: str = ".1f") -> str:
    if lo is None or hi is None:
        return f"n={n}, no interval" if n is not None and n < 2 else "-"
    return f"[{lo:{spec}}, {hi:{spec}}]"


RELATIVE_UNIT = "x class baseline"


def _spec_unit(cells: list[dict[str, Any]], objective: Objective) -> tuple[str, str]:
    """How a cell's values read: the objective's own unit, or a ratio to the class baseline
    when the sweep ran on several hardware classes."""
    if any(c.get("relative") for c in cells):
        return ".3f", RELATIVE_UNIT
    return SPEC[objective.name], objective.unit


def _winner_lines(cells: list[dict[str, Any]], objective: Objective) -> list[str]:
    spec, unit = _spec_unit(cells, objective)
    relative = unit == RELATIVE_UNIT
    lines = [
        "## Winner per cell",
        "",
        f"Objective: {objective.describe()}. Values: mean over repetitions ± the half-width of "
        f"its interval; {CI_METHOD}.",
        f"Winner or tie: {TEST_METHOD}. Rows with failed or incomplete requests take no part; "
        "the baseline takes part like any point.",
    ]
    if relative:
        lines.append(
            "Hosts of several hardware classes: each point's objective is divided by its own "
            f"class baseline's for the same cell ({RELATIVE_UNIT}; by repetition when both "
            "have as many), so points measured on different hardware compare; a point whose "
            "class has no complete baseline takes no part."
        )
    if any(c.get("mixed_classes") for c in cells):
        lines.append(
            "WARNING: these points were measured on several hardware classes and the sweep has "
            "no baseline to divide by: the raw figures below compare hardware as much as "
            "configurations. Rerun with baseline=true, or give the sweep hosts of one class."
        )
    lines += [
        "",
        f"| context | concurrency | output len | category | winner | {unit} | runner-up | {unit} "
        "| p | speed-up |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        best, runner = _named(c, "best", relative), _named(c, "runner_up", relative)
        who = best if c["winner"] else f"tie: {best} ~ {runner}"
        lines.append(
            f"| {size_label(c['context'])} | {c['concurrency']} | {size_label(c['output_len'])} "
            f"| {c['category']} "
            f"| {who} | {_value_ci(c['best_value'], c['best_ci'], c['best_n'], spec)} "
            f"| {runner} "
            f"| {_value_ci(c['runner_up_value'], c['runner_up_ci'], c['runner_up_n'], spec)} "
            f"| {_f(c['p_value'], '.3g')} | {_f(c['speedup'], '.2f')} |"
        )
    if not cells:
        lines += ["", "No complete cell without failed requests yet."]
    return lines


def _named(c: dict[str, Any], key: str, with_class: bool) -> str:
    """A point of the winner table, with the hardware class that measured it when several did."""
    name = _f(c[key])
    cls = c.get(f"{key}_class")
    return f"{name} ({cls})" if with_class and c[key] is not None and cls else name


def _status(p: PointResult) -> str:
    """The status, and where a point measured by an earlier sweep was reused from."""
    origin = p.meta.get("reused_from") if p.status == "complete" else None
    if not isinstance(origin, dict):
        return p.status
    return f"{p.status}, reused from {origin.get('sweep')}/{origin.get('point')}"


def _points_lines(points: list[PointResult]) -> list[str]:
    lines = [
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
            f"| {p.point_id} | {_status(p)} | {_f(s.get('algorithm'))} | {_f(s.get('budget'))} "
            f"| {_f(s.get('topk'))} | {_f(s.get('window'))} | {_f(t.get('restarted'))} "
            f"| {_f(t.get('load_s'))} | {_f(t.get('bench_s'))} | {_f(t.get('wall_s'))} |"
        )
    return lines


def _cell_lines(table: list[dict[str, Any]], objective: Objective) -> list[str]:
    extra = objective.name != "throughput"
    lines = [
        "## Every point x cell",
        "",
        "Throughput in output tokens/s (median over repetitions; the interval is of the mean); "
        "speed-up = throughput / the baseline's for the same cell (bench.speedup); "
        "x TPOT = baseline TPOT / TPOT.",
        "",
        "| point | cell | n | tok/s | tok/s 95% CI | TTFT p50 | TTFT p99 | TPOT p50 | TPOT p99 "
        "| accept | speed-up | x TPOT | failed | valid |"
        + (f" {objective.name} |" if extra else ""),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if extra else ""),
    ]
    for r in table:
        if r.get("cell") is None:
            continue
        n = r.get("repetitions")
        fails = (r.get("failed_requests") or 0) + (r.get("incomplete_requests") or 0)
        ci = _interval(r["output_throughput_ci_low"], r["output_throughput_ci_high"], n)
        obj = interval(r)
        value = _value_ci(r["objective_mean"], obj, r["objective_n"], SPEC[objective.name])
        lines.append(
            f"| {r['point']} | {r['cell']} | {_f(n)} | {_f(r['output_throughput'])} | {ci} "
            f"| {_f(r['ttft_p50_ms'])} | {_f(r['ttft_p99_ms'])} | {_f(r['tpot_p50_ms'], '.2f')} "
            f"| {_f(r['tpot_p99_ms'], '.2f')} | {_f(r['accept_length'], '.2f')} "
            f"| {_f(r['speedup'], '.2f')} | {_f(r['speedup_tpot'], '.2f')} | {fails} "
            f"| {'yes' if r['valid'] else 'NO'} |" + (f" {value} |" if extra else "")
        )
    return lines


def _greedy_lines(verdicts: dict[str, greedy.Verdict], minimum: float) -> list[str]:
    if not verdicts:
        return []
    lines = [
        "## Greedy-output check",
        "",
        "Every point answered the same fixed prompts at temperature 0, one at a time; a "
        "speculative point's output token ids are compared with the baseline's (same build, "
        "same hardware class). Speculative decoding is lossless only when its drafter and "
        f"verify path are correct: a point below greedy_match_min {minimum:g} (share of "
        "identical outputs; docs/greedy-check.md) is no winner and deploy refuses it.",
        "",
        "| point | check | identical | mean common prefix | prefix share | note |",
        "|---|---|---|---|---|---|",
    ]
    for pid, v in sorted(verdicts.items()):
        same = f"{v.identical}/{v.compared} ({v.identical_share:.0%})" if v.compared else "-"
        prefix = "-" if v.mean_common_prefix is None else f"{v.mean_common_prefix:.1f} tokens"
        share = "-" if v.mean_prefix_share is None else f"{v.mean_prefix_share:.0%}"
        status = "REFUSED" if v.status == "fail" else v.status
        lines.append(f"| {pid} | {status} | {same} | {prefix} | {share} | {v.why} |")
    return lines


def _est(e: Estimate | None, spec: str) -> str:
    return "-" if e is None else _value_ci(e.mean, _pair(e), e.n, spec)


def _pair(e: Estimate) -> list[float] | None:
    return None if e.ci_low is None or e.ci_high is None else [e.ci_low, e.ci_high]


def _source_lines(
    table: list[dict[str, Any]], decisions: list[dict[str, Any]], objective: Objective
) -> list[str]:
    """Per cell, per source: accept length, output tok/s per request and TPOT with their
    intervals, and the winner or tie per source beside the overall one."""
    if not sources.mixed(table):
        return []
    spec = SPEC[objective.name]
    lines = [
        "## Per source",
        "",
        "Each request carries its source (the built-in workload's domain, or the dataset's "
        "`source`). Per source: accept length, output tok/s PER REQUEST (its requests' tokens "
        f"over their own latencies) and TPOT p50, mean ± half-width ({CI_METHOD}); the winner "
        f"or tie per source by the objective's per-source figure ({TEST_METHOD}).",
    ]
    by_cell: dict[str, list[dict[str, Any]]] = {}
    for r in table:
        by_cell.setdefault(r["cell"], []).append(r)
    decided = {tuple(d[k] for k in sources.KEYS): d for d in decisions}
    for cid, rows_ in sorted(by_cell.items()):
        lines += [
            "",
            f"### {cid}",
            "",
            "| source | point | accept length | tok/s per request | TPOT p50 ms | winner or tie |",
            "|---|---|---|---|---|---|",
        ]
        for r in sorted(rows_, key=lambda r: (r["source"], r["point"])):
            d = decided.get(tuple(r[k] for k in sources.KEYS))
            verdict = ""
            if d and r["point"] in ([d["winner"]] if d["winner"] else d["tie"]):
                verdict = "winner" if d["winner"] else f"tie: {d['tie'][0]} ~ {d['tie'][1]}"
            est = r["estimates"]
            lines.append(
                f"| {r['source']} | {r['point']} | {_est(est['accept_length'], '.2f')} "
                f"| {_est(est['tok_s'], '.1f')} | {_est(est['tpot_p50_ms'], '.2f')} "
                f"| {verdict or ('NO (failed requests)' if not r['valid'] else '')} |"
            )
        here = [d for d in decisions if d["cell"] == cid]
        if here:
            lines += [
                "",
                f"By source ({objective.name}): " + "; ".join(_decided(d, spec) for d in here),
            ]
    return lines


def _decided(d: dict[str, Any], spec: str) -> str:
    if d["tie"]:
        return f"{d['source']}: tie: {d['tie'][0]} ~ {d['tie'][1]}"
    value = _value_ci(d["best_value"], d["best_ci"], d["best_n"], spec)
    return f"{d['source']}: {d['winner']} ({value})"


def to_markdown(
    name: str,
    points: list[PointResult],
    table: list[dict[str, Any]],
    plots: list[str],
    objective: Objective | None = None,
    cells: list[dict[str, Any]] | None = None,
    verdicts: dict[str, greedy.Verdict] | None = None,
    source_table: list[dict[str, Any]] | None = None,
    greedy_match_min: float = greedy.MATCH_MIN,
) -> str:
    """report.md: the winner per cell on top, the greedy-output check, the figures per source,
    then the points, every point x cell, failures and plots."""
    objective = objective or objectives_mod.make()
    verdicts = verdicts or {}
    refused = {p for p, v in verdicts.items() if v.status == "fail"}
    cells = winners(table, objective, refused) if cells is None else cells
    source_table = source_table or []
    complete = sum(1 for p in points if p.status == "complete")
    failed = [p for p in points if p.status == "failed"]
    lines = [
        f"# Sweep {name}",
        "",
        f"{complete} of {len(points)} points complete, {len(failed)} failed, "
        f"{len(points) - complete - len(failed)} not run.",
        "",
        *_winner_lines(cells, objective),
    ]
    if refused:
        lines += [
            "",
            "Not winners, whatever their speed: "
            + "; ".join(f"{p} ({verdicts[p].figures()})" for p in sorted(refused)),
        ]
    for section in (
        _greedy_lines(verdicts, greedy_match_min),
        _source_lines(source_table, sources.winners(source_table, objective, refused), objective),
    ):
        if section:
            lines += ["", *section]
    lines += [
        "",
        *_points_lines(points),
        "",
        *_cell_lines(table, objective),
    ]
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


def incomplete(
    sweep_dir: Path, points: list[Any], search: dict[str, Any] | None = None
) -> list[str]:
    """Points the latest run planned that are not complete (failed, or never ran). A search
    that is over planned only its full benches (search.json's `full`) and the baseline: a point
    a halving round might have benched on and did not is not missing."""
    runs = (layout.read_sweep(sweep_dir) or {}).get("runs") or []
    planned = runs[-1].get("points", []) if runs else [p.point_id for p in points]
    full = full_benches(search)
    if full is not None:
        wanted = full | {p.point_id for p in points if p.baseline}
        planned = [pid for pid in planned if pid in wanted]
    status = {p.point_id: p.status for p in points}
    return [pid for pid in planned if status.get(pid) != "complete"]


def _best_line(c: dict[str, Any], objective: Objective) -> str:
    """One human-readable line per cell for the playbook's output."""
    spec, unit = _spec_unit([c], objective)
    where = (
        f"ctx {size_label(c['context'])} c {c['concurrency']} "
        f"out {size_label(c['output_len'])} {c['category']}"
    )
    best = _value_ci(c["best_value"], c["best_ci"], c["best_n"], spec)
    if c["tie"]:
        runner = _value_ci(c["runner_up_value"], c["runner_up_ci"], c["runner_up_n"], spec)
        return f"{where}: tie: {c['tie'][0]} ~ {c['tie'][1]} ({best} vs {runner} {unit})"
    speedup = "" if c["speedup"] is None else f", x{c['speedup']:.2f}"
    return f"{where}: {c['winner']} {best} {unit}{speedup}"


def _search_lines(search: dict[str, Any]) -> list[str]:
    """report.md's section on a halving or descent search (sweep/search_rounds.py's search.json)."""
    st = search.get("strategy") or {}
    budget = st.get("max_restarts") or "none"
    if search.get("search") == "descent":
        about = (
            f"Coordinate descent (max_restarts {budget}): the points above are the ones it "
            "measured, each with the full bench; it stopped where no single step from the best "
            "was left to try, so the points it never measured were not compared."
        )
    else:
        about = (
            f"Successive halving (eta {st.get('eta')}, {st.get('levels')} levels, max_restarts "
            f"{budget}, run-on {'on' if st.get('run_on') else 'off'}): the points above were "
            "measured with the full bench: the finalists"
            + (
                ", and in the round before the last the points benched at once after their "
                "screening, on the server still running them, because they led the round so far "
                "(`+full`: no second start for them)"
                if st.get("run_on")
                else ""
            )
            + ". The screening runs are in the sibling sweeps `<sweep>.screen<level>`."
        )
    lines = [
        "## Search",
        "",
        about,
        "",
        *[f"- {line}" for line in search.get("rounds") or []],
        "",
    ]
    cost = search.get("cost")
    if cost:
        lines.append(f"Cost (from the recorded load and bench times): {cost['line']}.")
    else:
        lines.append(
            f"Restarts: {search.get('restarts')} planned; the full grid: "
            f"{search.get('grid_restarts')} (no time figures yet)."
        )
    return lines


def _search_summary(search: dict[str, Any] | None) -> list[str]:
    if not search:
        return []
    cost = search.get("cost")
    if cost:
        return [cost["line"]]
    name = search.get("search") or "halving"
    return [f"{name}: {search.get('restarts')} restarts; full grid {search.get('grid_restarts')}"]


def write_report(
    sweep_dir: Path,
    with_plots: bool = True,
    objective: str = objectives_mod.DEFAULT,
    slo_ttft_ms: float | None = None,
    slo_tpot_ms: float | None = None,
    greedy_match_min: float = greedy.MATCH_MIN,
) -> dict[str, Any]:
    """summary.csv, report.md and (with_plots) the PNGs; ValueError for a bad objective, SLO
    (sweep.objectives.make) or greedy_match_min before anything is written."""
    obj = objectives_mod.make(objective, slo_ttft_ms, slo_tpot_ms)
    greedy_match_min = greedy.check_minimum(greedy_match_min)
    search = layout.read_json(sweep_dir / SEARCH_FILE)
    points = load_points(sweep_dir, obj)
    full = full_benches(search)
    if full is not None:
        # a point halving screened out was never to be benched in full: its Search line names it
        points = [p for p in points if p.baseline or p.point_id in full or p.status != "not run"]
    table = rows(points, obj.name)
    verdicts = greedy.verdicts(sweep_dir, points, greedy_match_min)
    refused = {p for p, v in verdicts.items() if v.status == "fail"}
    cells = winners(table, obj, refused)
    source_table = sources.rows(sweep_dir, points, obj)
    plots: list[str] = []
    if with_plots:
        from sweep.plots import write_plots

        plots = write_plots(sweep_dir, table)
    write_atomic(sweep_dir / "summary.csv", to_csv(table))
    md = to_markdown(
        sweep_dir.name,
        points,
        table,
        plots,
        obj,
        cells,
        verdicts,
        source_table,
        greedy_match_min,
    )
    if search:
        md += "\n" + "\n".join(_search_lines(search)) + "\n"
    write_atomic(sweep_dir / "report.md", md)
    return {
        "report": str(sweep_dir / "report.md"),
        "summary": str(sweep_dir / "summary.csv"),
        "plots": [str(sweep_dir / p) for p in plots],
        "points": {p.point_id: p.status for p in points},
        # a search's failed runs (this invocation's, at any level) count too, and so does a
        # search the playbook's rounds did not finish
        "incomplete": incomplete(sweep_dir, points, search)
        + list((search or {}).get("failed") or [])
        + (
            [f"{search['search']} search not over (rerun to go on)"]
            if search and not search.get("done")
            else []
        ),
        "objective": obj.name,
        "best": [_best_line(c, obj) for c in cells]
        + [f"{p}: greedy-output check REFUSED: {verdicts[p].figures()}" for p in sorted(refused)]
        + _search_summary(search),
        "cells": cells,
        "greedy": {p: v.to_dict() for p, v in verdicts.items()},
    }
