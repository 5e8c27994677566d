"""Record files under an output directory, all written atomically (temp file + os.replace).

<cell-id>.json            the cell's record; written LAST, so its presence means "complete"
<cell-id>.requests.jsonl  per-request raw data (rewritten when its .json is missing)
summary.csv               one row per cell record, regenerated from all records
aggregate.csv             one row per point: median and MAD across repetitions
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench.metrics import HEADLINE, aggregate_repetitions, headline

RECORD_SUFFIX = ".json"
REQUESTS_SUFFIX = ".requests.jsonl"
PARAM_COLUMNS = ("cell_id", "point_id", "context", "concurrency", "output_len", "category")
COUNT_COLUMNS = ("repetition", "requests", "completed", "failed", "incomplete")
# open-loop cells (empty for closed-loop ones): their load, and whether the client kept to it
OPEN_LOOP_COLUMNS = ("request_rate", "burstiness")
OPEN_LOOP_FIGURES = ("achieved_rate", "send_lag_p99_ms", "valid", "invalid_reason")
# the tails of the latency distributions: column -> (summary key, statistic)
TAIL_COLUMNS = {
    f"{name[:-3]}_{stat}_ms": (name, stat)
    for name in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_latency_ms")
    for stat in ("p90", "p99")
}


def write_atomic(path: Path, data: str) -> None:
    """Write `data` to `path` so readers see the old file or the whole new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_json(path: Path, obj: Any) -> None:
    write_atomic(path, json.dumps(obj, indent=1, sort_keys=False, default=str) + "\n")


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    write_atomic(path, "".join(json.dumps(r, default=str) + "\n" for r in rows))


def record_path(out: Path, cell_id: str) -> Path:
    return out / f"{cell_id}{RECORD_SUFFIX}"


def requests_path(out: Path, cell_id: str) -> Path:
    return out / f"{cell_id}{REQUESTS_SUFFIX}"


def is_done(out: Path, cell_id: str, redo_failed: bool = False) -> bool:
    """A cell is done when its record exists (with `redo_failed`: and has no failed or
    incomplete requests)."""
    path = record_path(out, cell_id)
    if not path.is_file():
        return False
    if not redo_failed:
        return True
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))["summary"]
    except (OSError, ValueError, KeyError):
        return False
    return not (summary.get("failed") or summary.get("incomplete"))


def write_cell(
    out: Path, cell_id: str, record: dict[str, Any], requests: list[dict[str, Any]]
) -> None:
    """The requests file first, the record last: a crash between leaves no record, and the
    cell is redone (its stale .jsonl overwritten)."""
    write_jsonl(requests_path(out, cell_id), requests)
    write_json(record_path(out, cell_id), record)


def load_records(out: Path) -> list[dict[str, Any]]:
    records = []
    for p in sorted(out.glob(f"*{RECORD_SUFFIX}")):
        if p.name.endswith(REQUESTS_SUFFIX) or p.name.startswith("."):
            continue
        try:
            rec = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(rec, dict) and "cell" in rec and "summary" in rec:
            records.append(rec)
    return records


def load_requests(out: Path, cell_id: str) -> list[dict[str, Any]]:
    text = requests_path(out, cell_id).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _csv(rows: list[dict[str, Any]], columns: list[str]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in columns})
    return buf.getvalue()


def summary_row(rec: dict[str, Any]) -> dict[str, Any]:
    cell, s = rec["cell"], rec["summary"]
    row: dict[str, Any] = {k: cell.get(k) for k in PARAM_COLUMNS}
    row["repetition"] = cell.get("repetition")
    row.update({k: s.get(k) for k in COUNT_COLUMNS if k in s})
    row.update(headline(s))
    row.update({col: (s.get(name) or {}).get(stat) for col, (name, stat) in TAIL_COLUMNS.items()})
    row.update({k: cell.get(k) for k in OPEN_LOOP_COLUMNS})
    row.update({k: s.get(k) for k in OPEN_LOOP_FIGURES})
    row["send_lag_p99_ms"] = (s.get("send_lag_ms") or {}).get("p99")
    return row


def write_summaries(out: Path) -> list[dict[str, Any]]:
    """Regenerate summary.csv and aggregate.csv from every record in `out`; returns the
    aggregate rows."""
    records = load_records(out)
    rows = [summary_row(r) for r in records]
    cols = [*PARAM_COLUMNS, *COUNT_COLUMNS, *HEADLINE, *TAIL_COLUMNS, *OPEN_LOOP_COLUMNS]
    cols += OPEN_LOOP_FIGURES
    write_atomic(out / "summary.csv", _csv(rows, cols))
    agg = aggregate_points(records)
    agg_cols = list(agg[0].keys()) if agg else ["point_id"]
    write_atomic(out / "aggregate.csv", _csv(agg, agg_cols))
    return agg


def aggregate_points(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_point: dict[str, list[dict[str, Any]]] = {}
    params: dict[str, dict[str, Any]] = {}
    for r in records:
        pid = r["cell"]["point_id"]
        by_point.setdefault(pid, []).append(r["summary"])
        params[pid] = {
            k: r["cell"].get(k) for k in (*PARAM_COLUMNS, *OPEN_LOOP_COLUMNS) if k != "cell_id"
        }
    return [
        {**params[pid], **aggregate_repetitions(sums)} for pid, sums in sorted(by_point.items())
    ]
