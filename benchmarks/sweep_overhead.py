"""Controller-side orchestration overhead of a sweep, per point: wall time minus the server's
load time (readiness module, restart included) and the bench's time. Prints every point and the
median over the points.

    # run the demo sweep under a fresh name (demo host up: `make demo` once), then measure it
    .venv/bin/python benchmarks/sweep_overhead.py --run
    # or measure an existing sweep
    .venv/bin/python benchmarks/sweep_overhead.py results/<sweep>

--run passes its other arguments to ansible-playbook (e.g. -i inventory/demo/hosts.yml).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_demo_sweep(extra: list[str]) -> Path:
    name = time.strftime("overhead-%Y%m%d-%H%M%S")
    cmd = ["ansible-playbook", "-i", "inventory/demo/hosts.yml", "sweep.yml"]
    cmd += ["-e", f"sweep_name={name}", *extra]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=ROOT, check=True)
    return ROOT / "results" / name


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter, allow_abbrev=False
    )
    p.add_argument("sweep_dir", nargs="?", type=Path)
    p.add_argument("--run", action="store_true", help="run the demo sweep first")
    a, extra = p.parse_known_args()
    if a.run:
        sweep = run_demo_sweep(extra)
    elif a.sweep_dir:
        sweep = a.sweep_dir
    else:
        p.error("give a sweep directory or --run")
    rows = []
    for marker in sorted(sweep.glob("*/point.json")):
        t = json.loads(marker.read_text())["timings"]
        rows.append((marker.parent.name, t))
    if not rows:
        print(f"no complete points under {sweep}", file=sys.stderr)
        return 1
    print(f"{'point':<28} {'wall s':>7} {'load s':>7} {'bench s':>8} {'overhead s':>11} restarted")
    for name, t in rows:
        print(
            f"{name:<28} {t['wall_s']:>7.1f} {t['load_s']:>7.1f} {t['bench_s']:>8.1f} "
            f"{t['overhead_s']:>11.1f} {t['restarted']}"
        )
    overheads = [t["overhead_s"] for _, t in rows]
    print(
        f"orchestration overhead per point: median {statistics.median(overheads):.1f} s "
        f"over {len(rows)} points (min {min(overheads):.1f}, max {max(overheads):.1f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
