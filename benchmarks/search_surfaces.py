"""The model search (sweep/search/model_search.py) against the full grid on generated objective
surfaces: how many restarts it spends and whether its answer is the grid's.

    .venv/bin/python benchmarks/search_surfaces.py           # 30 surfaces a class, 2 jobs
    .venv/bin/python benchmarks/search_surfaces.py --quick   # 10 a class
    .venv/bin/python benchmarks/search_surfaces.py --confirm 2   # + the best's rivals again
    .venv/bin/python benchmarks/search_surfaces.py --smooth 2    # + the answer by the model's mean
    .venv/bin/python benchmarks/search_surfaces.py --max-repetitions 3   # no more repetitions
    .venv/bin/python benchmarks/search_surfaces.py --likely 2    # the likely settings' span (3)
    .venv/bin/python benchmarks/search_surfaces.py --cover 2     # without the rule of regions left
    .venv/bin/python benchmarks/search_surfaces.py --no-neighbours  # without the best's neighbours
    .venv/bin/python benchmarks/search_surfaces.py --no-diagonals  # the model's scales on the axes
    .venv/bin/python benchmarks/search_surfaces.py --budget-axis linear  # the budget, not its log
    .venv/bin/python benchmarks/search_surfaces.py --load-seconds 360 --rep-seconds 60  # the costs
    .venv/bin/python benchmarks/search_surfaces.py --classes edge,narrow --noises 0.05  # a subset
    .venv/bin/python benchmarks/search_surfaces.py --first-out 0  # no stop after one repetition
    .venv/bin/python benchmarks/search_surfaces.py --no-memory  # without the runs' memory fit

The grid: 6 budgets (8 16 32 48 64 96) x 4 topk (1 2 4 6) x 3 windows (1024 2048 4096) = 72 DDTree
points. Seven classes of surface (the log objective as a function of log budget, topk and log
window, each scaled to [0, 1]), `--surfaces` of each, seeded (`--seed`):

- independent: one concave curve per parameter, its peak inside the range or past an end;
- ridge: budget and topk interact, correlation 0.5 to 0.9 in size, either sign, plus a window
  curve: the best topk moves with the budget;
- plateau: below a budget (16 to 64) topk has no effect (a DDTree chain): those points start the
  same server as their topk-1 point, so, as the planner does with such twins (sweep/config/points.py
  same_servers), the grid and the search count them once; above it a tree adds a gain (or a
  loss) that grows with the budget, best at a width that grows with it too;
- two-peaks: two separate bumps over a floor, the lower 60-100 % of the higher, each a local best
  of the grid (one step along one axis leads nowhere higher);
- narrow: peaks of random width: a broad bump (0.3 to 1 of each axis) and a narrow one 0.5 to 1.2
  grid steps wide, centred on a grid point, 0.8 to 1.25 times its height;
- anisotropic: one bump on a LINEAR budget axis, turned at random in the three axes, its widths
  0.12 to 1.5 (up to ten times apart), plus a gentle tilt;
- edge: a surface that peaks late (concave curves peaking at 0.4 to 1.6 of each axis), a ridge
  or two peaks, and an edge: every point whose memory proxy budget * (1 + c * topk) * window ** a
  (c 0.1 to 1, a 0.3 to 1.2) is in the top 10 to 50 % of the grid fails to start (an upper set
  in the three axes: `failing`); its measurement is [] (a failed start), and the grid and the
  search are judged against the best point that can run. The model search gets
  sweep/store/failures.py dominated as `rules` (what a failure rules out) and `sizes` (which points
  are at least as large), as the sweep hands it every failure out of memory; every class gets them
  (no other class fails). A start that runs reports the share of its memory limit it used
  (memory_share: the proxy over the limit, which lies halfway in logs between the largest point that
  runs and the smallest that fails), as a run's journal does to the sweep (sweep/search/memory.py
  memory_share), and the model search does not start a point the fit of those shares puts over
  the limit (sweep/search/memory.py over_limit; `--no-memory`: without it).

Every surface spans a factor 2 to 5 between its worst and best point. A measurement is three
repetitions, each the true value times 1 + noise x N(0, 1), noise 2 % and 5 %, drawn once per point
(the grid and the search see the same draws). The grid's answer is its best mean. The model
search measures as the sweep does (adaptive()): one repetition, then, unless it is clearly out
(bench/more_repetitions.py MoreRule.first), the rest, then more while the rule says so.

The cost model (`--load-seconds`, 360; `--rep-seconds`, 60): a start costs a load, a failed
start too (its seconds to failure), a repetition its bench. The full grid starts every point,
failures included, with three repetitions each. A second table gives, per class and noise, for
the grid and the model search, the time as a share of the grid's (median / max), the
starts (median / max share), the failed starts (median / max) and the answers within 2 % of the
best point that can run, and whether the model search meets the targets (within 2 % on all but
1 in 30; time median at most 30 % of the grid's at 2 % noise and 65 % at 5 %; failed starts
median at most 2 and max at most 4).

Per class and noise the table gives, for the model search: the restarts (median and
max, as a share of the grid's restarts: one per distinct server), how often the answer is within
2 % of the grid's answer (its true value at least 98 % of the grid answer's true value: the
acceptance figure), how often it is within 2 % of the true best, how often it is the true best,
and the worst answer (true value / true best); the grid's own figures against the true best; and
how many of the model search's stops were settled (no unmeasured point can beat its answer by
more than the tie margin, by its model, and none it does not rule out lies far from every point
measured: the rule of regions left); of its misses (not within 2 % of the true best), how many
never measured the true best; and how the report would put the grid's and the search's misses
(sweep/results/decision.py's test of the answer against the runner-up): the winner named, or a tie
that hands the operator a point within 2 % of the true best, or a tie of two misses.

The script's modules lie beside it: surfaces_generate.py (the grid, the classes of surface,
`failing`, `memory_share`, `truth`), surfaces_measure.py (`noisy`, `adaptive`, `hosts_search`,
--confirm and --smooth, the report's decision), surfaces_run.py (`run_one`: one surface
searched, its `Outcome`) and surfaces_report.py (the tables).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# its modules beside it (surfaces_*.py), also where the script is loaded by path (the unit tests)
sys.path.append(str(Path(__file__).resolve().parent))

from bench import more_repetitions
from sweep.search import model_search

# The names marked F401 are not used here: tests/unit/test_sweep_model_search.py loads this
# script by path and reaches them through it.
from surfaces_generate import (
    BUDGETS,
    CLASSES,
    NOISES,
    REPS,
    TOPKS,
    WINDOWS,
    WITHIN,
    _budget_at,  # noqa: F401
    _local_bests,  # noqa: F401
    distinct_points,  # noqa: F401
    grid_points,
    truth,  # noqa: F401
    two_peaks,  # noqa: F401
)
from surfaces_measure import (
    adaptive,  # noqa: F401
    called,  # noqa: F401
    decided,  # noqa: F401
    hosts_search,  # noqa: F401
    noisy,  # noqa: F401
)
from surfaces_report import cells, print_costs, print_rows, report_of
from surfaces_run import (
    Outcome,  # noqa: F401
    Task,
    grid_of,  # noqa: F401
    run_one,
)


def main(argv: Sequence[str] | None = None) -> int:
    doc = __doc__ or ""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--surfaces", type=int, default=30, help="surfaces per class (30)")
    ap.add_argument("--quick", action="store_true", help="10 surfaces per class")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    d = model_search.ModelSearch()
    ap.add_argument("--margin", type=float, default=d.margin, help="the tie margin (0.02)")
    ap.add_argument("--confidence", type=float, default=d.confidence, help="sds of the bound")
    ap.add_argument("--initial", type=int, default=d.initial, help="first round's points")
    ap.add_argument(
        "--likely",
        type=float,
        default=d.likely,
        help=f"log likelihood within which a single setting bounds a gain too ({d.likely:g})",
    )
    ap.add_argument(
        "--cover",
        type=float,
        default=d.cover,
        help="not settled while a point not ruled out lies farther than this from every point "
        f"measured ({d.cover:g} of the axes' extent; 2: never, the rule off)",
    )
    ap.add_argument(
        "--ruled-out",
        type=float,
        default=d.ruled_out,
        help=f"how far below the best the model rules a point out ({d.ruled_out:g})",
    )
    ap.add_argument(
        "--no-neighbours",
        dest="neighbours",
        action="store_false",
        help="without the rule of the best's neighbours (settled with a neighbour of the best "
        "unmeasured that the model does not put more than the margin below it)",
    )
    ap.add_argument(
        "--no-diagonals",
        dest="diagonals",
        action="store_false",
        help="the model's length scales along the axes only (without the metrics that run them "
        "along a diagonal of two axes: sweep/search/gaussian_process.py)",
    )
    ap.add_argument(
        "--confirm",
        type=int,
        default=0,
        help="an experiment, not what the sweep does: after the grid and the model search, up to "
        "this many rounds measuring again the points within 2 sd of the best (extra rows)",
    )
    ap.add_argument(
        "--smooth",
        type=int,
        default=None,
        metavar="N",
        help="an experiment, not what the sweep does: the answer by the model's estimate (each "
        "mean pooled with its neighbours') after measuring again the N points it rates best, for "
        "the model search (model~) and, with none measured again, the full grid (grid~)",
    )
    ap.add_argument(
        "--max-repetitions",
        type=int,
        default=d.max_repetitions,
        metavar="R",
        help="the model search's cap on a point's repetitions while it may be the best "
        f"({d.max_repetitions}, the sweep's default; {REPS}: no more than the grid's)",
    )
    ap.add_argument(
        "--batch",
        type=int,
        default=1,
        metavar="N",
        help="also the model search with rounds of N points (what the sweep does on N hosts: "
        "model xN), its rounds beside those of one point a round",
    )
    ap.add_argument(
        "--budget-axis",
        choices=("log", "linear"),
        default="log",
        help="how the surfaces act on the budget: through its log (log, the suite as specified: "
        "8 to 16 is as large a step as 48 to 96) or through the budget itself (linear, a check "
        "that the search does not lean on that)",
    )
    ap.add_argument(
        "--load-seconds",
        type=float,
        default=360.0,
        help="the cost model: seconds a start costs (a load; a failed start too) (360)",
    )
    ap.add_argument(
        "--rep-seconds",
        type=float,
        default=60.0,
        help="the cost model: seconds a repetition costs (60)",
    )
    ap.add_argument(
        "--no-memory",
        dest="memory",
        action="store_false",
        help="without the fit of the memory the runs report (the model search starts what only "
        "a failure rules out)",
    )
    ap.add_argument(
        "--first-out",
        type=float,
        default=more_repetitions.OUT_Z,
        metavar="Z",
        help="a run stops after its first repetition when that is clearly out: more than Z sd "
        f"beyond the margin behind the best (bench/more_repetitions.py MoreRule.first; "
        f"{more_repetitions.OUT_Z:g}; 0: never)",
    )
    ap.add_argument(
        "--classes",
        default=",".join(CLASSES),
        help=f"the classes to run, comma-separated ({','.join(CLASSES)})",
    )
    ap.add_argument(
        "--noises",
        default=",".join(f"{nz:g}" for nz in NOISES),
        help="the noises to run, comma-separated (0.02,0.05)",
    )
    args = ap.parse_args(argv)
    noises = tuple(float(v) for v in args.noises.split(",") if v)
    classes = tuple(c for c in args.classes.split(",") if c)
    unknown = [c for c in classes if c not in CLASSES]
    if unknown:
        ap.error(f"--classes: unknown {', '.join(unknown)} (of {', '.join(CLASSES)})")
    strat = model_search.ModelSearch(
        margin=args.margin,
        confidence=args.confidence,
        initial=args.initial,
        likely=args.likely,
        max_repetitions=args.max_repetitions,
        cover=args.cover,
        ruled_out=args.ruled_out,
        neighbours=args.neighbours,
        diagonals=args.diagonals,
    )
    n = 10 if args.quick else args.surfaces
    t0 = time.monotonic()
    tasks = [
        Task(
            k,
            i,
            nz,
            args.seed,
            strat,
            args.confirm,
            args.smooth,
            args.batch,
            args.budget_axis,
            args.load_seconds,
            args.rep_seconds,
            args.first_out,
            args.memory,
        )
        for nz in noises
        for k in classes
        for i in range(n)
    ]
    with ProcessPoolExecutor(args.jobs) as pool:
        results = list(pool.map(run_one, tasks, chunksize=2))
    by = {(t.kind, t.noise, t.index): r for t, r in zip(tasks, results, strict=True)}
    print(
        f"grid: {len(BUDGETS)} budgets x {len(TOPKS)} topk x {len(WINDOWS)} windows = "
        f"{len(grid_points())} points (plateau: less its twins); {n} surfaces per class; {REPS} "
        f"repetitions; seed {args.seed}; surfaces act on the budget's {args.budget_axis} scale"
    )
    print(
        f"model search: tie margin {strat.margin:g}, bound at {strat.confidence:g} sd, first "
        f"round {strat.initial} points, likely settings within {strat.likely:g}, length "
        f"scales along the axes{' and their diagonals' if strat.diagonals else ' only'}; not "
        f"settled while a point not ruled out (within {strat.ruled_out:.0%} of the best) lies "
        f"farther than {strat.cover:g} from every point measured"
        + (
            f", nor while a neighbour of the best not put more than {strat.margin:.0%} below it "
            "is unmeasured"
            if strat.neighbours
            else ""
        )
        + "; more "
        f"repetitions while a point may be the best and the noise needs them to tell "
        f"{strat.margin:.0%}, up to {strat.max_repetitions} (bench/more_repetitions.py)"
    )
    print(
        "restarts: median and max, share of the grid's; =grid: answer within 2 % of the grid's "
        "answer; 2 %: within 2 % of the true best; best: the true best; worst: answer / true best "
        f"(counts of {n}); reps: repetitions, median / max share of the grid's; misses: the "
        "model search's answers not within 2 % of the true best, the true best never measured "
        "(a region missed) / measured (the noise chose another); in the report: how the "
        "report (sweep/results/decision.py's test of the answer against the runner-up) puts the "
        "misses: named the winner / a tie with a point within 2 % of the true best / a tie of two "
        "misses"
    )
    cols = ["restarts med", "max", "=grid", "2 %", "best", "worst"]
    head = [
        "class",
        "noise",
        "grid 2 %",
        "grid best",
        "grid worst",
        *(f"model {c}" for c in ["reps", *cols]),
        "model settled",
        "model misses: unmeasured / measured",
        "grid misses in the report",
        "model misses in the report",
    ]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    met = {"grid": True, "true": True}
    wrong = {"grid": [0, 0, 0, 0], "model": [0, 0, 0, 0]}  # misses: called, tie ok, tie of two
    for nz in noises:
        for kind in classes:
            rows = [by[(kind, nz, i)] for i in range(n)]
            line = [kind, f"{nz:.0%}"]
            line += cells([r["grid"] for r in rows], search=False)
            line += cells([r["model"] for r in rows])
            line.append(str(sum(bool(r["model"].settled) for r in rows)))
            missed = [r["model"] for r in rows if r["model"].ratio < 1.0 - WITHIN]
            line.append(f"{sum(not o.seen for o in missed)} / {sum(bool(o.seen) for o in missed)}")
            for name, tally in wrong.items():
                counts = report_of([r[name] for r in rows if r[name].ratio < 1.0 - WITHIN])
                tally[:] = [a + b for a, b in zip(tally, (sum(counts), *counts), strict=True)]
                line.append(" / ".join(map(str, counts)))
            print("| " + " | ".join(line) + " |")
            model = [r["model"] for r in rows]
            shares = [o.restarts / o.grid for o in model]
            enough, cheap = n - math.floor(n / 30), statistics.median(shares) <= 0.40
            met["grid"] &= sum(o.vs_grid >= 1.0 - WITHIN for o in model) >= enough and cheap
            met["true"] &= sum(o.ratio >= 1.0 - WITHIN for o in model) >= enough and cheap
    if args.confirm:
        print(
            f"\nconfirmation (--confirm {args.confirm}): the points within 2 sd of the best "
            f"measured again, {REPS} fresh repetitions and one restart each, up to "
            f"{args.confirm} rounds"
        )
        print_rows(by, n, ("grid+", "model+"), cols, classes=classes, noises=noises)
    if args.smooth is not None:
        print(
            f"\nsmoothed answer (--smooth {args.smooth}): the measured point the model rates best; "
            f"model~ measures the {args.smooth} it rates best again first ({REPS} fresh "
            "repetitions, one restart each), grid~ measures nothing again"
        )
        print_rows(by, n, ("grid~", "model~"), cols, classes=classes, noises=noises)
    if args.batch > 1:
        print(
            f"\nrounds of {args.batch} points (--batch {args.batch}, the sweep on {args.batch} "
            "hosts): rounds median first (a round's runs go to the hosts at once), then as above"
        )
        print_rows(
            by,
            n,
            ("model", "model xN"),
            ["rounds", "reps", *cols],
            rounds=True,
            classes=classes,
            noises=noises,
        )
    print_costs(by, n, classes, args.load_seconds, args.rep_seconds, noises)
    every = [r["model"].restarts / r["model"].grid for r in results]
    for name, (misses, named, tie_ok, tie_bad) in wrong.items():
        ties = sum(not r[name].called for r in results)
        print(
            f"{name}: {misses} of {len(results)} answers not within 2 % of the true best; the "
            f"report names {named} of them the winner, calls {tie_ok} a tie with a point within "
            f"2 %, {tie_bad} a tie of two misses (it calls a tie on {ties} of all "
            f"{len(results)} answers)"
        )
    print(f"model search restarts over every surface: median {statistics.median(every):.0%}")
    for what, name in (("grid", "the grid's answer"), ("true", "the true best")):
        print(
            f"target (every class and noise: the answer within 2 % of {name} in all but 1 in 30, "
            f"median restarts <= 40 %): {'met' if met[what] else 'NOT met'}"
        )
    print(f"wall time {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
