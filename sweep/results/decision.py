"""Winner or tie: the decision between the rows competing for one cell (or one source of a
cell), shared by the report's tables and deploy's choice.

A row is one point's figures there: `point`, `objective_values` (one per repetition),
`objective_mean`, `objective_ci_low`/`_high`, `objective_n`, `repetitions`. The best row by the
objective's mean wins only when a t-test (sweep.results.stats.compare_repetitions, paired by
repetition when both have every repetition) tells it from the runner-up; otherwise the two tie.

`winners` decides every cell of a sweep's rows (sweep.results.results.rows). A sweep over several
hardware classes is decided on each point's objective over its own class baseline's; one whose
points ran on several classes without baselines is decided on raw figures and says so
(`mixed_classes`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sweep.config.objectives import Objective
from sweep.results.stats import compare_repetitions, estimate

# request_rate: an open-loop cell (None for a closed-loop one, whose load is its concurrency)
CELL_KEYS = ("context", "concurrency", "request_rate", "output_len", "category")


def objective_columns(values: list[float]) -> dict[str, Any]:
    """A row's objective columns (above) from the objective's value per repetition."""
    est = estimate(values)
    return {
        "objective_mean": est.mean if est else None,
        "objective_ci_low": est.ci_low if est else None,
        "objective_ci_high": est.ci_high if est else None,
        "objective_n": len(values),
        "objective_values": values,
    }


def rank(objective: Objective, row: dict[str, Any]) -> tuple[float, str]:
    mean = float(row["objective_mean"])
    return (-mean if objective.higher_is_better else mean, str(row["point"]))


def interval(row: dict[str, Any] | None) -> list[float] | None:
    if row is None or row.get("objective_ci_low") is None:
        return None
    return [row["objective_ci_low"], row["objective_ci_high"]]


def decide(
    keys: Sequence[str], key: tuple[Any, ...], rows: list[dict[str, Any]], objective: Objective
) -> dict[str, Any]:
    """The decision for the group `key` (named by `keys`) among `rows`."""
    ranked = sorted(rows, key=lambda r: rank(objective, r))
    best = ranked[0]
    runner = ranked[1] if len(ranked) > 1 else None
    test = None
    if runner:
        whole = best.get("repetitions") == runner.get("repetitions") == best["objective_n"]
        test = compare_repetitions(
            best["objective_values"],
            runner["objective_values"],
            pairs=whole and runner["objective_n"] == best["objective_n"],
        )
    tie = [best["point"], runner["point"]] if runner and test and not test.significant else []
    return {
        **dict(zip(keys, key, strict=True)),
        "objective": objective.name,
        "winner": None if tie else best["point"],
        "tie": tie,
        "best": best["point"],
        "runner_up": runner["point"] if runner else None,
        "best_value": best["objective_mean"],
        "best_ci": interval(best),
        "best_n": best["objective_n"],
        "runner_up_value": runner["objective_mean"] if runner else None,
        "runner_up_ci": interval(runner),
        "runner_up_n": runner["objective_n"] if runner else None,
        # None without a runner-up: nothing to compare with, the best point wins uncontested
        "significant": test.significant if test else None,
        "p_value": test.p_value if test else None,
        "speedup": best.get("speedup"),
        "best_class": best.get("host_class"),
        "runner_up_class": runner.get("host_class") if runner else None,
    }


def winners(
    table: list[dict[str, Any]], objective: Objective, excluded: set[str] | None = None
) -> list[dict[str, Any]]:
    """Per cell (context x concurrency x output length x category): the best point by the
    objective's mean across repetitions, the runner-up, and whether best vs runner-up is
    significant (sweep.results.stats.compare_repetitions: paired by repetition). Not significant: a
    tie (`tie` names both, `winner` is None). Rows with failed or incomplete requests, and the
    points in `excluded` (their outputs differ from the baseline's: sweep.store.greedy), take no
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
    baseline's (sweep.results.results: `objective_relative_values`): raw values measured on
    different hardware do not compare."""
    return {**row, **objective_columns(row.get("objective_relative_values") or [])}
