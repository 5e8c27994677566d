"""Which host runs which point: claims on the controller.

The online planner (sweep/cli/planner.py) claims a run for the host it hands it to; a claim is a
file created exclusively (`<sweep>/.claims/<point>@<generation>` holding the host's name), so two
hosts never both get a point, and a faster host simply runs more points. A host lost in the middle
of a point (unreachable, its container gone) leaves its claim behind: a surviving host takes a claim
whose holder is no longer among the live hosts by creating the next generation, again
exclusively. Claims belong to one invocation: the planner clears them when it starts one.

A point that failed in this invocation for a cause that says nothing about it (a crash, a
readiness timeout, a lost host: sweep/store/failures.py) is tried once more, by another host, as the
next generation; one that failed for out of memory or a rejected flag is not (it would fail again).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sweep import layout
from sweep.store import failures

CLAIMS = ".claims"


def _generations(sweep_dir: Path, point_id: str) -> list[int]:
    found = []
    for p in (sweep_dir / CLAIMS).glob(f"{point_id}@*"):
        suffix = p.name.rsplit("@", 1)[1]
        if suffix.isdigit():
            found.append(int(suffix))
    return sorted(found)


def _create(sweep_dir: Path, point_id: str, generation: int, host: str) -> bool:
    path = sweep_dir / CLAIMS / f"{point_id}@{generation}"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(host + "\n")
    return True


def _holder(sweep_dir: Path, point_id: str, generation: int) -> str:
    path = sweep_dir / CLAIMS / f"{point_id}@{generation}"
    return path.read_text(encoding="utf-8").strip()


def _failed_this_run(sweep_dir: Path, point_id: str) -> bool:
    runs = (layout.read_sweep(sweep_dir) or {}).get("runs") or [{}]
    started = float(runs[-1].get("started") or 0)
    return 0 < started <= layout.recorded(sweep_dir, [point_id])[point_id].failed_at


def _retry_here(sweep_dir: Path, point_id: str, host: str, generations: int) -> bool:
    """Whether `host` may try again a point that failed in this invocation (see the docstring)."""
    failure = layout.read_json(sweep_dir / point_id / layout.FAILURE_FILE) or {}
    other = 1 if failure.get("host") not in (None, host) else 0
    return failures.retry_elsewhere(failure.get("cause"), generations, other)


def claim(
    sweep_dir: Path,
    point_id: str,
    host: str,
    alive: list[str] | None = None,
    only: list[str] | None = None,
) -> dict[str, Any]:
    """{"mine": bool, "state": ...}: `claimed` (new), `held` (this host's already), `taken_over`
    (from a lost host), `retried` (it failed on another host in this run for a cause that may not
    recur there), `taken` (another live host has it), `done` (complete) or `failed` (failed in
    this run: retried by the next run, not by another host). `alive` (the take-over pass): the
    play's hosts; a claim held by any other host is taken over. `only`: the hosts that may run the
    point (a baseline of one hardware class); any other host gets `elsewhere`."""
    if layout.point_status(sweep_dir, point_id) == "complete":
        return {"mine": False, "state": "done"}
    if only is not None and host not in only:
        return {"mine": False, "state": "elsewhere"}
    (sweep_dir / CLAIMS).mkdir(parents=True, exist_ok=True)
    generations = _generations(sweep_dir, point_id)
    if not generations:
        if _create(sweep_dir, point_id, 1, host):
            return {"mine": True, "state": "claimed"}
        generations = _generations(sweep_dir, point_id)
    last = generations[-1]
    holder = _holder(sweep_dir, point_id, last)
    if _failed_this_run(sweep_dir, point_id):
        if _retry_here(sweep_dir, point_id, host, len(generations)):
            if _create(sweep_dir, point_id, last + 1, host):
                return {"mine": True, "state": "retried", "from": holder}
            return {"mine": False, "state": "taken", "by": _holder(sweep_dir, point_id, last + 1)}
        return {"mine": False, "state": "failed", "by": holder}
    if holder == host:
        return {"mine": True, "state": "held"}
    if alive is None or holder in alive:
        return {"mine": False, "state": "taken", "by": holder}
    if _create(sweep_dir, point_id, last + 1, host):
        return {"mine": True, "state": "taken_over", "from": holder}
    return {"mine": False, "state": "taken", "by": _holder(sweep_dir, point_id, last + 1)}


def peek(sweep_dir: Path, point_id: str, host: str, alive: list[str] | None) -> str:
    """What `claim` would find, without claiming: `done`, `free` (also: failed on another host in
    this run, to be tried once more here), `held` (this host's), `taken` (a live host's), `lost`
    (its holder is not among `alive`: it may be taken over) or `failed` (failed in this run: not
    to be tried again in it by this host)."""
    if layout.point_status(sweep_dir, point_id) == "complete":
        return "done"
    generations = _generations(sweep_dir, point_id)
    if not generations:
        return "failed" if _failed_this_run(sweep_dir, point_id) else "free"
    holder = _holder(sweep_dir, point_id, generations[-1])
    if _failed_this_run(sweep_dir, point_id):
        return "free" if _retry_here(sweep_dir, point_id, host, len(generations)) else "failed"
    if holder == host:
        return "held"
    if alive is None or holder in alive:
        return "taken"
    return "lost"


def clear(sweep_dir: Path) -> None:
    for p in (sweep_dir / CLAIMS).glob("*@*"):
        p.unlink(missing_ok=True)
