"""Helpers (no tests) for the sweep tests: fake points with bench records, archives.

Named test_sweep_* only to live beside them; pytest finds no test in it."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

from bench.records import write_cell, write_summaries
from bench.workload import build_matrix

INVENTORY = {
    "algorithm": "DDTREE",
    "budget": 16,
    "topk": 4,
    "window": 2048,
    "dialect": "ddtree",
    "bench": {"contexts": [512, 4096], "concurrency": [1, 8], "output_len": [64]},
}


def plan_input(tmp: Path, hosts: list[str] | None = None, **cli: Any) -> dict[str, Any]:
    return {
        "cli": cli,
        "inventory": INVENTORY,
        "hosts": hosts or ["h1"],
        "results_root": str(tmp),
    }


def write_records(out: Path, throughput: float, accept: float | None, failed: int = 0) -> None:
    """One record per cell of the INVENTORY matrix; throughput scales with concurrency."""
    for cell in build_matrix([512, 4096], [1, 8], [64], ["random"], 1):
        summary = {
            "requests": 8,
            "completed": 8 - failed,
            "failed": failed,
            "incomplete": 0,
            "output_throughput": throughput * cell.concurrency,
            "ttft_ms": {"median": 50.0, "p99": 80.0},
            "tpot_ms": {"median": 1000.0 / throughput, "p99": 1500.0 / throughput},
            "accept_length": accept,
        }
        write_cell(out, cell.cell_id, {"cell": cell.to_dict(), "summary": summary}, [])
    write_summaries(out)


def archive(
    tmp: Path,
    throughput: float,
    accept: float | None,
    name: str = "a.tar.gz",
    more: dict[str, Any] | None = None,
) -> Path:
    """What bench.archive sends back from a host (`more`: the bench's more.json)."""
    src = tmp / f"src-{name}"
    write_records(src / "records", throughput, accept)
    if more is not None:
        (src / "records" / "more.json").write_text(json.dumps(more))
    (src / "server_info.json").write_text(json.dumps({"api_key": "<redacted>"}))
    (src / "sglang.service").write_text("[Service]\n")
    (src / "journal.log").write_text("ready\n")
    path = tmp / name
    with tarfile.open(path, "w:gz") as tar:
        for p in sorted(src.iterdir()):
            tar.add(p, arcname=p.name)
    return path


def evil_archive(tmp: Path) -> Path:
    path = tmp / "evil.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        data = b"x"
        info = tarfile.TarInfo("../escape.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return path


def info(point_id: str, server: dict[str, Any], started: float, **extra: Any) -> dict[str, Any]:
    return {
        "point": {"id": point_id, "server": server, "baseline": server["algorithm"] == "NONE"},
        "host": "h1",
        "started": started,
        "restarted": True,
        "ready": {"elapsed": 6.0, "pid": 42},
        "bench": {"start": "2026-01-01 10:00:00.000000", "end": "2026-01-01 10:00:20.500000"},
        **extra,
    }
