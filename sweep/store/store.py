"""Measurements as a content-addressed store: a point measured once is never measured again for
the same identity, in any sweep under the same results directory.

A measurement's identity is everything that determines it: the host's hardware class (GPU models
and count, or the host itself when it has no nvidia-smi), the SGLang build (the build-facts id, or
the named dialect), the server command, the model and drafter (path and the weights check's
fingerprint: names, sizes and mtimes), the base environment (a digest: it may hold secrets), the
exact launch the role renders for the point (flags and environment, from the role's own filter),
the bench parameters and the bench package's source hash (the wheelhouse's). Its digest keys
`<results>/.store/<digest>.json`, a list of the point directories measured under it; every
change of an index is made under `<results>/.store/.lock` (filelock), so parallel hosts finishing
points at once never lose an entry.

A point is reused only from a directory whose point.json is complete and carries the same digest
(a missing, incomplete or edited directory is stale and skipped). Reusing copies the directory into
the new sweep with point.json's `reused_from` naming the original measurement; nothing is moved or
deleted. `fresh=true` on the command line measures again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from filelock import FileLock

from bench.records import write_atomic, write_json
from sweep import layout
from sweep.config.points import ROLES, Point, role_filters
from sweep.store import wheelhouse

STORE = ".store"
LOCK = ".lock"  # <results>/.store/.lock
IDENTITY_FORMAT = 1


def point_identity(
    server: dict[str, Any],
    capabilities: dict[str, Any],
    bench: dict[str, Any],
    bench_version: str,
    launch: Any,
) -> dict[str, Any] | None:
    """The identity of one point on a host whose preflight published `capabilities` (None when it
    published no identity: such a host's points are never reused). `launch` is the role's
    sglang_server_launch filter."""
    host = capabilities.get("identity")
    config = capabilities.get("config")
    if not host or not config or not capabilities.get("dialect"):
        return None
    # the point's parameters over the host's launch config (the role's one map of their names)
    params = role_filters().PARAMETERS
    cfg = {**config, **{v["config"]: server[k] for k, v in params.items()}}
    rendered = launch(cfg, capabilities["dialect"])
    return {
        "format": IDENTITY_FORMAT,
        "host": host,
        "launch": {"flags": rendered["flags"], "env": rendered["env"]},
        "point_env": dict(server.get("env") or {}),
        "bench": bench,
        "bench_version": bench_version,
    }


def edge_identity(capabilities: dict[str, Any]) -> dict[str, Any] | None:
    """What decides whether a configuration fits on a host, less the point's own parameters
    (sweep/store/failures.py compares those): the host's identity (hardware class, build, model and
    drafter) and the role's base configuration. None when the host published no identity."""
    host = capabilities.get("identity")
    config = capabilities.get("config")
    if not host or not config:
        return None
    own = {v["config"] for v in role_filters().PARAMETERS.values()}
    base = {k: v for k, v in config.items() if k not in own}
    return {"format": IDENTITY_FORMAT, "host": host, "config": base}


def digest(identity: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def _index(root: Path, key: str) -> Path:
    return root / STORE / f"{key}.json"


def _entries(root: Path, key: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(_index(root, key).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []


def lookup(root: Path, key: str) -> Path | None:
    """The newest complete point directory measured under `key`, or None."""
    for entry in reversed(_entries(root, key)):
        pdir = root / str(entry.get("dir", ""))
        meta = layout.read_json(pdir / layout.POINT_FILE) or {}
        if meta.get("status") == "complete" and (meta.get("identity") or {}).get("digest") == key:
            return pdir
    return None


def earlier(sweep_dir: Path, identities: dict[str, dict[str, Any]]) -> dict[str, Path]:
    """point id -> the newest complete measurement under its identity (lookup) in the store of
    the sweep's results, another than the point's own directory in the sweep."""
    found = {pid: lookup(sweep_dir.parent, ident["digest"]) for pid, ident in identities.items()}
    return {pid: d for pid, d in found.items() if d is not None and d != sweep_dir / pid}


def lock(root: Path) -> FileLock:
    """The store's lock: held around every read-modify-write of an index, so that hosts finishing
    points at once (one `finish-point` process each) never drop each other's entries. Readers
    need none: an index is replaced whole (write_atomic)."""
    (root / STORE).mkdir(parents=True, exist_ok=True)
    return FileLock(root / STORE / LOCK)


def register(root: Path, key: str, point_dir: Path) -> None:
    """Adds a complete point directory to the store (idempotent)."""
    rel = os.path.relpath(point_dir, root)
    with lock(root):
        entries = [e for e in _entries(root, key) if e.get("dir") != rel]
        entries.append({"dir": rel, "recorded": time.time()})
        write_atomic(_index(root, key), json.dumps(entries, indent=1) + "\n")


def origin(point_dir: Path) -> dict[str, Any]:
    """Where a point directory's measurement was made: its own or the one it was copied from."""
    meta = layout.read_json(point_dir / layout.POINT_FILE) or {}
    return dict(meta.get("reused_from") or {"sweep": meta.get("sweep"), "point": meta.get("id")})


def copy_point(
    source: Path, sweep_dir: Path, point_id: str, note: dict[str, Any], key: str | None
) -> Path:
    """Copies the measurement in `source` into the sweep as `point_id`, its point.json updated
    with `note` (written last, the directory renamed into place), and registers the copy under
    `key` (a digest; None: not registered). An existing directory of that point (a failed
    attempt) is moved aside, never overwritten."""
    staging = sweep_dir / layout.STAGING / f"{point_id}.copy.{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(source, staging, ignore=shutil.ignore_patterns(layout.POINT_FILE))
    meta = layout.read_json(source / layout.POINT_FILE) or {}
    meta.update(id=point_id, sweep=sweep_dir.name, **note)
    write_json(staging / layout.POINT_FILE, meta)
    target = layout.install_point(sweep_dir, point_id, staging, time.time())
    if key is not None:
        register(sweep_dir.parent, key, target)
    return target


def adopt(source: Path, sweep_dir: Path, point_id: str, key: str) -> Path:
    """Reuse: the measurement in `source`, made under the same identity, as `point_id` of the
    sweep, point.json naming where it was measured (`reused_from`)."""
    note = {"reused_from": {**origin(source), "dir": str(source), "reused": time.time()}}
    return copy_point(source, sweep_dir, point_id, note, key)


def point_identities(
    points: list[Point],
    capabilities: dict[str, Any],
    bench: dict[str, Any],
    by_class: dict[str, dict[str, Any]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Each point's measurement identity (sweep/store/store.py), with its digest: on the first host
    (`capabilities`), or for a point pinned to a hardware class on a host of that class. With
    `by_class`, also `by_class`: the identity under every class, so that a point is recorded
    under the class of the host that measured it."""
    launch = role_filters().sglang_server_launch
    version = wheelhouse.source_hash(ROLES.parent)

    def one(p: Point, caps: dict[str, Any]) -> dict[str, Any] | None:
        ident = point_identity(p.server(), caps, bench, version, launch)
        if ident is None:
            return None
        edge = edge_identity(caps)
        # the digest is the measurement's; `edge` keys the verdicts of failures
        # (sweep/store/failures.py)
        return {**ident, "digest": digest(ident), "edge": digest(edge) if edge else None}

    out: dict[str, dict[str, Any]] = {}
    for p in points:
        ident = one(p, (by_class or {}).get(p.pin, {}) if p.pin else capabilities)
        if ident is None:
            continue
        if by_class:
            ident["by_class"] = {c: i for c, caps in by_class.items() if (i := one(p, caps))}
        out[p.point_id] = ident
    return out
