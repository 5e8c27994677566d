"""Writes the built-in chat workload: `python scripts/builtin_workload [--check]`.

The bench reads what this writes and imports none of it (bench/builtin.py):

- bench/prompts/builtin-chat.jsonl: 48 conversations in each of the five domains, interleaved
  (coding, math, document, multiturn, json, coding, ...), in the `chat` dataset format, each
  with its `source` (the domain), `max_tokens` and `material` (corpus, offset, chars);
- bench/prompts/material-chat.txt and material-json.txt: the two material corpora written
  here (the other three, `code`, `document` and `math`, are the raw categories' texts).

`--check` writes nothing and fails when a file differs from what would be written. The output
depends on nothing but this code and bench/corpora.py: rerun it after changing either.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(p) for p in (HERE, ROOT) if str(p) not in sys.path]

from coding_math_document import coding, document, math  # noqa: E402
from drafts import DOMAINS, material_of  # noqa: E402
from multiturn_json import json_requests, multiturn  # noqa: E402

from bench.conversation import Conversation  # noqa: E402

PROMPTS = ROOT / "bench" / "prompts"
GENERATED_MATERIALS = ("chat", "json")


def conversations() -> list[Conversation]:
    by_domain = {
        "coding": coding(),
        "math": math(),
        "document": document(),
        "multiturn": multiturn(),
        "json": json_requests(),
    }
    return [c for group in zip(*(by_domain[d] for d in DOMAINS), strict=True) for c in group]


def files(out_dir: Path = PROMPTS) -> dict[Path, str]:
    """Every file this writes, by path, with its text."""
    lines = (json.dumps(c.to_dict(), ensure_ascii=False) + "\n" for c in conversations())
    out = {out_dir / "builtin-chat.jsonl": "".join(lines)}
    for name in GENERATED_MATERIALS:
        out[out_dir / f"material-{name}.txt"] = material_of(name).text
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail when a file is not current")
    parser.add_argument("--out", type=Path, default=PROMPTS, help="where (default: bench/prompts)")
    args = parser.parse_args(argv)
    stale = []
    for path, text in files(args.out).items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        if args.check:
            stale.append(str(path))
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    if stale:
        print(f"not current: {', '.join(stale)} (run python scripts/builtin_workload)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
