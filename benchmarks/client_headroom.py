"""Client headroom: the highest Poisson request rate a client keeps to its schedule.

Ours (`bench.client.run_open_loop`, as `python -m bench run --request-rate` drives it) and
sglang's own (`sglang.bench_serving` 0.5.23: its `get_request` generator and `benchmark()`),
side by side, against the same local stub server: a raw asyncio HTTP server in its own process
that answers SGLang's streaming `/generate` (what both clients send by default here; it is also
sglang.bench_serving's default backend, `sglang`) and the OpenAI-style streaming
`/v1/completions` (`--sglang-backend sglang-oai`) with a few tiny SSE chunks, almost at once.

A client sustains a rate when every request succeeds and its p99 send lag is at most
`--bound-ms` (5: the bench's default `max_send_lag_ms`). Send lag = the moment aiohttp writes a
request's body (its `on_request_chunk_sent` trace, for both clients) minus the moment the
request was due:

- ours: the cell's start + its scheduled offset (bench.arrivals, Poisson);
- sglang's: the start of its `get_request` generator + the sum of the exponential gaps it drew
  before that request (recorded by wrapping `numpy.random.exponential`, which it calls once
  per request; its generator sleeps each gap after yielding, so its lateness accumulates, and
  that is what it does). The request function is wrapped only to know which request a trace
  belongs to (a context variable); its body, its own session per request, is run as is.

Each client runs in its own process (sglang's in `--sglang-python`), fed one rate at a time.
The search doubles the rate from `--start-rate` while the client sustains it, then bisects
(geometric midpoints) between the last rate sustained and the first one not, `--bisect-steps`
times. `--rounds` searches per client, alternating which goes first; prints each round, the
medians and the ratio ours / sglang's.

    .venv/bin/python benchmarks/client_headroom.py [--rounds 3] \\
        [--sglang-python /tmp/sglv/bin/python]

About 17 minutes with 3 rounds on a 2-core machine: sglang's searches go down to `--min-rate`
(1/s: 200 s a trial), where its accumulating lag still misses the bound.

sglang.benchmark.serving imports `datasets` for its MMMU loader at import time; when that
package is missing, the worker puts an empty module in its place (that loader is never used)
and says so. Without the sglang interpreter, or when it cannot import sglang.bench_serving, the
script says so and exits 2: there is no figure to compare with.

The script's modules lie beside it: headroom_stub.py (the stub server, `--serve`),
headroom_workers.py (both clients' workers, `--ours-worker` ours) and headroom_search.py (the
search of the highest rate sustained).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from headroom_search import Trials, search, timer_lateness
from headroom_stub import serve
from headroom_workers import _SGLANG_WORKER, Worker, ours_worker

# --- the driver -------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the stub server exited ({proc.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("the stub server never listened")


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--sglang-python", type=Path, default=Path("/tmp/sglv/bin/python"))
    p.add_argument("--sglang-backend", default="sglang", choices=["sglang", "sglang-oai"])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--bound-ms", type=float, default=5.0, help="p99 send lag sustained")
    p.add_argument("--seconds", type=float, default=2.0, help="of arrivals per trial")
    p.add_argument("--min-requests", type=int, default=200)
    p.add_argument("--start-rate", type=float, default=25.0)
    p.add_argument("--min-rate", type=float, default=1.0, help="the search goes no lower")
    p.add_argument("--max-rate", type=float, default=20000.0)
    p.add_argument("--bisect-steps", type=int, default=4)
    p.add_argument("--input-len", type=int, default=32)
    p.add_argument("--output-len", type=int, default=4)
    p.add_argument("--chunks", type=int, default=4, help="SSE events per answer")
    p.add_argument("--chunk-gap-ms", type=float, default=1.0, help="between the stub's events")
    p.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    p.add_argument("--ours-worker", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    a = _args(argv)
    if a.serve:
        serve(a.serve, a.chunks, a.chunk_gap_ms)
        return 0
    if a.ours_worker:
        ours_worker(a.ours_worker, a.input_len, a.output_len)
        return 0
    if not a.sglang_python.exists():
        print(
            f"no sglang interpreter at {a.sglang_python} (--sglang-python): sglang.bench_serving"
            " cannot be measured, so there is no figure to compare with",
            file=sys.stderr,
        )
        return 2
    log_dir = Path(tempfile.mkdtemp(prefix="client-headroom-"))
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    me = [sys.executable, str(Path(__file__).resolve())]
    shape = ["--input-len", str(a.input_len), "--output-len", str(a.output_len)]
    stub_cmd = [*me, "--serve", str(port), "--chunks", str(a.chunks)]
    stub_cmd += ["--chunk-gap-ms", str(a.chunk_gap_ms)]
    stub = subprocess.Popen(stub_cmd, stderr=(log_dir / "stub.log").open("wb"))
    workers: dict[str, Worker] = {}
    try:
        _wait_port(port, stub)
        env_note = f"stub {url} ({a.chunks} events, {a.chunk_gap_ms:g} ms apart)"
        print(f"{env_note}; logs in {log_dir}", flush=True)
        workers["ours"] = Worker(
            "ours", [*me, "--ours-worker", url, *shape], (log_dir / "ours.log").open("wb"), 60
        )
        sglang_cmd = [str(a.sglang_python), "-c", _SGLANG_WORKER, url, a.sglang_backend]
        sglang_cmd += [str(a.input_len), str(a.output_len)]
        try:
            workers["sglang"] = Worker(
                "sglang", sglang_cmd, (log_dir / "sglang.log").open("wb"), 300
            )
        except RuntimeError:
            tail = (log_dir / "sglang.log").read_text(errors="replace")[-2000:]
            print(f"sglang.bench_serving did not start under {a.sglang_python}:\n{tail}")
            return 2
        # (client, the p99 it is judged on): sglang's per-gap lag forgives its drift
        searches = {
            "ours": ("ours", "p99_ms"),
            "sglang": ("sglang", "p99_ms"),
            "sglang per gap": ("sglang", "local_p99_ms"),
        }
        found: dict[str, list[float | None]] = {name: [] for name in searches}
        for rnd in range(1, a.rounds + 1):
            p50, p99 = timer_lateness()
            print(f"round {rnd}: a bare asyncio timer fires late by p50 {p50:.2f} p99 {p99:.2f} ms")
            trials = Trials(a, workers)
            order = list(searches) if rnd % 2 else list(reversed(searches))
            for name in order:
                client, key = searches[name]
                best = search(
                    trials.sustains(client, key),
                    a.start_rate,
                    a.min_rate,
                    a.max_rate,
                    a.bisect_steps,
                )
                found[name].append(best)
                shown = f"below {a.min_rate:g}" if best is None else f"{best:.1f}"
                print(f"round {rnd}: {name} sustains {shown} requests/s", flush=True)
        print(f"\nhighest Poisson rate with p99 send lag <= {a.bound_ms:g} ms, {a.rounds} rounds:")
        labels = {
            "ours": "ours (bench.client.run_open_loop)",
            "sglang": f"sglang.bench_serving ({a.sglang_backend}), its schedule",
            "sglang per gap": f"sglang.bench_serving ({a.sglang_backend}), per gap",
        }
        medians = {name: _median(v) for name, v in found.items()}
        for name, values in found.items():
            med = medians[name]
            shown = f"< {a.min_rate:g}" if med is None else f"{med:.1f}"
            print(f"  {labels[name]:48s} {_list(values, a.min_rate):30s} median {shown}/s")
        ours = medians["ours"]
        for name in ("sglang", "sglang per gap"):
            theirs = medians[name]
            if ours is None:
                ratio = "ours sustains none above the floor"
            elif theirs is None:
                ratio = f"> {ours / a.min_rate:.2f} (theirs sustains none above {a.min_rate:g}/s)"
            else:
                ratio = f"{ours / theirs:.2f}"
            print(f"  ratio of the medians, ours / {name}: {ratio}")
        return 0
    finally:
        for w in workers.values():
            w.close()
        stub.kill()
        stub.wait()


def _list(values: list[float | None], floor: float) -> str:
    return ", ".join(f"< {floor:g}" if v is None else f"{v:.1f}" for v in values)


def _median(values: list[float | None]) -> float | None:
    """None (below the floor) counts as the lowest value."""
    ranked = sorted(values, key=lambda v: -1.0 if v is None else v)
    return ranked[(len(ranked) - 1) // 2]


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
