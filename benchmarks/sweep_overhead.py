"""Controller-side orchestration overhead of a sweep, per point: wall time minus the server's
load time (readiness module, restart included) and the bench's time. Prints every point and the
median over the points that ran (a point recorded `same_as` its twin is named, not counted); with
--run also the tasks each point ran and how many of them reached the host
(benchmarks/callback_plugins/task_log.py logs them).

    # run the demo sweep under a fresh name (demo host up: `make demo` once), then measure it
    .venv/bin/python benchmarks/sweep_overhead.py --run
    # or measure an existing sweep
    .venv/bin/python benchmarks/sweep_overhead.py results/<sweep>

--run passes its other arguments to ansible-playbook (-e budget=32,48 -e topk=2,4 -e fresh=true) and
runs this checkout's sweep.yml, whatever the current directory: to compare with other code, run
that checkout's own copy of this script.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# Actions that run on the controller even when the task is the host's.
LOCAL_ACTIONS = {
    "set_fact",
    "assert",
    "debug",
    "fail",
    "meta",
    "include_vars",
    "add_host",
    "include_role",
    "include_tasks",
    "validate_argument_spec",
}
TASK_LOG = Path(__file__).resolve().parent / "callback_plugins"


def run_demo_sweep(extra: list[str], task_log: Path) -> Path:
    name = time.strftime("overhead-%Y%m%d-%H%M%S")
    # the venv's own (a fresh clone after `make venv` has no ansible-playbook on PATH)
    venv_bin = Path(sys.executable).parent / "ansible-playbook"
    playbook = str(venv_bin) if venv_bin.exists() else "ansible-playbook"
    cmd = [playbook, "-i", "inventory/demo/hosts.yml", "sweep.yml"]
    cmd += ["-e", f"sweep_name={name}", *extra]
    print("$", " ".join(cmd), flush=True)
    env = {
        **os.environ,
        "ANSIBLE_CALLBACK_PLUGINS": str(TASK_LOG),
        "ANSIBLE_CALLBACKS_ENABLED": "task_log",
        "TASK_LOG_PATH": str(task_log),
    }
    subprocess.run(cmd, cwd=ROOT, check=True, env=env)
    return ROOT / "results" / name


def tasks_per_point(task_log: Path) -> dict[str, tuple[int, int]]:
    """point id -> (task results, of which on the host): a point starts at its first task named
    "... - point <id>"; the tasks after it without a point in their name (the server role's) count
    for it. The argument-spec check of the next loop iteration comes before that task, so it is
    counted with the previous point: every point gets one, the last one from its predecessor."""
    counts: dict[str, list[int]] = {}
    current = None
    for line in task_log.read_text().splitlines():
        t = json.loads(line)
        name = t["task"]
        if " - point " in name and name.split(" - point ")[-1] not in counts:
            current = name.split(" - point ")[-1]
            counts[current] = [0, 0]
        if current is None or t["host"] == "localhost":  # the planning and report plays
            continue
        action = t["action"].rsplit(".", 1)[-1]
        counts[current][0] += 1
        if action not in LOCAL_ACTIONS and t["delegated"] not in ("localhost", "127.0.0.1"):
            counts[current][1] += 1
    return {k: (v[0], v[1]) for k, v in counts.items()}


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter, allow_abbrev=False
    )
    p.add_argument("sweep_dir", nargs="?", type=Path)
    p.add_argument("--run", action="store_true", help="run the demo sweep first")
    argv = sys.argv[1:]
    if "--run" in argv:  # the rest is ansible-playbook's (a positional would eat "-e x=y"'s value)
        a, extra = argparse.Namespace(run=True, sweep_dir=None), [x for x in argv if x != "--run"]
    else:
        a, extra = p.parse_args(argv), []
    task_log = Path(tempfile.mkstemp(prefix="sweep-tasks-", suffix=".jsonl")[1])
    if a.run:
        sweep = run_demo_sweep(extra, task_log)
    elif a.sweep_dir:
        sweep = a.sweep_dir
    else:
        p.error("give a sweep directory or --run")
    rows, twins = [], []
    for marker in sorted(sweep.glob("*/point.json")):
        record = json.loads(marker.read_text())
        if record.get("same_as"):  # never ran: its timings are its twin's, counted there
            twins.append(f"{marker.parent.name} (= {record['same_as']['point']})")
            continue
        rows.append((marker.parent.name, record["timings"]))
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
    if twins:
        print(f"not counted, the same server as a point above (no run): {', '.join(twins)}")
    counts = tasks_per_point(task_log) if task_log.stat().st_size else {}
    if counts:
        print(f"{'point':<28} {'tasks':>6} {'on the host':>12}")
        for name, (total, host) in counts.items():
            print(f"{name:<28} {total:>6} {host:>12}")
        print(
            f"tasks per point: median {statistics.median(c[0] for c in counts.values()):g}, "
            f"of which on the host {statistics.median(c[1] for c in counts.values()):g} "
            "(every task the log saw: handlers, includes, meta and argument-spec checks included)"
        )
    task_log.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
