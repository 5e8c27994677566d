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
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bench.records import write_json

SWEEP_FILE = "sweep.json"
PROGRESS_LOG = "progress.log"
POINT_FILE = "point.json"
FAILURE_FILE = "failure.json"
SEARCH_FILE = "search.json"  # a model search's state (sweep/search/search_rounds.py)
STAGING = ".staging"
# Written by a failed point when stop_on_failure is set, or when the bench refused the sweep's
# parameters (its one line: the reason); the other hosts end their slices at it.
STOP = ".stop"
ATTEMPTS = ".attempts"

Status = Literal["complete", "failed", "pending"]


def stop_reason(sweep_dir: Path) -> str | None:
    """The stop marker's line, or None where none was written (each invocation clears it)."""
    try:
        return (sweep_dir / STOP).read_text(encoding="utf-8").strip()
    except OSError:
        return None


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@dataclass(frozen=True)
class Recorded:
    """A point's directory, read once: its status, point.json and failure.json ({} where absent
    or unreadable), and when its last failed attempt ended (epoch seconds; 0: none)."""

    dir: Path
    status: Status
    point: dict[str, Any]
    failure: dict[str, Any]
    failed_at: float


Records = dict[str, Recorded]  # point id -> its directory, read once


def recorded(sweep_dir: Path, point_ids: Iterable[str]) -> Records:
    """Each point's directory in `sweep_dir`, read once: a plan reads every point's at each
    host's ask, and its steps (the failures learnt, the search's runs) share the one reading."""
    out = {}
    for pid in point_ids:
        pdir = sweep_dir / pid
        point = read_json(pdir / POINT_FILE) or {}
        failure = read_json(pdir / FAILURE_FILE) or {}
        status: Status = "pending"
        if point.get("status") == "complete":
            status = "complete"
        elif (pdir / FAILURE_FILE).is_file():
            status = "failed"
        finished = float((failure.get("timings") or {}).get("finished") or 0)
        out[pid] = Recorded(pdir, status, point, failure, finished)
    return out


def point_status(sweep_dir: Path, point_id: str) -> Status:
    return recorded(sweep_dir, [point_id])[point_id].status


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
    the previous run (stop_on_failure, a bench that refused) is for that run only: a rerun retries
    its points."""
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
