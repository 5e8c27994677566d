# Which process owns a TCP listening port, and which processes belong to a systemd unit, read
# from /proc (net/tcp{,6}, PID/fd socket links, PID/stat, PID/cgroup) and /sys/fs/cgroup.
# Used by library/sglang_ready.py through module_utils/sglang_server_process.py (the port must be
# bound by the restarted unit) and by roles/sglang_host/library/sglang_host_port_check.py (the port
# must be free or the unit's).
# Runs on the target host inside the module: standard library only.
from __future__ import annotations

import os
from collections.abc import Iterable


class ProcPermissionError(Exception):
    """A process's /proc entry exists but may not be read (needs root; CAP_SYS_PTRACE in podman)."""


def parse_proc_net_tcp(text: str, port: int) -> set[int]:
    """Inodes of LISTEN sockets on the given local port in /proc/net/tcp{,6} text."""
    inodes: set[int] = set()
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10:
            continue
        local, state, inode = fields[1], fields[3], fields[9]
        _, _, port_hex = local.rpartition(":")
        try:
            if state == "0A" and int(port_hex, 16) == port and int(inode) > 0:
                inodes.add(int(inode))
        except ValueError:
            continue
    return inodes


def unit_of(cgroup_text: str) -> str:
    """The innermost systemd unit (.service or .scope) in /proc/PID/cgroup text, or ''."""
    for line in cgroup_text.splitlines():
        path = line.split(":", 2)[-1]
        for part in reversed(path.split("/")):
            if part.endswith((".service", ".scope")):
                return part
    return ""


class ProcReader:
    """Process, socket and cgroup facts from /proc and /sys/fs/cgroup (roots injectable)."""

    def __init__(self, proc_root: str = "/proc", cgroup_root: str = "/sys/fs/cgroup") -> None:
        self.proc_root = proc_root
        self.cgroup_root = cgroup_root

    def _stat_fields(self, pid: int) -> tuple[str, int] | None:
        try:
            with open(os.path.join(self.proc_root, str(pid), "stat")) as fh:
                text = fh.read()
        except (FileNotFoundError, ProcessLookupError, NotADirectoryError):
            return None
        # comm may contain spaces and parentheses: the state follows the LAST ')'.
        rest = text.rpartition(")")[2].split()
        if len(rest) < 2:
            return None
        return rest[0], int(rest[1]) if rest[1].isdigit() else 0

    def process_state(self, pid: int) -> str | None:
        """The one-letter state (R, S, D, Z, ...), or None when no such process exists."""
        if pid <= 0:
            return None
        fields = self._stat_fields(pid)
        return fields[0] if fields else None

    def all_pids(self) -> list[int]:
        try:
            names = os.listdir(self.proc_root)
        except OSError:
            return []
        return [int(n) for n in names if n.isdigit()]

    def descendants(self, pid: int) -> set[int]:
        children: dict[int, list[int]] = {}
        for other in self.all_pids():
            fields = self._stat_fields(other)
            if fields:
                children.setdefault(fields[1], []).append(other)
        found: set[int] = set()
        todo = [pid]
        while todo:
            for child in children.get(todo.pop(), []):
                if child not in found:
                    found.add(child)
                    todo.append(child)
        return found

    def listening_inodes(self, port: int) -> set[int]:
        inodes: set[int] = set()
        for name in ("tcp", "tcp6"):
            try:
                with open(os.path.join(self.proc_root, "net", name)) as fh:
                    inodes |= parse_proc_net_tcp(fh.read(), port)
            except FileNotFoundError:
                continue
        return inodes

    def socket_inodes(self, pid: int) -> set[int]:
        """Inodes of the sockets the process holds open; empty when it is gone."""
        fd_dir = os.path.join(self.proc_root, str(pid), "fd")
        try:
            names = os.listdir(fd_dir)
        except PermissionError as exc:
            raise ProcPermissionError(f"cannot read {fd_dir}: permission denied") from exc
        except OSError:
            return set()  # exited meanwhile
        inodes: set[int] = set()
        for name in names:
            try:
                target = os.readlink(os.path.join(fd_dir, name))
            except PermissionError as exc:
                raise ProcPermissionError(f"cannot read {fd_dir}: permission denied") from exc
            except OSError:
                continue  # closed while we looked (the listing's own descriptor, for one)
            if target.startswith("socket:[") and target.endswith("]") and target[8:-1].isdigit():
                inodes.add(int(target[8:-1]))
        return inodes

    def cgroup_pids(self, control_group: str) -> set[int] | None:
        """PIDs in the unit's cgroup and its sub-cgroups; None when it cannot be read."""
        if not control_group:
            return None
        relative = control_group.lstrip("/")
        # cgroup v2, the v2 part of a hybrid layout, then v1's named 'systemd' hierarchy.
        for hierarchy in ("", "unified", "systemd"):
            base = os.path.join(self.cgroup_root, hierarchy, relative)
            if not os.path.isfile(os.path.join(base, "cgroup.procs")):
                continue
            pids: set[int] = set()
            try:
                for dirpath, _, filenames in os.walk(base):
                    if "cgroup.procs" in filenames:
                        with open(os.path.join(dirpath, "cgroup.procs")) as fh:
                            pids |= {int(x) for x in fh.read().split() if x.isdigit()}
            except OSError:
                return None
            return pids
        return None

    def unit(self, pid: int) -> str:
        """The systemd unit the process runs in (its /proc/PID/cgroup), or ''."""
        try:
            with open(os.path.join(self.proc_root, str(pid), "cgroup")) as fh:
                return unit_of(fh.read())
        except OSError:
            return ""

    def command_line(self, pid: int) -> str:
        """The process's arguments joined by spaces (the first 4 KiB), or '' when unreadable."""
        try:
            with open(os.path.join(self.proc_root, str(pid), "cmdline"), "rb") as fh:
                raw = fh.read(4096)
        except OSError:
            return ""
        return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()


def socket_holders(
    procs: ProcReader, inodes: set[int], pids: Iterable[int]
) -> tuple[list[int], bool]:
    """The pids (in the order given) holding one of the socket inodes, and whether the
    descriptors of some pid could not be read, so that it may hold one unseen."""
    found: list[int] = []
    unreadable = False
    for pid in pids:
        try:
            if procs.socket_inodes(pid) & inodes:
                found.append(pid)
        except ProcPermissionError:
            unreadable = True
    return found, unreadable
