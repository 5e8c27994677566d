"""Recording a point on the controller: complete (point.json) or failed (failure.json; a failure
that teaches is also kept in the store, remember_failure: sweep/store/failures.py).

A complete point is assembled in .staging/ from the archive fetched from the host, point.json
written into it last, and the directory renamed into place: a controller killed at any moment
leaves either no point directory (the point is redone) or a whole one.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import tarfile
import time
from pathlib import Path
from typing import Any

from bench.capacity import CAPACITY_FILE
from bench.more_repetitions import MORE_FILE
from bench.records import write_json
from sweep import layout
from sweep.store import failures, greedy, store

RECORDS = "records"
POINT_FORMAT = 1


class RecordError(RuntimeError):
    pass


def seconds_between(start: str | None, end: str | None) -> float | None:
    """Seconds between two Ansible command timestamps (`%Y-%m-%d %H:%M:%S.%f`)."""
    if not start or not end:
        return None
    fmt = "%Y-%m-%d %H:%M:%S.%f"
    return (dt.datetime.strptime(end, fmt) - dt.datetime.strptime(start, fmt)).total_seconds()


def _point_member(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo:
    """Python's own `data` filter (nothing outside `dest`, no devices, safe modes), and on top
    of it the point's own rules: regular files and directories only, no links of any kind, and
    no absolute name (the filter would strip its leading `/`): a host's archive holds neither."""
    if not (member.isfile() or member.isdir()):
        raise RecordError(f"refusing member {member.name!r}: not a file or a directory")
    if member.name.startswith(("/", os.sep)):
        raise RecordError(f"refusing member {member.name!r}: an absolute name")
    try:
        return tarfile.data_filter(member, dest)
    except tarfile.FilterError as e:
        raise RecordError(f"refusing member {member.name!r}: {e}") from e


def extract(archive: Path, dest: Path) -> None:
    """Extracts `archive` into `dest` once every member has passed `_point_member`: a refused
    member leaves nothing extracted."""
    with tarfile.open(archive, "r:*") as tar:
        members = tar.getmembers()
        for m in members:
            try:
                _point_member(m, str(dest))
            except RecordError as e:
                raise RecordError(f"{archive}: {e}") from e
        tar.extractall(dest, members=members, filter=_point_member)


def _timings(info: dict[str, Any], finished: float) -> dict[str, Any]:
    started = float(info.get("started") or finished)
    ready = info.get("ready") or {}
    bench = info.get("bench") or {}
    load_s = float(ready.get("elapsed") or 0.0)
    bench_s = seconds_between(bench.get("start"), bench.get("end")) or 0.0
    wall_s = max(0.0, finished - started)
    return {
        "started": started,
        "finished": finished,
        "wall_s": round(wall_s, 3),
        "restarted": bool(info.get("restarted")),
        "load_s": round(load_s, 3),
        "bench_s": round(bench_s, 3),
        "overhead_s": round(max(0.0, wall_s - load_s - bench_s), 3),
    }


def finish_point(sweep_dir: Path, archive: Path, info: dict[str, Any]) -> Path:
    point = info["point"]
    pid = str(point["id"])
    staging = sweep_dir / layout.STAGING / f"{pid}.{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        extract(archive, staging)
        cells = sorted(
            p.name[: -len(".json")]
            for p in (staging / RECORDS).glob("*.json")
            if p.name not in (greedy.GREEDY_FILE, CAPACITY_FILE, MORE_FILE)
        )
        if not cells:
            raise RecordError(f"point {pid}: the archive from the host holds no bench records")
        finished = time.time()
        previous = layout.read_json(sweep_dir / pid / layout.FAILURE_FILE) or {}
        identity = measured_identity(point, info.get("host_class"))
        write_json(
            staging / layout.POINT_FILE,
            {
                "format": POINT_FORMAT,
                "id": pid,
                "status": "complete",
                "sweep": sweep_dir.name,
                "host": info.get("host"),
                "server": point.get("server"),
                "baseline": bool(point.get("baseline")),
                "bench": info.get("bench_params"),
                "timings": _timings(info, finished),
                "ready": {
                    k: (info.get("ready") or {}).get(k)
                    for k in ("pid", "invocation", "phases", "elapsed")
                },
                "cells": cells,
                "failed_attempts": int(previous.get("attempt") or 0),
                "host_class": info.get("host_class"),
                "identity": identity,
            },
        )
        target = layout.install_point(sweep_dir, pid, staging, finished)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    archive.unlink(missing_ok=True)  # everything it held is in the point directory now
    if identity and identity.get("digest"):
        store.register(sweep_dir.parent, str(identity["digest"]), target)
    return target


def measured_identity(point: dict[str, Any], host_class: Any) -> dict[str, Any] | None:
    """The identity the measurement holds: the plan's, or, when the plan gave one per hardware
    class (hosts of several classes), the one of the class of the host that measured it."""
    identity = point.get("identity")
    if not isinstance(identity, dict):
        return None
    by_class = identity.get("by_class")
    if by_class is None:
        return identity
    chosen = by_class.get(str(host_class)) if isinstance(by_class, dict) else None
    return chosen if isinstance(chosen, dict) else None


def fail_point(sweep_dir: Path, info: dict[str, Any]) -> Path:
    point = info["point"]
    pdir = sweep_dir / str(point["id"])
    previous = layout.read_json(pdir / layout.FAILURE_FILE) or {}
    finished = time.time()
    journal = info.get("journal") or []
    if isinstance(journal, str):
        journal = journal.splitlines()
    path = pdir / layout.FAILURE_FILE
    write_json(
        path,
        {
            "format": POINT_FORMAT,
            "id": point["id"],
            "status": "failed",
            "sweep": sweep_dir.name,
            "host": info.get("host"),
            # the hardware class: an out-of-memory verdict holds on this class only
            "host_class": str(info.get("host_class") or ""),
            "server": point.get("server"),
            "baseline": bool(point.get("baseline")),
            "failed_task": info.get("task"),
            "reason": str(info.get("reason") or "unknown")[:4000],
            "journal": journal[-200:],
            "timings": _timings(info, finished),
            "attempt": int(previous.get("attempt") or 0) + 1,
            **failure_cause(info, journal),
        },
    )
    return path


def failure_cause(info: dict[str, Any], journal: list[str]) -> dict[str, Any]:
    """cause, cause_detail and, for a rejected flag, flags: `bench refused` where the playbook
    says so (failures.BENCH_REFUSED); sglang_ready's, which the playbook passes (or its `host
    lost`); else the journal's by the same classifier, and one that shows nothing there (another
    error after the server was ready) is a crash."""
    if info.get("bench_refused"):
        return {"cause": failures.BENCH_REFUSED, "cause_detail": str(info.get("reason"))[-1000:]}
    causes = failures.classifier()
    given = info.get("cause")
    if given in causes.CAUSES:
        found = causes.Cause(
            str(given),
            str(info.get("cause_detail") or ""),
            tuple(str(f) for f in info.get("flags") or ()),
        )
    else:
        found = causes.classify([str(line) for line in journal], deadline_passed=False)
    out: dict[str, Any] = {"cause": found.cause, "cause_detail": found.detail[:1000]}
    if found.cause == causes.REJECTED_FLAG:
        out["flags"] = list(found.flags)
    return out


def load_info(text: str) -> dict[str, Any]:
    info = json.loads(text)
    if not isinstance(info, dict) or "point" not in info or "id" not in info["point"]:
        raise RecordError("point information must be a JSON object with point.id")
    return info


def remember_failure(sweep_dir: Path, info: dict[str, Any]) -> None:
    """After a failed point is recorded: a failure that teaches is kept in the store under the
    point's edge, for the sweeps after this one."""
    point = info["point"]
    record = layout.read_json(sweep_dir / str(point["id"]) / layout.FAILURE_FILE) or {}
    if record.get("cause") not in failures.TEACHING:
        return
    edge = (measured_identity(point, info.get("host_class")) or {}).get("edge")
    if not edge:
        return  # the host published no identity: nothing to key the verdict by
    entry = {
        "point": point["id"],
        "server": point.get("server"),
        "cause": record["cause"],
        "flags": list(record.get("flags") or ()),
        "host_class": info.get("host_class") or record.get("host_class") or "",
        "sweep": sweep_dir.name,
    }
    failures.remember(sweep_dir.parent, str(edge), entry)
