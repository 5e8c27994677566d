"""The tables of benchmarks/search_surfaces.py: a row's cells (cells), how the report puts the
misses (report_of), the experiments' tables (print_rows) and the cost table against its targets
(print_costs)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from surfaces_generate import CLASSES, NOISES, REPS, WITHIN
from surfaces_run import Outcome


def report_of(misses: Sequence[Outcome]) -> tuple[int, int, int]:
    """How the report puts `misses`: named the winner, a tie whose runner-up is within 2 % of
    the true best, a tie of two misses."""
    named = sum(bool(o.called) for o in misses)
    tie_ok = sum(not o.called and o.runner is not None and o.runner >= 1.0 - WITHIN for o in misses)
    return named, tie_ok, len(misses) - named - tie_ok


def cells(outs: Sequence[Outcome], search: bool = True, rounds: bool = False) -> list[str]:
    """restarts (median, max: share of the grid's), within 2 % of the grid's answer, within 2 %
    of the true best, the true best, worst answer / true best; `rounds`: the median rounds
    first."""
    close = sum(o.ratio >= 1.0 - WITHIN for o in outs)
    best = sum(o.ratio >= 1.0 - 1e-12 for o in outs)
    worst = f"{min(o.ratio for o in outs):.2f}"
    if not search:
        return [str(close), str(best), worst]
    shares = [o.restarts / o.grid for o in outs]
    as_grid = sum(o.vs_grid >= 1.0 - WITHIN for o in outs)
    reps = [o.reps / (o.grid * REPS) for o in outs if o.reps is not None]
    counts = [o.rounds for o in outs if o.rounds is not None]
    return [
        *([f"{statistics.median(counts):g}"] if rounds and counts else []),
        *([f"{statistics.median(reps):.0%} / {max(reps):.0%}"] if reps else []),
        f"{statistics.median(shares):.0%}",
        f"{max(shares):.0%}",
        str(as_grid),
        str(close),
        str(best),
        worst,
    ]


def print_rows(
    by: dict[tuple[str, float, int], dict[str, Outcome]],
    n: int,
    names: Sequence[str],
    cols: Sequence[str],
    rounds: bool = False,
    classes: Sequence[str] = CLASSES,
    noises: Sequence[float] = NOISES,
) -> None:
    """A table of the extra answers `names` (an experiment's rows), a line per class and noise."""
    head = ["class", "noise", *(f"{w} {c}" for w in names for c in cols)]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for nz in noises:
        for kind in classes:
            rows = [by[(kind, nz, i)] for i in range(n)]
            line = [kind, f"{nz:.0%}"]
            for w in names:
                line += cells([r[w] for r in rows], rounds=rounds)
            print("| " + " | ".join(line) + " |")


def _med_max(xs: Sequence[float], fmt: str) -> str:
    return f"{statistics.median(xs):{fmt}} / {max(xs):{fmt}}"


TIME_TARGET = {0.02: 0.30, 0.05: 0.65}  # the model search's median time, share of the grid's
FAILS_TARGET = (2, 4)  # failed starts: the median a search, the most in any


def print_costs(
    by: dict[tuple[str, float, int], dict[str, Outcome]],
    n: int,
    classes: Sequence[str],
    load: float,
    rep: float,
    noises: Sequence[float] = NOISES,
) -> bool:
    """The cost table (--load-seconds, --rep-seconds): per class and noise, for the grid and the
    model search, the time as a share of the grid's (median / max), the starts as a
    share of the grid's (median / max), the failed starts (median / max), within 2 % of the best
    point that can run (of n); for the model search also the runs stopped after one repetition
    (median) and whether the cell meets the targets. Returns whether every cell does."""
    print(
        f"\ncost: a start {load:g} s (a failed start too: its seconds to failure), a repetition "
        f"{rep:g} s; the full grid starts every point, failures included, {REPS} repetitions a "
        "run. time and starts: median / max share of the grid's; fails: failed starts median / "
        "max; 2 %: within 2 % of the best point that can run; 1-rep: the model search's runs "
        "stopped after their first repetition, median; met: within 2 % on all but 1 in 30, time "
        f"median <= {TIME_TARGET[0.02]:.0%} at 2 % noise and <= {TIME_TARGET[0.05]:.0%} at 5 %, "
        f"failed starts median <= {FAILS_TARGET[0]} and max <= {FAILS_TARGET[1]}"
    )
    head = ["class", "noise", "grid fails", "grid 2 %"]
    head += ["model time", "model starts", "model fails", "model 2 %", "model 1-rep", "met"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    ok = True
    for nz in noises:
        for kind in classes:
            rows = [by[(kind, nz, i)] for i in range(n)]
            grid = [r["grid"] for r in rows]
            line = [kind, f"{nz:.0%}", _med_max([o.fails for o in grid], "g")]
            line.append(str(sum(o.ratio >= 1.0 - WITHIN for o in grid)))
            model = [r["model"] for r in rows]
            line += [
                _med_max([(o.time or 0.0) / (o.grid_time or 1.0) for o in model], ".0%"),
                _med_max([o.restarts / o.grid for o in model], ".0%"),
                _med_max([o.fails for o in model], "g"),
                str(sum(o.ratio >= 1.0 - WITHIN for o in model)),
            ]
            share = statistics.median((o.time or 0.0) / (o.grid_time or 1.0) for o in model)
            fails = [o.fails for o in model]
            found = sum(o.ratio >= 1.0 - WITHIN for o in model)
            misses = []
            if found < n - math.floor(n / 30):
                misses.append("2 %")
            if share > TIME_TARGET.get(nz, 1.0):
                misses.append("time")
            if statistics.median(fails) > FAILS_TARGET[0] or max(fails) > FAILS_TARGET[1]:
                misses.append("fails")
            ok &= not misses
            line.append(f"{statistics.median(o.first_out for o in model):g}")
            line.append("yes" if not misses else "NOT: " + ", ".join(misses))
            print("| " + " | ".join(line) + " |")
    print(f"cost targets: {'met' if ok else 'NOT met'} in every cell")
    return ok
