"""The search of benchmarks/client_headroom.py: the highest rate a client sustains (search),
doubling then bisecting over the trials of a round (Trials, one per client and rate), and the
floor under any asyncio client's send lag on this machine (timer_lateness)."""

from __future__ import annotations

import argparse
import asyncio
import itertools
import math
import random
import time
from collections.abc import Callable
from typing import Any

from headroom_workers import Worker


def search(
    sustained: Callable[[float], bool],
    start: float,
    floor: float,
    ceiling: float,
    bisect_steps: int,
) -> float | None:
    """The highest rate sustained: doubling up from `start` (halving down while it fails, not
    below `floor`: None then), then `bisect_steps` geometric midpoints."""
    good: float | None = None
    bad: float | None = None
    if sustained(start):
        good = start
        while good * 2 <= ceiling:
            if not sustained(good * 2):
                bad = good * 2
                break
            good *= 2
    else:
        bad = start
        while good is None and bad / 2 >= floor:
            if sustained(bad / 2):
                good = bad / 2
            else:
                bad /= 2
    if good is None or bad is None:
        return good
    for _ in range(bisect_steps):
        mid = math.sqrt(good * bad)
        if sustained(mid):
            good = mid
        else:
            bad = mid
    return good


class Trials:
    """One trial per (client, rate) in a round, shared by the searches that ask for it."""

    def __init__(self, a: argparse.Namespace, workers: dict[str, Worker]) -> None:
        self.a = a
        self.workers = workers
        self.seeds = itertools.count(1)
        self.done: dict[tuple[str, float], dict[str, Any]] = {}

    def sustains(self, client: str, key: str) -> Callable[[float], bool]:
        """Does `client` complete every request with the p99 of `key` within the bound?"""

        def sustained(rate: float) -> bool:
            r = self.run(client, rate)
            p99 = r.get(key)
            return bool(r["ok"] == r["n"] and p99 is not None and p99 <= self.a.bound_ms)

        return sustained

    def run(self, client: str, rate: float) -> dict[str, Any]:
        if (client, rate) in self.done:
            return self.done[client, rate]
        n = max(self.a.min_requests, math.ceil(rate * self.a.seconds))
        r = self.workers[client].trial(rate, n, next(self.seeds))
        self.done[client, rate] = r
        line = f"  {client:6s} {rate:8.1f}/s n {n:5d}: {r['ok']}/{n} ok"
        if r["p99_ms"] is not None:
            line += f", send lag p50 {r['p50_ms']:.2f} p99 {r['p99_ms']:.2f} ms"
        if r.get("local_p99_ms") is not None:
            line += f" (per gap p50 {r['local_p50_ms']:.2f} p99 {r['local_p99_ms']:.2f} ms)"
        if r["achieved"] is not None:
            line += f", achieved {r['achieved']:.0f}/s"
        line += f", client CPU {r['cpu_ms']:.2f} ms/request"
        print(line, flush=True)
        return r


def timer_lateness(n: int = 400, rate: float = 100.0) -> tuple[float, float]:
    """p50 and p99 ms by which a bare asyncio timer fires late on this machine right now, on a
    Poisson schedule: the floor under any asyncio client's send lag (the OS's wake-ups)."""

    async def run() -> list[float]:
        loop = asyncio.get_running_loop()
        gen = random.Random(0)
        offsets = list(itertools.accumulate(gen.expovariate(rate) for _ in range(n)))
        late: list[float] = []
        done: asyncio.Future[None] = loop.create_future()
        t0, p0 = loop.time(), time.perf_counter()

        def fire(off: float) -> None:
            late.append(1000 * (time.perf_counter() - p0 - off))
            if len(late) == n:
                done.set_result(None)

        for off in offsets:
            loop.call_at(t0 + off, fire, off)
        await done
        return sorted(late)

    late = asyncio.run(run())
    return late[n // 2], late[int(0.99 * (n - 1))]
