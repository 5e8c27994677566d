"""The sweep report on the controller: summary.csv, report.md, report.html and plots, from the point
directories.

write_report puts the parts together: sweep.results.results reads the points and makes a row per
point x cell (speed-ups against the baseline, intervals across repetitions), sweep.store.greedy
checks each point's temperature-0 outputs against the baseline's, sweep.results.decision picks the
winner or tie per cell by the objective (sweep.config.objectives) among the points that pass,
sweep.results.sources does the same per source, sweep.report.plots draws, sweep.report.render
writes the text and sweep.report.html makes it one page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.records import write_atomic
from sweep import layout
from sweep.config import objectives as objectives_mod
from sweep.config.load import CAPACITY_OBJECTIVE
from sweep.config.params import greedy_minimum
from sweep.report import capacity, html, render
from sweep.results import sources
from sweep.results.decision import winners
from sweep.results.results import PointResult, baseline_of, load_points, rows, twins
from sweep.rollout import deploy
from sweep.search.search_rounds import full_benches
from sweep.store import failures, greedy


def past_edge(points: list[PointResult]) -> list[str]:
    """Points this build cannot run on these hosts: failed for a cause that teaches (out of
    memory, a rejected flag) or ruled out by such a failure (sweep/store/failures.py). They are
    answers, not gaps: a rerun starts none of them, so they are not `incomplete`."""
    return [
        p.point_id
        for p in points
        if p.status == "ruled out"
        or (p.status == "failed" and p.meta.get("cause") in failures.TEACHING)
    ]


def _run_dir(sweep_dir: Path, level: str, levels: int) -> Path:
    """Where a search's run at `level` was recorded: the sweep's own directory, or, for the
    screening levels of a retired halving (docs/search.md), its sibling `<sweep>.screen<level>`."""
    if not level.isdigit() or int(level) >= levels - 1:
        return sweep_dir
    return sweep_dir.with_name(f"{sweep_dir.name}.screen{level}")


def _search_failed(sweep_dir: Path, search: dict[str, Any]) -> list[str]:
    """A search's failed runs ("<point>@L<level>") a rerun would try again: not those whose
    cause teaches."""
    levels = int((search.get("strategy") or {}).get("levels") or 1)
    out = []
    for run in search.get("failed") or []:
        pid, _, level = str(run).rpartition("@L")
        d = _run_dir(sweep_dir, level, levels)
        cause = (layout.read_json(d / pid / layout.FAILURE_FILE) or {}).get("cause")
        if cause not in failures.TEACHING:
            out.append(str(run))
    return out


def incomplete(
    sweep_dir: Path, points: list[PointResult], search: dict[str, Any] | None = None
) -> list[str]:
    """Points the latest run planned that are not complete (failed, or never ran) and that a
    rerun would start (not past_edge). A search that is over planned only its full benches
    (search.json's `full`) and the baseline: a point it did not measure is not missing."""
    runs = (layout.read_sweep(sweep_dir) or {}).get("runs") or []
    planned = runs[-1].get("points", []) if runs else [p.point_id for p in points]
    full = full_benches(search)
    if full is not None:
        wanted = full | {p.point_id for p in points if p.baseline}
        planned = [pid for pid in planned if pid in wanted]
    status = {p.point_id: p.status for p in points}
    edge = set(past_edge(points))
    return [pid for pid in planned if status.get(pid) != "complete" and pid not in edge]


def write_report(
    sweep_dir: Path,
    with_plots: bool = True,
    objective: str = objectives_mod.DEFAULT,
    slo_ttft_ms: float | None = None,
    slo_tpot_ms: float | None = None,
    greedy_match_min: float = greedy.MATCH_MIN,
) -> dict[str, Any]:
    """summary.csv, report.md, report.html (the same text as one page, sweep/report/html.py)
    and (with_plots) the PNGs; ValueError for a bad objective, SLO
    (sweep.config.objectives.make) or greedy_match_min before anything is written."""
    # capacity ranks whole capacity searches (sweep/report/capacity.py); the cells keep the
    # default's
    by_capacity = objective == CAPACITY_OBJECTIVE
    obj = objectives_mod.make(
        objectives_mod.DEFAULT if by_capacity else objective, slo_ttft_ms, slo_tpot_ms
    )
    greedy_match_min = greedy_minimum(greedy_match_min)
    search = layout.read_json(sweep_dir / layout.SEARCH_FILE)
    points = load_points(sweep_dir, obj)
    full = full_benches(search)
    if full is not None:
        # a point the search did not measure in full is not shown (its Search section names it)
        points = [p for p in points if p.baseline or p.point_id in full or p.status != "not run"]
    table = rows(points, obj.name)
    verdicts = greedy.verdicts(sweep_dir, points, greedy_match_min)
    refused = {p for p, v in verdicts.items() if v.status == "fail"}
    cells = winners(table, obj, refused | set(twins(points)))
    source_table = sources.rows(sweep_dir, points, obj)
    plots: list[str] = []
    search_png = None
    if with_plots:
        from sweep.report.plots import write_plots
        from sweep.report.search_plot import SEARCH_PNG, search_plot

        plots = write_plots(sweep_dir, table)
        ruled = (layout.read_sweep(sweep_dir) or {}).get("ruled_out") or {}
        if search and search_plot(search, set(ruled), sweep_dir / SEARCH_PNG):
            search_png = SEARCH_PNG
    write_atomic(sweep_dir / "summary.csv", render.to_csv(table))
    md = render.to_markdown(
        sweep_dir.name,
        points,
        table,
        plots,
        obj,
        cells,
        verdicts,
        source_table,
        greedy_match_min,
        search,
        search_png,
    )
    load_md, load_best, load_plots = capacity.section(
        sweep_dir, points, baseline_of(points), refused | set(twins(points)), with_plots
    )
    if load_md:
        md = md.rstrip("\n") + "\n\n" + "\n".join(load_md)
    deployed = deploy.section(sweep_dir)
    if deployed:
        md = md.rstrip("\n") + "\n\n" + "\n".join(deployed) + "\n"
    plots += load_plots + ([search_png] if search_png else [])
    write_atomic(sweep_dir / "report.md", md)
    write_atomic(sweep_dir / html.HTML_FILE, html.page(md, sweep_dir))
    return {
        "report": str(sweep_dir / "report.md"),
        "html": str(sweep_dir / html.HTML_FILE),
        "summary": str(sweep_dir / "summary.csv"),
        "plots": [str(sweep_dir / p) for p in plots],
        "points": {p.point_id: p.status for p in points},
        "past_edge": past_edge(points),
        # a search's failed runs (this invocation's, at any level) count too, and so does a
        # search the playbook's rounds did not finish
        "incomplete": incomplete(sweep_dir, points, search)
        + (_search_failed(sweep_dir, search) if search else [])
        + (
            [f"{search['search']} search not over (rerun to go on)"]
            if search and not search.get("done")
            else []
        ),
        # the stop marker's reason (stop_on_failure, a bench that refused): a rerun clears it
        "stopped": layout.stop_reason(sweep_dir),
        "objective": objective if by_capacity else obj.name,
        # by capacity the cells are trials at each point's own rates: their winners mean little
        "best": (
            load_best if by_capacity else [render.best_line(c, obj) for c in cells] + load_best
        )
        + [f"{p}: greedy-output check REFUSED: {verdicts[p].figures()}" for p in sorted(refused)]
        + render.search_summary(search),
        "cells": cells,
        "greedy": {p: v.to_dict() for p, v in verdicts.items()},
    }
