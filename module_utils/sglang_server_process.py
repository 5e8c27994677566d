# The restarted unit's server process as readiness reads it from /proc: whether a process of the
# unit holds the listening port, the environment that process was started with (for expect_env),
# and its command line with secrets hidden. Builds on sglang_port_owner's ProcReader.
# Used by library/sglang_ready.py. Runs on the target host: standard library only.
from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable

from ansible.module_utils.sglang_port_owner import ProcPermissionError, socket_holders
from ansible.module_utils.sglang_port_owner import ProcReader as PortOwnerReader
from ansible.module_utils.sglang_secrets import redact_command_line


def parse_environ(raw: bytes, names: Iterable[str]) -> dict[str, str]:
    """The named variables of /proc/PID/environ text (NUL-separated NAME=VALUE); nothing else."""
    wanted = set(names)
    found: dict[str, str] = {}
    for entry in raw.split(b"\0"):
        name, sep, value = entry.partition(b"=")
        key = name.decode("utf-8", "replace")
        if sep and key in wanted and key not in found:  # getenv() returns the first one
            found[key] = value.decode("utf-8", "replace")
    return found


class ProcReader(PortOwnerReader):
    """The port-owner facts, plus what readiness reads of a process: its environment as it was
    started, and its command line with secrets hidden."""

    def environ(self, pid: int, names: Iterable[str]) -> dict[str, str] | None:
        """The named variables of the process's environment as it was started; None when gone.

        Only the named variables are kept; the rest (the launcher's own API key among them) is
        dropped at once.
        """
        path = os.path.join(self.proc_root, str(pid), "environ")
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
        except (FileNotFoundError, ProcessLookupError, NotADirectoryError):
            return None
        except PermissionError as exc:
            raise ProcPermissionError(f"cannot read {path}: permission denied") from exc
        if not raw and self.process_state(pid) in (None, "Z"):
            return None  # a zombie's environ reads empty: gone, not "every variable unset"
        return parse_environ(raw, names)

    def describe(self, pid: int) -> str:
        cmd = self.command_line(pid)
        return f"pid {pid} ({redact_command_line(cmd)[:200]})" if cmd else f"pid {pid}"


def unit_processes(procs: PortOwnerReader, control_group: str, main_pid: int) -> set[int]:
    """The unit's processes: its cgroup's; when that cannot be read or lacks the main PID, the
    main PID and its descendants as well."""
    pids = procs.cgroup_pids(control_group)
    if pids is None or main_pid not in pids:
        pids = (pids or set()) | {main_pid} | procs.descendants(main_pid)
    return pids


@dataclasses.dataclass(frozen=True)
class PortObservation:
    bound: bool
    owned: bool
    detail: str
    owner: int | None = None  # the unit process holding the listening socket


def observe_port(procs: ProcReader, port: int, unit_pids: set[int]) -> PortObservation:
    """Is the port listening, and does a process of the unit own the listening socket?"""
    listening = procs.listening_inodes(port)
    if not listening:
        return PortObservation(False, False, f"nothing listens on port {port} yet")
    for pid in sorted(unit_pids):
        if procs.socket_inodes(pid) & listening:
            return PortObservation(True, True, f"port {port} is bound by unit process {pid}", pid)
    others = [pid for pid in procs.all_pids() if pid not in unit_pids]
    foreign, _ = socket_holders(procs, listening, others)
    holder = (
        ", ".join(map(procs.describe, foreign)) if foreign else "a process this module cannot see"
    )
    return PortObservation(
        True, False, f"port {port} is held by a process outside the unit: {holder}"
    )
