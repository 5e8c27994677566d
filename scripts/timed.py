#!/usr/bin/env python3
"""Where the suite's time goes: run one step, record its wall time and CPU seconds, print a table.

    timed.py --log FILE --name NAME [--lane LANE] [--containers NAME ...] -- COMMAND [ARG ...]
    timed.py --log FILE --summary [--title TITLE]

The first form runs COMMAND (its output passes through), then appends one JSON line to FILE:
wall seconds, the CPU seconds of every process COMMAND started and waited for (the controller:
ansible-playbook, pytest, pip), and the CPU seconds of the named podman containers, read from
their cgroups while they lived (the test hosts: systemd, the server, the modules Ansible runs
there). It exits with COMMAND's status. The second form prints every line of FILE as a table,
with each lane's totals.

CPU that neither side reads: processes that left COMMAND's tree before it waited for them (a
sweep started in the background with setsid) and podman's own daemons (conmon).
Standard library only: it runs before the virtual environment exists.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

# podman's cgroup of a container, by the cgroup manager and version: <dir>/<file> holds its
# cumulative CPU. cgroup v1 (these machines: cgroupfs manager, hybrid layout): nanoseconds;
# cgroup v2: usage_usec in cpu.stat.
CGROUP_PATTERNS = (
    "/sys/fs/cgroup/cpuacct/libpod_parent/libpod-*",
    "/sys/fs/cgroup/cpu,cpuacct/libpod_parent/libpod-*",
    "/sys/fs/cgroup/cpu,cpuacct/machine.slice/libpod-*.scope",
    "/sys/fs/cgroup/libpod_parent/libpod-*",
    "/sys/fs/cgroup/machine.slice/libpod-*.scope",
)


def container_id(path: str) -> str:
    name = os.path.basename(path)
    return name.removeprefix("libpod-").removesuffix(".scope")


def cgroup_cpu_seconds(path: str) -> float | None:
    try:
        usage = Path(path, "cpuacct.usage")
        if usage.exists():
            return int(usage.read_text()) / 1e9
        for line in Path(path, "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) / 1e6
    except (OSError, ValueError):
        return None
    return None


class ContainerCpu:
    """Samples the cgroups of the named containers once a second: a container destroyed and
    created again under the same name (molecule's destroy, create) counts once per life."""

    def __init__(self, names: list[str], interval: float = 1.0) -> None:
        self.names = set(names)
        self.interval = interval
        self.seen: dict[str, str | None] = {}  # container id -> its name, None if not ours
        self.cpu: dict[str, float] = {}  # container id -> last CPU seconds read
        self.before: dict[str, float] = {}  # what a container had used when the step began
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        if self.names:
            self._sample()
            self.before = dict(self.cpu)
            self._thread.start()

    def stop(self) -> float | None:
        if not self.names:
            return None
        self._stop.set()
        self._thread.join()
        self._sample()
        return sum(cpu - self.before.get(cid, 0.0) for cid, cpu in self.cpu.items())

    def _name_of(self, cid: str) -> str | None:
        try:
            out = subprocess.run(
                ["podman", "container", "inspect", "--format", "{{.Name}}", cid],
                capture_output=True, text=True, timeout=30,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            return None
        name = out.stdout.strip()
        return name if out.returncode == 0 and name else None

    def _sample(self) -> None:
        for pattern in CGROUP_PATTERNS:
            for path in glob.glob(pattern):
                cid = container_id(path)
                if cid not in self.seen:
                    name = self._name_of(cid)
                    self.seen[cid] = name if name in self.names else None
                if self.seen[cid] is None:
                    continue
                cpu = cgroup_cpu_seconds(path)
                if cpu is not None:
                    self.cpu[cid] = max(cpu, self.cpu.get(cid, 0.0))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()


def run(args: argparse.Namespace) -> int:
    sampler = ContainerCpu(args.containers or [])
    sampler.start()
    start = time.monotonic()
    proc = subprocess.Popen(args.command)
    # The step ends when its command ends: an interrupt goes to the command, which decides.
    signal.signal(signal.SIGINT, lambda *_: proc.send_signal(signal.SIGINT))
    signal.signal(signal.SIGTERM, lambda *_: proc.send_signal(signal.SIGTERM))
    rc = proc.wait()
    wall = time.monotonic() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    containers = sampler.stop()
    row = {
        "name": args.name,
        "lane": args.lane,
        "wall_s": round(wall, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "containers_cpu_s": None if containers is None else round(containers, 1),
        "rc": rc,
    }
    with open(args.log, "a", encoding="utf-8") as log:
        log.write(json.dumps(row) + "\n")
    return rc if rc >= 0 else 128 - rc


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def summary(args: argparse.Namespace) -> int:
    try:
        rows = [json.loads(line) for line in Path(args.log).read_text().splitlines() if line]
    except FileNotFoundError:
        rows = []
    print(f"{args.title}: wall s, CPU s of the controller's processes, CPU s of the test hosts")
    print(f"  {'step':<28} {'lane':<10} {'wall':>6} {'cpu':>6} {'hosts':>6}  result")
    lanes: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        lanes.setdefault(str(row.get("lane") or ""), []).append(row)
        result = "ok" if row["rc"] == 0 else f"rc {row['rc']}"
        print(
            f"  {row['name']:<28} {row.get('lane') or '':<10} {fmt(row['wall_s']):>6}"
            f" {fmt(row['cpu_s']):>6} {fmt(row.get('containers_cpu_s')):>6}  {result}"
        )
    for lane, members in lanes.items():
        if not lane or len(members) < 2:
            continue
        hosts = [m["containers_cpu_s"] for m in members if m.get("containers_cpu_s") is not None]
        wall = sum(float(m["wall_s"]) for m in members)
        cpu = sum(float(m["cpu_s"]) for m in members)
        host_cpu = sum(float(h) for h in hosts) if hosts else None
        print(f"  {'lane total':<28} {lane:<10} {wall:>6.0f} {cpu:>6.0f} {fmt(host_cpu):>6}")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", required=True, help="the JSON-lines file of steps")
    parser.add_argument("--name", help="the step's name")
    parser.add_argument("--lane", default="", help="steps of one lane run one after another")
    parser.add_argument("--containers", nargs="*", help="podman containers whose CPU to read")
    parser.add_argument("--summary", action="store_true", help="print the table and exit")
    parser.add_argument("--title", default="times", help="the table's first line")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.summary:
        return summary(args)
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    if not args.name or not args.command:
        parser.error("a step needs --name and a command after --")
    return run(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
