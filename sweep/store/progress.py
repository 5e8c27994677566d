"""A progress line per finished point, printed by the playbook and appended to progress.log.

    [2026-05-01 10:42:07] sweep demo: 3/5 done (1 failed) | ddtree-b8-k4-w2048 complete
    in 52s (load 7s, bench 38s) | elapsed 2m41s | ETA 1m44s

The estimate of the time left: for every point still to run, the mean measured load time of
restarted points, plus the mean bench time, plus the mean remaining per-point overhead,
divided by the number of hosts running in parallel.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Any

from sweep import layout


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = round(seconds)
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    if h:
        return f"{h}h{m:02d}m"
    return f"{m}m{s:02d}s" if m else f"{s}s"


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def estimate_per_point(timings: list[dict[str, Any]]) -> float | None:
    """Expected wall time of one more point from the points measured so far (None: no data)."""
    if not timings:
        return None
    load = _mean([t["load_s"] for t in timings if t.get("restarted")])
    bench = _mean([t["bench_s"] for t in timings])
    overhead = _mean([t["overhead_s"] for t in timings])
    return (load or 0.0) + (bench or 0.0) + (overhead or 0.0)


def snapshot(sweep_dir: Path, now: float | None = None) -> dict[str, Any]:
    now = time.time() if now is None else now
    sweep = layout.read_sweep(sweep_dir) or {}
    run = (sweep.get("runs") or [{}])[-1]
    started = float(run.get("started") or now)
    ids = list(run.get("points") or [])
    # a list of host names (work queue); older runs recorded {host: [point ids]} slices
    listed = run.get("hosts") or []
    busy = [h for h, v in listed.items() if v] if isinstance(listed, dict) else listed
    hosts = max(1, min(len(busy), len(ids)))
    complete, failed, timings = [], [], []
    recorded = layout.recorded(sweep_dir, ids)
    for pid in ids:
        r = recorded[pid]
        if r.status == "complete":
            complete.append(pid)
            timings.append(r.point.get("timings") or {})
        elif r.status == "failed" and r.failed_at >= started:
            failed.append(pid)
    # points measured in this run only: earlier runs may have had other load or bench costs
    fresh = [t for t in timings if float(t.get("finished") or 0) >= started] or timings
    per_point = estimate_per_point([t for t in fresh if t])
    remaining = len(ids) - len(complete) - len(failed)
    eta = 0.0 if remaining == 0 else (None if per_point is None else remaining * per_point / hosts)
    return {
        "sweep": sweep.get("name", sweep_dir.name),
        "total": len(ids),
        "done": len(complete) + len(failed),
        "complete": len(complete),
        "failed": len(failed),
        "remaining": remaining,
        "elapsed_s": now - started,
        "eta_s": eta,
        "hosts": hosts,
    }


def line(sweep_dir: Path, point_id: str | None = None, now: float | None = None) -> str:
    now = time.time() if now is None else now
    snap = snapshot(sweep_dir, now)
    parts = [
        f"sweep {snap['sweep']}: {snap['done']}/{snap['total']} done"
        + (f" ({snap['failed']} failed)" if snap["failed"] else "")
    ]
    if point_id:
        r = layout.recorded(sweep_dir, [point_id])[point_id]
        rec = r.point if r.status == "complete" else r.failure
        t = rec.get("timings") or {}
        what = f"{point_id} {r.status}"
        if t and r.status == "failed":
            # a failed start never reached its ready line: no load or bench time to split out
            what += f" after {fmt_duration(t.get('wall_s'))}"
        elif t:
            what += (
                f" in {fmt_duration(t.get('wall_s'))} (load {fmt_duration(t.get('load_s'))}"
                f"{'' if t.get('restarted') else ', no restart'}"
                f", bench {fmt_duration(t.get('bench_s'))})"
            )
        if r.status == "failed":
            cause = f"{rec['cause']}: " if rec.get("cause") else ""
            what += f": {cause}{str(rec.get('reason', ''))[:120]}"
        parts.append(what)
    parts.append(f"elapsed {fmt_duration(snap['elapsed_s'])}")
    parts.append(f"ETA {fmt_duration(snap['eta_s'])}")
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))
    return f"[{stamp}] " + " | ".join(parts)


def append(sweep_dir: Path, text: str) -> None:
    """One whole line per write (O_APPEND), so `tail -F progress.log` never sees half a line
    even with several hosts finishing points at once."""
    sweep_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(sweep_dir / layout.PROGRESS_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, (text.rstrip("\n") + "\n").encode())
    finally:
        os.close(fd)
