"""Winner or tie: the decision between the rows competing for one cell (or one source of a
cell), shared by the report's tables and deploy's choice.

A row is one point's figures there: `point`, `objective_values` (one per repetition),
`objective_mean`, `objective_ci_low`/`_high`, `objective_n`, `repetitions`. The best row by the
objective's mean wins only when a t-test (sweep.stats.compare_repetitions, paired by repetition
when both have every repetition) tells it from the runner-up; otherwise the two tie.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sweep.objectives import Objective
from sweep.stats import compare_repetitions

CELL_KEYS = ("context", "concurrency", "output_len", "category")


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
