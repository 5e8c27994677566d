"""Where a sweep lives on the controller, and what "complete" means.

results/<sweep>/sweep.json            the sweep: bench parameters, points, runs
results/<sweep>/progress.log          one line per finished point (`tail -F` it)
results/<sweep>/<point>/point.json    completion marker; the point directory appears whole
                                      (staged, then renamed into place), so its presence
                                      means every fetched file is there
results/<sweep>/<point>/failure.json  the last failed attempt (retried by the next run)
results/<sweep>/.staging/             half-received points (removed by the next plan)
results/<sweep>/.attempts/            earlier failed attempts of points that later completed
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Literal

from bench.records import write_json

SWEEP_FILE = "sweep.json"
PROGRESS_LOG = "progress.log"
POINT_FILE = "point.json"
FAILURE_FILE = "failure.json"
STAGING = ".staging"
# Written by a failed point when stop_on_failure is set; the other hosts end their slices at it.
STOP = ".stop"
ATTEMPTS = ".attempts"

Status = Literal["complete", "failed", "pending"]


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def point_status(sweep_dir: Path, point_id: str) -> Status:
    pdir = sweep_dir / point_id
    point = read_json(pdir / POINT_FILE)
    if point is not None and point.get("status") == "complete":
        return "complete"
    if (pdir / FAILURE_FILE).is_file():
        return "failed"
    return "pending"


def failed_since(sweep_dir: Path, point_id: str, since: float) -> bool:
    """Whether the point's last failed attempt ended at or after `since` (epoch seconds)."""
    failure = read_json(sweep_dir / point_id / FAILURE_FILE) or {}
    return float((failure.get("timings") or {}).get("finished") or 0) >= since


def point_dirs(sweep_dir: Path) -> list[Path]:
    if not sweep_dir.is_dir():
        return []
    return sorted(
        p
        for p in sweep_dir.iterdir()
        if p.is_dir()
        and not p.name.startswith(".")
        and ((p / POINT_FILE).is_file() or (p / FAILURE_FILE).is_file())
    )


def read_sweep(sweep_dir: Path) -> dict[str, Any] | None:
    return read_json(sweep_dir / SWEEP_FILE)


def write_sweep(sweep_dir: Path, sweep: dict[str, Any]) -> None:
    write_json(sweep_dir / SWEEP_FILE, sweep)


def clear_staging(sweep_dir: Path) -> None:
    """Points half-received by a killed run: never trusted, always redone. A stop marker left by
    the previous run's stop_on_failure is for that run only: a rerun retries its points."""
    shutil.rmtree(sweep_dir / STAGING, ignore_errors=True)
    (sweep_dir / STOP).unlink(missing_ok=True)


def install_point(sweep_dir: Path, point_id: str, staging: Path, stamp: float) -> Path:
    """Renames a staged point directory into place; a directory already there (an earlier
    attempt) is moved aside under .attempts/, never overwritten."""
    target = sweep_dir / point_id
    if target.exists():
        aside = sweep_dir / ATTEMPTS / f"{point_id}-{int(stamp)}"
        aside.parent.mkdir(parents=True, exist_ok=True)
        os.replace(target, aside)
    os.replace(staging, target)
    return target
