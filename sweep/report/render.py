"""The report's text: summary.csv (one row per point x cell, COLUMNS) and report.md (the winner
per cell on top, the greedy-output check, the figures per source, the points, every point x cell,
failures, plots and the search), from sweep.results.results' rows and sweep.results.decision's
winners; and the one-line summaries `sweep report` prints.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from bench.workload import size_label
from sweep.config import objectives as objectives_mod
from sweep.config.objectives import Objective
from sweep.results import sources
from sweep.results.decision import interval, winners
from sweep.results.results import PointResult, twins
from sweep.results.stats import CI_METHOD, SUMMARY_METRICS, TEST_METHOD, Estimate
from sweep.store import greedy

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
    """The status, and where a point's measurement comes from when not from its own run: an
    earlier sweep (reused) or another point that starts the same server."""
    if p.status != "complete":
        return p.status
    same = p.meta.get("same_as")
    if isinstance(same, dict):
        return f"{p.status}, the same server as {same.get('point')}: {same.get('why')}"
    origin = p.meta.get("reused_from")
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
    search: dict[str, Any] | None = None,
    search_png: str | None = None,
) -> str:
    """report.md: the winner per cell on top, the greedy-output check, the figures per source,
    then the points, every point x cell, failures, plots and the search (search.json, its
    rounds on the grid in `search_png` when drawn)."""
    objective = objective or objectives_mod.make()
    verdicts = verdicts or {}
    refused = {p for p, v in verdicts.items() if v.status == "fail"}
    same = twins(points)
    cells = winners(table, objective, refused | set(same)) if cells is None else cells
    source_table = source_table or []
    complete = sum(1 for p in points if p.status == "complete")
    failed = [p for p in points if p.status == "failed"]
    ruled = [p for p in points if p.status == "ruled out"]
    lines = [
        f"# Sweep {name}",
        "",
        f"{complete} of {len(points)} points complete, {len(failed)} failed, "
        + (f"{len(ruled)} ruled out by a failure, " if ruled else "")
        + f"{len(points) - complete - len(failed) - len(ruled)} not run.",
        "",
        *_winner_lines(cells, objective),
    ]
    if same:
        lines += [
            "",
            "The same server as another point (its measurement, not a contender of its own): "
            + "; ".join(
                f"{p} = {t.get('point')} ({t.get('why')})" for p, t in sorted(same.items())
            ),
        ]
    if refused:
        lines += [
            "",
            "Not winners, whatever their speed: "
            + "; ".join(f"{p} ({verdicts[p].figures()})" for p in sorted(refused)),
        ]
    for section in (
        _greedy_lines(verdicts, greedy_match_min),
        _source_lines(
            source_table, sources.winners(source_table, objective, refused | set(same)), objective
        ),
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
                f"task {p.meta.get('failed_task') or '?'}, "
                f"cause: {p.meta.get('cause') or 'unknown'}"
                + (f", after {_after(p.meta)}" if _after(p.meta) else "")
                + "): "
                + " / ".join(str(p.meta.get("reason", "")).splitlines()[:3])[:500]
            )
            journal = p.meta.get("journal") or []
            if journal:
                lines += ["", "  ```", *[f"  {j}" for j in journal[-15:]], "  ```"]
    if ruled:
        lines += [
            "",
            "## Ruled out (never started)",
            "",
            "A failure for out of memory rules out every point at least as large on budget, "
            "topk and window; a rejected flag, every point that renders it "
            "(sweep/store/failures.py).",
            "",
            *(f"- {p.point_id}: {p.meta.get('why')}" for p in ruled),
        ]
    if plots:
        lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in plots]
    if search:
        lines += ["", *search_lines(search, search_png)]
    return "\n".join(lines) + "\n"


def _after(meta: dict[str, Any]) -> str:
    """How long a failed start took to fail (its load, on a real host), as a duration."""
    wall = (meta.get("timings") or {}).get("wall_s")
    return f"{float(wall):.0f} s" if isinstance(wall, (int, float)) and wall > 0 else ""


def best_line(c: dict[str, Any], objective: Objective) -> str:
    """One human-readable line per cell for the playbook's output."""
    spec, unit = _spec_unit([c], objective)
    load = (
        f"c {c['concurrency']}"
        if c.get("request_rate") is None
        else f"rate {c['request_rate']:g}/s"
        + (f" (cap {c['concurrency']})" if c["concurrency"] else "")
    )
    where = (
        f"ctx {size_label(c['context'])} {load} out {size_label(c['output_len'])} {c['category']}"
    )
    best = _value_ci(c["best_value"], c["best_ci"], c["best_n"], spec)
    if c["tie"]:
        runner = _value_ci(c["runner_up_value"], c["runner_up_ci"], c["runner_up_n"], spec)
        return f"{where}: tie: {c['tie'][0]} ~ {c['tie'][1]} ({best} vs {runner} {unit})"
    speedup = "" if c["speedup"] is None else f", x{c['speedup']:.2f}"
    return f"{where}: {c['winner']} {best} {unit}{speedup}"


def search_lines(search: dict[str, Any], plot: str | None = None) -> list[str]:
    """report.md's section on a model search (sweep/search/search_rounds.py's search.json), with
    `plot` (its rounds on the grid) when drawn, or, short, on one a retired search recorded
    (search=halving, search=descent: docs/search.md)."""
    st = search.get("strategy") or {}
    budget = st.get("max_restarts") or "none"
    verdict = search.get("verdict")
    if search.get("search") == "model":
        about = (
            f"Model search (tie margin {st.get('margin', 0.0):.1%}, bound at "
            f"{st.get('confidence')} sd, max_restarts {budget}"
            + (
                f", up to {st['batch']} points a round: one a host"
                if st.get("batch", 1) > 1
                else ""
            )
            + "): the points above are the ones "
            "it measured, each with the full bench, and the ones measured before under the same "
            "identity (warm starts, no restart). Its answer is the best mean measured, as the "
            "grid's; a model of the objective fitted to them (sweep/search/model_search.py) bounds "
            "what each point not measured may gain over it."
            + (
                " A point that may still be the best (its mean within 2 sd of the best so far, "
                "or ahead; the first measured, the best so far) was benched on with more "
                f"repetitions, up to {st['max_repetitions']}, on the server already running it, "
                "until the noise its repetitions show could tell the tie margin "
                "(bench/more_repetitions.py; its decisions in records/more.json)."
                if st.get("max_repetitions")
                else ""
            )
        )
        if verdict and search.get("done"):
            about += (
                " Settled: by the model no point it did not measure beats the answer by more "
                "than the tie margin."
                if verdict.get("settled")
                else " Not settled: the restart budget ran out before the model could say that "
                "no point it did not measure beats the answer; the points it would measure next "
                "are named below."
            )
    else:
        about = retired_search(search)
    lines = [
        "## Search",
        "",
        about,
        "",
        *[f"- {line}" for line in search.get("rounds") or []],
        "",
        *([f"![{plot}]({plot})", ""] if plot else []),
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


def search_summary(search: dict[str, Any] | None) -> list[str]:
    if not search:
        return []
    cost = search.get("cost")
    if cost:
        return [cost["line"]]
    name = search.get("search") or "search"
    return [f"{name}: {search.get('restarts')} restarts; full grid {search.get('grid_restarts')}"]


def retired_search(search: dict[str, Any]) -> str:
    """A sweep a retired search recorded (search=halving, search=descent; docs/search.md): what
    it was, retired, and what the points above are; its rounds follow as it recorded them."""
    name = search.get("search") or "an unknown search"
    full = search.get("full") or []
    measured = f"{len(full)} points measured with the full bench" if full else "its points"
    return (
        f"search: {name} (retired: docs/search.md); {measured}, shown above as any sweep's"
        + (
            " (its screening runs are in the sibling sweeps `<sweep>.screen<level>`)"
            if name == "halving"
            else ""
        )
        + ". Its rounds, as it recorded them:"
    )
