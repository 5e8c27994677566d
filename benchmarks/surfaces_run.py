"""One generated surface searched (benchmarks/search_surfaces.py): the full grid and the model
search on the same noisy draws, with the experiments the command line asks for (run_one, a Task
each, run in the script's process pool), and what each comes to (Outcome), its cost included."""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from bench import more_repetitions
from sweep.config.points import Point
from sweep.search import grid_axes, model_search
from sweep.search.search_state import Measurement
from sweep.store import failures

from surfaces_generate import REPS, distinct_points, failing, memory_share, truth
from surfaces_measure import adaptive, confirm, decided, hosts_search, noisy, smooth_answer


@dataclass(frozen=True)
class Outcome:
    restarts: int
    grid: int  # the grid's restarts on the surface (one per distinct server)
    ratio: float  # true value of the answer / true best
    vs_grid: float  # true value of the answer / true value of the grid's answer
    settled: bool | None = None
    reps: int | None = None  # repetitions run, where they differ from REPS a restart
    rounds: int | None = None  # the search's rounds (a round's runs go to the hosts at once)
    seen: bool | None = None  # whether the true best was among the points measured
    # the report's decision (sweep/results/decision.py): whether it names the answer the winner (its
    # test tells it from the runner-up) or calls the two a tie, and the runner-up's true value /
    # true best (on a tie the operator is handed both)
    called: bool | None = None
    runner: float | None = None
    # the cost model (--load-seconds, --rep-seconds): every start a load, a failed one too (its
    # seconds to failure), every repetition a bench; and the grid's, every point started
    time: float | None = None
    grid_time: float | None = None
    fails: int = 0  # failed starts
    first_out: int = 0  # runs stopped after their first repetition (clearly out)
    measured: tuple[str, ...] = ()  # the points the search measured (benchmarks/narrow_coverage.py)


def _measured(state: model_search.ModelState[Point]) -> list[str]:
    return [p.point_id for p in state.ranking]


def grid_of(pts: Sequence[Point]) -> grid_axes.Grid:
    return grid_axes.Grid.of({p.point_id: (p.budget, p.topk, p.window) for p in pts})


@dataclass(frozen=True)
class Task:
    kind: str
    index: int
    noise: float
    seed: int
    strategy: model_search.ModelSearch
    confirm: int = 0
    smooth: int | None = None
    batch: int = 1
    budget_axis: str = "log"
    load_seconds: float = 360.0
    rep_seconds: float = 60.0
    out_z: float = more_repetitions.OUT_Z
    memory: bool = True


def cost(recorded: Sequence[Measurement], task: Task) -> tuple[float, int, int]:
    """A search's seconds (every start a load, a failed one too; every repetition a bench),
    its failed starts and its runs stopped after one repetition."""
    starts = len(recorded)
    reps = sum(len(m.values) for m in recorded)
    fails = sum(not m.values for m in recorded)
    ones = sum(len(m.values) == 1 for m in recorded)
    return starts * task.load_seconds + reps * task.rep_seconds, fails, ones


def run_one(task: Task) -> dict[str, Outcome]:
    """One surface: the full grid and the model search, on the same noisy draws."""
    true = truth(task.kind, task.index, task.seed, task.budget_axis)
    fails = failing(task.kind, task.index, task.seed)
    measure = noisy(task.kind, task.index, task.seed, task.noise, true, fails)
    pts = distinct_points(task.kind, true)
    grid = grid_of(pts)
    top = max(v for pid, v in true.items() if pid not in fails)  # the best that can run
    grid_got = {p.point_id: measure(p, 0) for p in pts}
    grid_got = {pid: v for pid, v in grid_got.items() if v}
    grid_best = true[max(grid_got, key=lambda pid: statistics.fmean(grid_got[pid]))]
    grid_fails = sum(p.point_id in fails for p in pts)
    grid_time = len(pts) * task.load_seconds + len(grid_got) * REPS * task.rep_seconds
    by_pid = {p.point_id: p for p in pts}
    # what a failure rules out, and which points are at least as large as which: every failure
    # here is out of memory (sweep/store/failures.py), as the sweep's search is handed them
    rules = failures.dominated(pts)
    m_measure, m_got = adaptive(
        task.kind,
        task.index,
        task.seed,
        task.noise,
        true,
        measure,
        task.strategy,
        out_z=task.out_z,
    )
    shares = memory_share(task.kind, task.index, task.seed) if task.memory else {}
    m_state, m_rec = model_search.search(
        pts,
        grid,
        m_measure,
        task.strategy,
        rules=rules,
        sizes=rules,
        memory=shares.get if shares else None,
    )
    assert m_state.best is not None
    m_true = true[m_state.best.point_id]
    verdict = m_state.verdict
    extra: dict[str, Outcome] = {}
    if task.confirm:
        for name, tried in (("grid+", list(grid_got)), ("model+", _measured(m_state))):
            got = {pid: measure(by_pid[pid], 0) for pid in tried}
            answer, added = confirm(
                task.kind, task.index, task.seed, task.noise, true, got, task.confirm
            )
            extra[name] = Outcome(
                len(tried) + added, len(pts), true[answer] / top, true[answer] / grid_best
            )
    if task.smooth is not None:
        order = {p.point_id: i for i, p in enumerate(pts)}
        for name, tried, again in (
            ("grid~", list(grid_got), 0),
            ("model~", _measured(m_state), task.smooth),
        ):
            got = {pid: measure(by_pid[pid], 0) for pid in tried}
            answer, added = smooth_answer(
                task.kind, task.index, task.seed, task.noise, true, grid, order, got, again
            )
            extra[name] = Outcome(
                len(tried) + added, len(pts), true[answer] / top, true[answer] / grid_best
            )
    if task.batch > 1:
        b_measure, b_got = adaptive(
            task.kind,
            task.index,
            task.seed,
            task.noise,
            true,
            measure,
            task.strategy,
            stream=14,
            out_z=task.out_z,
        )
        b_state = hosts_search(
            pts, grid, b_measure, dataclasses.replace(task.strategy, batch=task.batch), rules
        )
        assert b_state.best is not None
        b_true = true[b_state.best.point_id]
        extra["model xN"] = Outcome(
            b_state.restarts,
            len(pts),
            b_true / top,
            b_true / grid_best,
            rounds=len(b_state.rounds),
            reps=sum(len(v) for v in b_got.values()),
        )
    m_time, m_fails, m_ones = cost(m_rec, task)
    return extra | {
        "grid": Outcome(
            len(pts),
            len(pts),
            grid_best / top,
            1.0,
            **decided(grid_got, true, top),
            time=grid_time,
            grid_time=grid_time,
            fails=grid_fails,
        ),
        "model": Outcome(
            m_state.restarts,
            len(pts),
            m_true / top,
            m_true / grid_best,
            verdict.settled if verdict else None,
            rounds=len(m_state.rounds),
            reps=sum(len(v) for v in m_got.values()),
            seen=any(true[pid] >= top * (1 - 1e-12) for pid in m_got),
            **decided(m_got, true, top),
            time=m_time,
            grid_time=grid_time,
            fails=m_fails,
            first_out=m_ones,
            measured=tuple(m_got),
        ),
    }
