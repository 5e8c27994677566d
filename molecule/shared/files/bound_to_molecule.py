#!/usr/bin/env python3
"""Runs a scenario's command bound to the molecule run above it: when that run ends, or is killed,
so is the command (and every process in its group), so a later run never meets its processes or
the files they would go on writing.

    bound_to_molecule.py [--background] [--rc-file F] [--log F] -- COMMAND [ARG ...]

Foreground (default): runs COMMAND in a process group of its own and exits with its status.
--background: prints COMMAND's process-group id and returns at once (the scenario may kill that
group itself, as sweep-resume does); COMMAND's output goes to --log, and its exit status to
--rc-file when it ends on its own.

The owner is the nearest `molecule` process above this one; outside a molecule run (a verify
playbook run by hand), the outermost `ansible-playbook`. A watcher looks once a second: when the
owner's PID is gone or belongs to another process (start time), it sends SIGTERM to COMMAND's group
and to the playbook that started it (orphaned, it would go on to start more), and SIGKILL to the
group 5 s later. Under molecule with no molecule above (a killed run's orphaned playbook), nothing
is started. A sweep started with setsid escapes Ctrl-C and a CI job's kill of molecule's process
group; this does not.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

GRACE_SECONDS = 5.0


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent PID, start time in clock ticks) of a live process."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()
    return int(fields[1]), int(fields[19])


def _argv(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def _runs(pid: int, program: str) -> bool:
    """Whether the process runs `program` (directly, or as the script of an interpreter)."""
    return any(os.path.basename(arg) == program for arg in _argv(pid)[:2])


def find_owner(start: int) -> tuple[tuple[int, int] | None, list[tuple[int, int]]]:
    """The owner, (PID, start time): the nearest molecule above `start`, else (outside a molecule
    run) the outermost ansible-playbook; and the processes between `start` and the owner (the
    playbook that ran this task), which are stopped with the command when the owner is gone."""
    pid, chain, playbook = start, [], None
    while pid > 1:
        stat = _stat(pid)
        if stat is None:
            break
        if _runs(pid, "molecule"):
            return (pid, stat[1]), chain
        chain.append((pid, stat[1]))
        if _runs(pid, "ansible-playbook"):
            playbook = len(chain)
        pid = stat[0]
    # Under molecule (its variables set) but with no molecule above: the run was killed and this
    # is its orphaned playbook, which must start nothing more.
    if playbook is None or "MOLECULE_EPHEMERAL_DIRECTORY" in os.environ:
        return None, []
    return chain[playbook - 1], chain[: playbook - 1]


def alive(process: tuple[int, int]) -> bool:
    stat = _stat(process[0])
    return stat is not None and stat[1] == process[1]


def _kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def watch(
    proc: subprocess.Popen[bytes], owner: tuple[int, int], chain: list[tuple[int, int]]
) -> int | None:
    """COMMAND's status when it ends on its own; None when the owner went first: then the
    command's group was stopped, and the playbook between the owner and this process too."""
    while True:
        rc = proc.poll()
        if rc is not None:
            return rc
        if not alive(owner):
            _kill_group(proc.pid, signal.SIGTERM)
            for process in chain:
                if alive(process):
                    os.kill(process[0], signal.SIGTERM)
            deadline = time.monotonic() + GRACE_SECONDS
            while proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.2)
            # Its workers may outlive the leader: the group goes whole.
            _kill_group(proc.pid, signal.SIGKILL)
            proc.wait()
            return None
        time.sleep(1.0)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--background", action="store_true")
    parser.add_argument("--rc-file", type=Path)
    parser.add_argument("--log", type=Path)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command after --")
    owner, chain = find_owner(os.getppid())
    if owner is None:
        print(
            "bound_to_molecule: no molecule run above this process (killed?), and it is not a "
            "playbook run by hand: not starting " + " ".join(command),
            file=sys.stderr,
        )
        return 2

    if not args.background:
        proc = subprocess.Popen(command, start_new_session=True)
        # Its own group no longer hears the terminal's Ctrl-C or a kill of the task's group:
        # pass both on.
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda signum, _: _kill_group(proc.pid, signum))
        rc = watch(proc, owner, chain)
        return 128 + signal.SIGTERM if rc is None else (rc if rc >= 0 else 128 - rc)

    read_end, write_end = os.pipe()
    if os.fork():
        os.close(write_end)
        with os.fdopen(read_end) as pipe:
            pgid = pipe.read().strip()
        if not pgid:
            return 1
        print(pgid)
        return 0
    # The watcher: its own session, none of the task's descriptors (the task returns at once).
    os.close(read_end)
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    out = os.open(args.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644) if args.log else devnull
    proc = subprocess.Popen(
        command, stdin=devnull, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
    )
    os.write(write_end, f"{proc.pid}\n".encode())
    os.close(write_end)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    signal.signal(signal.SIGTERM, lambda *_: _kill_group(proc.pid, signal.SIGTERM))
    rc = watch(proc, owner, chain)
    if rc is not None and args.rc_file:
        args.rc_file.write_text(f"{rc if rc >= 0 else 128 - rc}\n")
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
