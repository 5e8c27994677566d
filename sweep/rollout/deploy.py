"""Choosing what a finished sweep says to deploy (playbooks/deploy.yml), and recording the roll-out.

The choice is the report's own (sweep.results.decision.winners): per context x concurrency cell, the
winner by the objective, or a tie when best and runner-up do not differ significantly. A tie is
refused unless a point is named; a named point must be complete in the sweep.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from sweep import layout
from sweep.config import objectives as objectives_mod
from sweep.config import workload
from sweep.config.params import SweepInputError, greedy_minimum, positive_int
from sweep.results.decision import CELL_KEYS, winners
from sweep.results.results import load_points, rows, twins
from sweep.rollout import canary
from sweep.store import greedy

DEPLOYMENTS = "deployments.jsonl"


def _given(inp: dict[str, Any], key: str) -> Any:
    value = inp.get(key)
    return None if value is None or value == "" else value


def _number(inp: dict[str, Any], key: str) -> float | None:
    value = _given(inp, key)
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise SweepInputError(f"{key}={value}: not a number") from None


def _cell(cells: list[dict[str, Any]], inp: dict[str, Any]) -> dict[str, Any]:
    if _given(inp, "context") is None or _given(inp, "concurrency") is None:
        raise SweepInputError("name the cell to deploy for: -e context=<tokens> -e concurrency=<n>")
    # natural lengths are kept as 0 (bench.workload.NATURAL)
    wanted = {
        k: "0" if str(inp[k]) == "natural" else str(inp[k])
        for k in CELL_KEYS
        if _given(inp, k) is not None
    }
    found = [c for c in cells if all(str(c[k]) == v for k, v in wanted.items())]
    if len(found) == 1:
        return found[0]
    known = (
        ", ".join("/".join(f"{k}={c[k]}" for k in CELL_KEYS) for c in cells)
        or "none (no complete point)"
    )
    what = "no cell" if not found else f"{len(found)} cells"
    raise SweepInputError(
        f"{what} of the sweep match {wanted}; its cells: {known}. "
        "Add output_len or category to pick one."
    )


def choose(inp: dict[str, Any]) -> dict[str, Any]:
    """The point to deploy: {sweep, dir, point, server, cell, objective, value, summary}."""
    if _given(inp, "sweep") is None:
        raise SweepInputError("name the sweep: -e sweep=results/<sweep>")
    sweep_dir = Path(str(inp["sweep"])).resolve()
    if layout.read_sweep(sweep_dir) is None:
        raise SweepInputError(f"sweep={inp['sweep']}: no sweep there (no sweep.json)")
    try:
        obj = objectives_mod.make(
            str(_given(inp, "objective") or objectives_mod.DEFAULT),
            _number(inp, "slo_ttft_ms"),
            _number(inp, "slo_tpot_ms"),
        )
    except ValueError as e:
        raise SweepInputError(str(e)) from None
    minimum = greedy.MATCH_MIN
    if _given(inp, "greedy_match_min") is not None:
        minimum = greedy_minimum(inp["greedy_match_min"])
    points = load_points(sweep_dir, obj)
    verdicts = greedy.verdicts(sweep_dir, points, minimum)
    refused = {p for p, v in verdicts.items() if v.status == "fail"}
    cell = _cell(winners(rows(points, obj.name), obj, refused | set(twins(points))), inp)
    where = "/".join(f"{k}={cell[k]}" for k in CELL_KEYS)
    named = _given(inp, "point")
    if named is None and cell["tie"]:
        a, b = cell["tie"]
        raise SweepInputError(
            f"cell {where}: tie by {obj.name}: {a} ({cell['best_value']:.4g}) ~ {b} "
            f"({cell['runner_up_value']:.4g}), no significant difference. Name the point to "
            f"deploy: -e point={a} or -e point={b}"
        )
    chosen = str(named or cell["winner"])
    by_id = {p.point_id: p for p in points}
    if chosen not in by_id or by_id[chosen].status != "complete":
        complete = sorted(p.point_id for p in points if p.status == "complete")
        raise SweepInputError(f"point={chosen}: not a complete point of the sweep ({complete})")
    _greedy_gate(chosen, verdicts.get(chosen), minimum)
    how = "named" if named else "winner"
    chosen_cell = {k: cell[k] for k in CELL_KEYS}
    reps = _given(inp, "deploy_canary_repetitions")
    reps = canary.REPETITIONS if reps is None else positive_int("deploy_canary_repetitions", reps)
    tolerance = _number(inp, "deploy_tolerance")
    tolerance = canary.TOLERANCE if tolerance is None else tolerance
    if not 0 <= tolerance < 1:
        raise SweepInputError(f"deploy_tolerance={tolerance:g}: a share between 0 and 1")
    bench = (layout.read_sweep(sweep_dir) or {}).get("bench") or {}
    out = {
        "sweep": sweep_dir.name,
        "dir": str(sweep_dir),
        "point": chosen,
        "server": {"env": {}, **by_id[chosen].server},
        "cell": chosen_cell,
        "objective": obj.name,
        # what the canary's check needs (playbooks/tasks/deploy_canary.yml, sweep/rollout/canary.py)
        "objective_input": {
            "objective": obj.name,
            "slo_ttft_ms": obj.slo_ttft_ms,
            "slo_tpot_ms": obj.slo_tpot_ms,
        },
        "canary_bench": canary.bench_for(bench, chosen_cell, reps),
        "tolerance": tolerance,
        "greedy_match_min": minimum,
        "summary": f"deploy {chosen} ({how}, cell {where}, objective {obj.name}) from {sweep_dir}",
    }
    if isinstance(bench.get("dataset"), dict):
        digest = str(bench["dataset"]["digest"])
        out["dataset_file"] = str(sweep_dir.parent / workload.WORKLOADS / f"{digest}.jsonl")
    return out


def _greedy_gate(point: str, verdict: greedy.Verdict | None, minimum: float) -> None:
    """Refuses a point whose greedy outputs differ from the baseline's, or that could not be
    checked, unless greedy_match_min is 0."""
    if verdict is None or verdict.status in ("pass", "reference") or minimum == 0:
        return
    if verdict.status == "fail":
        raise SweepInputError(
            f"point={point}: its outputs differ from the baseline's at temperature 0: "
            f"{verdict.figures()}, below greedy_match_min {minimum:g}. A speculative "
            "configuration that changes the answers is a bug, not a winner (docs/greedy-check.md)"
        )
    raise SweepInputError(
        f"point={point}: the greedy-output check could not compare it ({verdict.why}); "
        "rerun the sweep with its baseline, or accept unchecked outputs with -e greedy_match_min=0"
    )


def record(sweep_dir: Path, entry: dict[str, Any]) -> None:
    """Appends one roll-out entry to <sweep>/deployments.jsonl (earlier lines are kept), with its
    time (`time`, epoch seconds): a rollback's record minus its failure's is the time the host was
    without the configuration it served."""
    line = json.dumps({**entry, "time": time.time()}, sort_keys=True) + "\n"
    # One short write in append mode: hosts of one batch may record at the same time.
    with (sweep_dir / DEPLOYMENTS).open("a", encoding="utf-8") as f:
        f.write(line)


def _seconds(entry: dict[str, Any]) -> float | None:
    """Its host's time out of the load balancer: rejoined less left_pool (None: not both)."""
    try:
        return float(entry["rejoined"]) - float(entry["left_pool"])
    except (KeyError, TypeError, ValueError):
        return None


def section(sweep_dir: Path) -> list[str]:
    """report.md's "Deployments": every host's roll-outs of this sweep's points from
    deployments.jsonl (a line that does not parse is skipped), with its time out of the load
    balancer; [] when nothing was deployed."""
    try:
        lines = (sweep_dir / DEPLOYMENTS).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    entries = []
    for line in lines:
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if isinstance(e, dict) and e.get("event") in ("deployed", "rolled back", "down"):
            entries.append(e)
    if not entries:
        return []
    out = [
        "## Deployments",
        "",
        f"From `{DEPLOYMENTS}`. Out of the pool: from leaving the load balancer to rejoining it "
        "(docs/balancer.md); - where the host has none, or did not rejoin. In flight: requests "
        "still in flight at the restart (0 unless the drain timed out); sent while out: what the "
        "balancer sent the host between its drain and its rejoin (HAProxy's counters; 0 is right).",
        "",
        "| time (UTC) | host | event | point | out of the pool | in flight | sent while out |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in entries:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(float(e.get("time") or 0)))
        s = _seconds(e)
        out.append(
            f"| {when} | {e.get('host', '?')} | {e['event']} | {e.get('point', '?')} | "
            f"{'-' if s is None else f'{s:.1f} s'} | {_told(e.get('in_flight'))} | "
            f"{_told(e.get('sent_while_out'))} |"
        )
    return out


def _told(value: Any) -> str:
    """A recorded count, or - when the balancer did not tell."""
    return "-" if value is None or value == "" else str(value)
