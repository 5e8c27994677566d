"""Checks the records of a `python -m bench run` against the real SGLang (real-sglang scenario).

Prints one JSON object: the cells found and every problem (an empty list when all is well).
    check_bench.py OUT_DIR CATEGORY[,CATEGORY...] N_CELLS
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def problems_of(cell: Path) -> list[str]:
    rec = json.loads(cell.read_text())
    name = cell.stem
    out: list[str] = []
    summary = rec["summary"]
    if summary["failed"] or summary["incomplete"] or summary["completed"] != summary["requests"]:
        done = f"{summary['completed']}/{summary['requests']}"
        out.append(f"{name}: {done} completed, errors {summary['errors']}")
    if not rec.get("cache_flushed"):
        out.append(f"{name}: /flush_cache was not done")
    delta = (rec.get("server_metrics") or {}).get("delta") or {}
    prompt_total = sum(v for k, v in delta.items() if k.startswith("sglang:prompt_tokens_total"))
    if prompt_total <= 0:
        out.append(
            f"{name}: no sglang:prompt_tokens_total difference in /metrics ({sorted(delta)[:5]})"
        )
    target = rec["prompt_tokens_target"]
    rows = [
        json.loads(line) for line in cell.with_suffix(".requests.jsonl").read_text().splitlines()
    ]
    wrong = [r["prompt_tokens"] for r in rows if r["prompt_tokens"] != target]
    if wrong:
        out.append(f"{name}: the server counted {wrong} prompt tokens, the target is {target}")
    short = [
        r["completion_tokens"] for r in rows if r["completion_tokens"] != rec["cell"]["output_len"]
    ]
    if short:
        out.append(f"{name}: completion tokens {short}, asked {rec['cell']['output_len']}")
    if rec["params"].get("api_key") not in (None, "<redacted>"):
        out.append(f"{name}: the record holds the API key")
    return out


def main() -> None:
    out_dir, categories, n_cells = Path(sys.argv[1]), sys.argv[2].split(","), int(sys.argv[3])
    cells = sorted(out_dir.glob("ctx*.json"))
    problems = [p for cell in cells for p in problems_of(cell)]
    seen = {json.loads(c.read_text())["cell"]["category"] for c in cells}
    if len(cells) != n_cells:
        problems.append(f"{len(cells)} cell records, expected {n_cells}")
    if seen != set(categories):
        problems.append(f"categories recorded {sorted(seen)}, expected {sorted(categories)}")
    print(json.dumps({"cells": [c.stem for c in cells], "problems": problems}))


if __name__ == "__main__":
    main()
