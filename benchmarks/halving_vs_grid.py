"""Successive halving (sweep/search.py) and coordinate descent (sweep/descent.py) against the full
grid, on the SGLang emulator over HTTP.

Per seed, the same 12 DDTREE server configurations (budget 32, 40, 48, 64 x topk 1, 2, 3; block-16
drafter, window 2048) are searched three times, each from fresh servers:

- grid: every point started once and benched at the full level; its best is the best mean;
- halving: `sweep.search.search` with eta 3 (`--eta`) over two bench levels (screening and full,
  sweep.yml's default; `--levels 3` adds LEVELS' middle one), its selection rule, run-on and
  restart counting as that module documents them;
- descent: `sweep.descent.search`, every run at the full level, from the grid's centre;
- with `--model`, also the model search (`sweep.model_search.search`, sweep.yml's search=model),
  every run at the full level, from fresh servers too, and, as the sweep hands its runs
  bench/more_repetitions.py's rule (sweep.search_rounds.more_rule), more repetitions of a run
  while its point may still be the best (same prompts, as this script's repetitions are).

A point's server is `python -m sglang_emulator` (SGLANG_EMU_VERSION=ddtree; topk through
SGLANG_DDTREE_MAX_TOPK, as the ddtree dialect renders it) on a free port, with 0.05 s load and
warm-up, SGLANG_EMU_TIME_SCALE 0.5 (`--time-scale`) so a run takes minutes; a run of the
configuration already up reuses it (no restart). The bench is the real
`bench.runner.run_benchmark` (code prompts, closed loop, max(4, concurrency) requests a cell, no
warm-up request). Objective: output throughput, the geometric mean over a level's cells of output
tokens/s (scale-free across concurrencies), one value per repetition.

A repetition reruns the level with the same prompts (one bench run each, same request seed). The
bench's own --repetitions draw new prompts per repetition; here that made the prompt mix (a
slow, low-acceptance prompt in one set sets a cell's wall time) the dominant variance, common to
every point, so the CIs overlapped everywhere and the CI rule kept nearly every point. The grid
and the halving of one seed use the same workload (request seed and SGLANG_EMU_SEED = the seed),
as two ways of sweeping one bench configuration would; their timing noise is their own.

Why budgets above 15 and topk at most 3: with a block-16 drafter a DDTREE budget up to 15 is a
plain chain (topk does nothing), and the tree width is min(max(budget // 15 + 1, 2), topk), so a
topk above budget // 15 + 1 is the same server as that value. This grid has no two identical
servers.

Restarts: round 0 starts every point once, as the grid does, so halving never has fewer restarts
than the grid; a survivor starts again unless it is the running configuration or was benched in full
right after its screening (run-on, in the round before the last level). The last
column is the halving's bench time in full-level benches (each run at its level's measured share
of a full one; the grid's is one a point); the final line turns the medians into the full-level
bench time per point above which halving saves time, with `--load-seconds` a restart (default
360, the target deployment's model loading). `--verbose` prints each search's rounds and its
`sweep.search.account` lines (as run here; projected with real-host loads and time scale 1).

    .venv/bin/python benchmarks/halving_vs_grid.py [--seeds 3] [--levels 2] [--run-on]
        [--model] [--quick] [--verbose]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.more_repetitions import MoreRule  # noqa: E402
from bench.runner import RunConfig, run_benchmark  # noqa: E402
from sweep import objectives  # noqa: E402
from sweep.descent import Descent  # noqa: E402
from sweep.descent import search as descend  # noqa: E402
from sweep.grid_axes import Grid  # noqa: E402
from sweep.model_search import ModelSearch  # noqa: E402
from sweep.model_search import search as model_search  # noqa: E402
from sweep.points import Point  # noqa: E402
from sweep.search import (  # noqa: E402
    Halving,
    Measurement,
    State,
    Stats,
    account,
    describe,
    search,
    stats,
)
from sweep.search_rounds import describe_model, more_rule  # noqa: E402

EMULATOR_DIR = ROOT / "tests" / "emulator"
THROUGHPUT = objectives.make("throughput")
SYSTEM_PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
BUDGETS = (32, 40, 48, 64)
TOPKS = (1, 2, 3)
WINDOW = 2048
BLOCK_SIZE = 16
RESERVED_PORTS = range(18080, 18100)  # other test suites on this machine use these


@dataclass(frozen=True)
class Level:
    """One bench level: the cells of `python -m bench run`, max(4, concurrency) requests each."""

    contexts: tuple[int, ...]
    concurrency: tuple[int, ...]
    output_len: int
    repetitions: int = 3

    def describe(self) -> str:
        return (
            f"contexts {','.join(map(str, self.contexts))} x concurrency "
            f"{','.join(map(str, self.concurrency))} x output {self.output_len} x code, "
            f"{self.repetitions} repetitions"
        )


LEVELS = (
    Level((256,), (16,), 64),
    Level((256,), (16,), 128),
    Level((256,), (4, 16), 128),
)
QUICK_LEVELS = (
    Level((256,), (16,), 32),
    Level((256,), (16,), 64),
    Level((256,), (4, 16), 64),
)


def grid() -> list[Point]:
    points = [Point("DDTREE", b, k, WINDOW) for b in BUDGETS for k in TOPKS]
    return sorted(points, key=Point.sort_key)


def short(p: Point) -> str:
    return f"b{p.budget}-k{p.topk}"


def free_port() -> int:
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in RESERVED_PORTS:
            return port


def model_dirs(root: Path) -> tuple[Path, Path]:
    """A fake DeepSeek-V3 target and a block-16 DFlash drafter (config.json only)."""
    model, drafter = root / "model", root / "drafter"
    model.mkdir()
    drafter.mkdir()
    (model / "config.json").write_text(
        '{"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", '
        '"max_position_embeddings": 16384, "vocab_size": 129280}'
    )
    (drafter / "config.json").write_text(
        f'{{"architectures": ["DFlashDraftModel"], "block_size": {BLOCK_SIZE}}}'
    )
    return model, drafter


@dataclass
class Servers:
    """At most one emulator at a time: a run on another configuration restarts it."""

    workdir: Path
    seed: int
    time_scale: float
    running: Point | None = None
    proc: subprocess.Popen[bytes] | None = None
    port: int = 0
    starts: int = 0
    load_seconds: dict[str, float] = field(default_factory=dict)

    def url(self, point: Point) -> str:
        if point != self.running:
            self.stop()
            self._start(point)
        return f"http://127.0.0.1:{self.port}"

    def _start(self, p: Point) -> None:
        model, drafter = self.workdir / "model", self.workdir / "drafter"
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": str(EMULATOR_DIR),
            "PYTHONUNBUFFERED": "1",
            "SGLANG_EMU_VERSION": "ddtree",
            "SGLANG_EMU_LOAD_SECONDS": "0.05",
            "SGLANG_EMU_WARMUP_SECONDS": "0.05",
            "SGLANG_EMU_DRAIN_SECONDS": "0.1",
            "SGLANG_EMU_SEED": str(self.seed),
            "SGLANG_EMU_TIME_SCALE": str(self.time_scale),
            "SGLANG_DDTREE_MAX_TOPK": str(p.topk),
        }
        flags = [
            *("--model-path", str(model), "--speculative-algorithm", "DDTREE"),
            *("--speculative-draft-model-path", str(drafter)),
            *("--speculative-ddtree-budget", str(p.budget)),
            *("--speculative-dflash-draft-window-size", str(p.window)),
        ]
        self.port = free_port()
        log = self.workdir / f"emulator-{self.starts}.log"
        t0 = time.monotonic()
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                [SYSTEM_PYTHON, "-m", "sglang_emulator", "--port", str(self.port), *flags],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        while b"ready to roll" not in log.read_bytes():
            if self.proc.poll() is not None or time.monotonic() - t0 > 60:
                raise RuntimeError(f"emulator for {p.point_id} did not start:\n{log.read_text()}")
            time.sleep(0.01)
        self.load_seconds[p.point_id] = time.monotonic() - t0
        self.running = p
        self.starts += 1

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc, self.running = None, None


def objective(records: list[dict[str, Any]]) -> float | None:
    """The geometric mean of output tokens/s over a run's cells; None when a request failed."""
    values = []
    for rec in records:
        s = rec["summary"]
        if s["failed"] or s["incomplete"] or not s["output_throughput"]:
            return None
        values.append(float(s["output_throughput"]))
    return statistics.geometric_mean(values) if values else None


@dataclass
class Bench:
    """measure(point, level) for one method: restarts the server when the configuration
    changes, then runs the level's bench once per repetition with the same prompts."""

    servers: Servers
    levels: tuple[Level, ...]
    seed: int
    out: Path
    bench_seconds: dict[int, list[float]] = field(default_factory=dict)

    def measure(self, point: Point, level: int, more: MoreRule | None = None) -> list[float]:
        """The level's repetitions; with `more` (the model search, as the sweep hands its
        runs bench/more_repetitions.py's rule), as many again while the rule says so."""
        url = self.servers.url(point)
        lv = self.levels[level]
        t0 = time.monotonic()
        values: list[float] = []
        count = lv.repetitions
        while count > 0:
            added = self._repetitions(point, level, url, len(values), count)
            if not added:
                return []
            values += added
            if more is None or not more.step(values).more:
                break
            count = min(lv.repetitions, more.max_repetitions - len(values))
        self.bench_seconds.setdefault(level, []).append(time.monotonic() - t0)
        return values

    def _repetitions(
        self, point: Point, level: int, url: str, first: int, count: int
    ) -> list[float]:
        lv = self.levels[level]
        values = []
        for rep in range(first, first + count):
            cfg = RunConfig(
                url=url,
                out=self.out / f"{point.point_id}-L{level}-r{rep}",
                contexts=list(lv.contexts),
                concurrencies=list(lv.concurrency),
                output_lens=[lv.output_len],
                categories=["code"],
                greedy_prompts=0,  # not what this measures
                requests_per_slot=1,
                min_requests=4,
                warmup=0,
                seed=self.seed,
                live=False,
            )
            with contextlib.redirect_stderr(io.StringIO()):  # the bench's per-cell progress
                value = objective(asyncio.run(run_benchmark(cfg)))
            if value is None:
                return []
            values.append(value)
        return values


@dataclass
class Outcome:
    seed: int
    grid_best: Point
    grid_stats: dict[str, Stats]
    halving: State[Point]
    grid_restarts: int
    halving_restarts: int
    grid_seconds: float
    halving_seconds: float
    bench_work: float  # the halving's bench time in full-level benches (the grid's: 12)
    accounts: tuple[str, str]  # account() lines: as measured here, projected to a real host
    descent: State[Point]
    descent_restarts: int
    descent_seconds: float
    model: Any = None  # with --model: (its state, server starts, wall s)

    @property
    def halving_best(self) -> Point | None:
        return self.halving.best

    @property
    def same(self) -> bool:
        return self.halving_best == self.grid_best

    @property
    def descent_same(self) -> bool:
        return self.descent.best == self.grid_best

    def runner_up(self) -> str:
        """The grid's second best, how far behind its best, and whether the grid can tell them
        apart (their CIs do not overlap)."""
        ranked = sorted(self.grid_stats.items(), key=lambda kv: -kv[1].mean)
        if len(ranked) < 2:
            return "-"
        (_, first), (second_id, second) = ranked[0], ranked[1]
        gap = 100.0 * (first.mean - second.mean) / first.mean
        cis = "CIs overlap" if first.overlaps(second) else "CIs apart"
        name = short(next(p for p in grid() if p.point_id == second_id))
        return f"{name} (-{gap:.1f} %, {cis})"

    @property
    def within_ci(self) -> bool:
        """The halving's pick is one the grid itself cannot tell from its best (CIs overlap)."""
        pick = self.halving_best
        if pick is None or pick.point_id not in self.grid_stats:
            return False
        return self.grid_stats[pick.point_id].overlaps(self.grid_stats[self.grid_best.point_id])


@contextlib.contextmanager
def servers_for(workdir: Path, seed: int, time_scale: float) -> Iterator[Servers]:
    servers = Servers(workdir, seed, time_scale)
    try:
        yield servers
    finally:
        servers.stop()


def run_grid(
    workdir: Path, seed: int, levels: tuple[Level, ...], time_scale: float
) -> tuple[dict[str, Stats], int, float]:
    """Every point once, at the full level: its stats (failed points left out), starts, wall s."""
    with servers_for(workdir, seed, time_scale) as servers:
        bench = Bench(servers, levels, seed, workdir / "grid")
        t0 = time.monotonic()
        results = {p.point_id: bench.measure(p, len(levels) - 1) for p in grid()}
        elapsed = time.monotonic() - t0
    return {k: stats(v) for k, v in results.items() if v}, servers.starts, elapsed


@dataclass
class HalvingRun:
    state: State[Point]
    starts: int
    seconds: float
    load_seconds: dict[str, float]  # per point, as started here
    per_level: list[float]  # one point's mean bench seconds at each level


def run_halving(
    workdir: Path,
    seed: int,
    levels: tuple[Level, ...],
    time_scale: float,
    eta: float,
    run_on: bool = False,
) -> HalvingRun:
    with servers_for(workdir, seed, time_scale) as servers:
        bench = Bench(servers, levels, seed, workdir / "halving")
        t0 = time.monotonic()
        strategy = Halving(eta=eta, levels=len(levels), run_on=run_on)
        state, _ = search(grid(), bench.measure, strategy)
        elapsed = time.monotonic() - t0
    per_level = [statistics.mean(bench.bench_seconds.get(i) or [0.0]) for i in range(len(levels))]
    return HalvingRun(state, servers.starts, elapsed, servers.load_seconds, per_level)


def run_descent(
    workdir: Path, seed: int, levels: tuple[Level, ...], time_scale: float
) -> tuple[State[Point], int, float]:
    """The descent, every run at the full level: its state, server starts, wall s."""
    points = grid()
    coords = {p.point_id: (p.budget, p.topk) for p in points}
    with servers_for(workdir, seed, time_scale) as servers:
        bench = Bench(servers, levels, seed, workdir / "descent")
        t0 = time.monotonic()
        state, _ = descend(
            points,
            Grid.of(coords),
            lambda p, _level: bench.measure(p, len(levels) - 1),
            Descent(),
        )
        elapsed = time.monotonic() - t0
    return state, servers.starts, elapsed


def run_model(
    workdir: Path, seed: int, levels: tuple[Level, ...], time_scale: float
) -> tuple[State[Point], int, float]:
    """The model search, every run at the full level: its state, server starts, wall s."""
    points = grid()
    coords = {p.point_id: (p.budget, p.topk) for p in points}
    with servers_for(workdir, seed, time_scale) as servers:
        bench = Bench(servers, levels, seed, workdir / "model")
        t0 = time.monotonic()
        strategy = ModelSearch()
        seen: dict[str, list[float]] = {}

        def measure(p: Point, _level: int) -> list[float]:
            """As the sweep runs it: the rule from what was measured so far (search_rounds)."""
            known = [Measurement(pid, 0, tuple(v)) for pid, v in seen.items()]
            rule = more_rule(strategy, known, THROUGHPUT, levels[-1].repetitions)
            seen[p.point_id] = bench.measure(p, len(levels) - 1, rule)
            return seen[p.point_id]

        state, _ = model_search(points, Grid.of(coords), measure, strategy)
        elapsed = time.monotonic() - t0
    return state, servers.starts, elapsed


def bench_work(state: State[Point], per_level: list[float]) -> float:
    """The halving's bench time in full-level benches, a level at its measured share."""
    return sum(per_level[r.level] / per_level[-1] for rnd in state.rounds for r in rnd.runs)


def break_even(restarts: float, work: float, n: int, load_seconds: float) -> float:
    """Full-level bench seconds per point above which halving (`restarts`, `work` full benches)
    costs less time than the grid (n restarts, n full benches): extra loads / benches saved."""
    if work >= n:
        return math.inf
    return max(0.0, (restarts - n) * load_seconds / (n - work))


def one_seed(
    seed: int,
    levels: tuple[Level, ...],
    time_scale: float,
    eta: float,
    load_seconds: float,
    run_on: bool = False,
    with_model: bool = False,
) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="halving-vs-grid-") as tmp:
        workdir = Path(tmp)
        model_dirs(workdir)
        grid_stats, grid_starts, grid_s = run_grid(workdir, seed, levels, time_scale)
        h = run_halving(workdir, seed, levels, time_scale, eta, run_on)
        d_state, d_starts, d_seconds = run_descent(workdir, seed, levels, time_scale)
        model = run_model(workdir, seed, levels, time_scale) if with_model else None
    if h.state.restarts != h.starts:
        print(f"seed {seed}: planned {h.state.restarts} restarts, started {h.starts}")
    if d_state.restarts != d_starts:
        print(f"seed {seed}: descent planned {d_state.restarts} restarts, started {d_starts}")
    by_id = {p.point_id: p for p in grid()}
    # the emulator's latencies at time scale 1 are the target deployment's
    real_bench = [b / time_scale for b in h.per_level]
    return Outcome(
        seed=seed,
        grid_best=by_id[max(grid_stats, key=lambda k: grid_stats[k].mean)],
        grid_stats=grid_stats,
        halving=h.state,
        grid_restarts=grid_starts,
        halving_restarts=h.starts,
        grid_seconds=grid_s,
        halving_seconds=h.seconds,
        bench_work=bench_work(h.state, h.per_level),
        accounts=(
            account(h.state, h.load_seconds, h.per_level).line(),
            account(h.state, load_seconds, real_bench).line(),
        ),
        descent=d_state,
        descent_restarts=d_starts,
        descent_seconds=d_seconds,
        model=model,
    )


def saving(grid: float, halving: float) -> float:
    return 100.0 * (grid - halving) / grid


def print_table(outcomes: list[Outcome], load_seconds: float) -> None:
    n_points = len(grid())
    head = (
        "| seed | grid best | grid runner-up | halving best | same? | within grid best's CI? "
        "| grid restarts | halving restarts | restart saving % | grid wall s | halving wall s "
        f"| halving bench, in full benches (grid: {n_points}) | descent best | same? "
        "| descent restarts | restart saving % | descent wall s |"
    )
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    for o in outcomes:
        pick = short(o.halving_best) if o.halving_best else "none"
        print(
            f"| {o.seed} | {short(o.grid_best)} | {o.runner_up()} | {pick} | "
            f"{'yes' if o.same else 'NO'} | {'yes' if o.within_ci else 'no'} | "
            f"{o.grid_restarts} | {o.halving_restarts} | "
            f"{saving(o.grid_restarts, o.halving_restarts):.0f} | {o.grid_seconds:.0f} | "
            f"{o.halving_seconds:.0f} | {o.bench_work:.1f} | "
            f"{short(o.descent.best) if o.descent.best else 'none'} | "
            f"{'yes' if o.descent_same else 'NO'} | {o.descent_restarts} | "
            f"{saving(o.grid_restarts, o.descent_restarts):.0f} | {o.descent_seconds:.0f} |"
        )
    n = len(outcomes)

    def med(values: list[float]) -> float:
        return statistics.median(values)

    restarts = med([o.halving_restarts for o in outcomes])
    work = med([o.bench_work for o in outcomes])
    even = break_even(restarts, work, n_points, load_seconds)
    pays = (
        "never saves time"
        if math.isinf(even)
        else f"saves time only when a point's full bench takes over {even:.0f} s"
    )
    print(
        f"medians over {n} seeds: same best {sum(o.same for o in outcomes)}/{n}, within the "
        f"grid best's CI {sum(o.within_ci for o in outcomes)}/{n}; restarts grid "
        f"{med([o.grid_restarts for o in outcomes]):.0f}, halving {restarts:.0f} (saving "
        f"{med([saving(o.grid_restarts, o.halving_restarts) for o in outcomes]):.0f} %); "
        f"wall s grid {med([o.grid_seconds for o in outcomes]):.0f}, halving "
        f"{med([o.halving_seconds for o in outcomes]):.0f}; halving bench {work:.1f} of "
        f"{n_points} full benches: with {load_seconds:.0f} s restarts it {pays}"
    )
    print(
        f"descent: same best {sum(o.descent_same for o in outcomes)}/{n}; restarts grid "
        f"{med([o.grid_restarts for o in outcomes]):.0f}, descent "
        f"{med([o.descent_restarts for o in outcomes]):.0f} (saving "
        f"{med([saving(o.grid_restarts, o.descent_restarts) for o in outcomes]):.0f} %, "
        f"least {min(saving(o.grid_restarts, o.descent_restarts) for o in outcomes):.0f} %); "
        f"wall s descent {med([o.descent_seconds for o in outcomes]):.0f}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0], allow_abbrev=False)
    ap.add_argument("--seeds", type=int, default=3, help="run seeds 1..N (default 3)")
    ap.add_argument("--quick", action="store_true", help="shorter bench levels (a smoke run)")
    ap.add_argument("--eta", type=float, default=3.0, help="keep 1/eta a round (default 3)")
    ap.add_argument("--time-scale", type=float, default=0.5, help="SGLANG_EMU_TIME_SCALE")
    ap.add_argument(
        "--load-seconds", type=float, default=360.0, help="one restart on the real host"
    )
    ap.add_argument("--verbose", action="store_true", help="print each halving's rounds")
    ap.add_argument(
        "--levels",
        type=int,
        choices=(2, 3),
        default=2,
        help="halving's bench levels (default 2, sweep.yml's halving_levels default: the "
        "screening level and the full one)",
    )
    ap.add_argument(
        "--run-on",
        action="store_true",
        help="halving with run-on (sweep.yml's halving_run_on=true; off by default)",
    )
    ap.add_argument("--model", action="store_true", help="also the model search (search=model)")
    a = ap.parse_args(argv)
    if a.seeds < 1:
        ap.error(f"--seeds={a.seeds}: need at least 1")
    levels: tuple[Level, ...] = QUICK_LEVELS if a.quick else LEVELS
    if a.levels == 2:
        levels = (levels[0], levels[-1])
    print(f"grid: {', '.join(short(p) for p in grid())} (DDTREE, window {WINDOW})")
    for i, lv in enumerate(levels):
        print(f"level {i}: {lv.describe()}")
    t0 = time.monotonic()
    outcomes = []
    for seed in range(1, a.seeds + 1):
        o = one_seed(seed, levels, a.time_scale, a.eta, a.load_seconds, a.run_on, a.model)
        if a.verbose:
            lines = [
                *describe(o.halving),
                f"as run here: {o.accounts[0]}",
                f"real host ({a.load_seconds:.0f} s loads, bench at time scale 1): {o.accounts[1]}",
                "descent:",
                *describe(o.descent),
                *(["model search:", *describe_model(o.model[0])] if o.model else []),
            ]
            print(f"seed {seed}:\n  " + "\n  ".join(lines), flush=True)
        outcomes.append(o)
    print()
    print_table(outcomes, a.load_seconds)
    if a.model:
        same = sum(o.model[0].best == o.grid_best for o in outcomes)
        settled = sum(bool(o.model[0].verdict and o.model[0].verdict.settled) for o in outcomes)
        print(
            f"model search: same best {same}/{len(outcomes)}; settled {settled}/{len(outcomes)}; "
            f"restarts {', '.join(str(o.model[1]) for o in outcomes)} (grid "
            f"{len(grid())}); wall s {', '.join(f'{o.model[2]:.0f}' for o in outcomes)}"
        )
    print(f"wall time {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
