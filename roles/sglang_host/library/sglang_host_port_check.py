#!/usr/bin/python
# Ansible wants DOCUMENTATION, EXAMPLES and RETURN before the imports.
# ruff: noqa: E402
from __future__ import annotations

DOCUMENTATION = r"""
module: sglang_host_port_check
short_description: Checks that a TCP port is free or held only by the given systemd unit
description:
  - Read-only. Finds LISTEN sockets on the port in /proc/net/tcp and tcp6, the processes holding
    them (/proc/PID/fd, which needs root or CAP_SYS_PTRACE in a container) and their systemd unit
    (/proc/PID/cgroup).
  - SGLang binds its port only after loading the weights, so a port taken by something else fails
    only after minutes of loading; this check says so before anything is installed.
  - Never fails on a taken port; returns C(problems) naming the holders and what is needed.
options:
  port: {description: TCP port., type: int, required: true}
  unit:
    description: The systemd unit allowed to hold it (with or without .service).
    type: str
    required: true
attributes:
  check_mode: {support: full}
"""

EXAMPLES = r"""
- name: Check the port
  sglang_host_port_check:
    port: 30000
    unit: sglang
"""

RETURN = r"""
holders:
  description: Processes listening on the port - pid, unit, command.
  type: list
  returned: always
problems:
  description: Empty when the port is free or held only by the unit.
  type: list
  elements: str
  returned: always
"""

import os
from typing import Any

from ansible.module_utils.basic import AnsibleModule


def listening_inodes(tcp_text: str, port: int) -> set[int]:
    """Inodes of LISTEN (state 0A) sockets on the local port in /proc/net/tcp{,6} text."""
    inodes: set[int] = set()
    for line in tcp_text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10 or fields[3] != "0A":
            continue
        try:
            if int(fields[1].rpartition(":")[2], 16) == port and int(fields[9]) > 0:
                inodes.add(int(fields[9]))
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


def _read(path: str, binary: bool = False) -> Any:
    with open(path, "rb" if binary else "r") as fh:
        return fh.read()


def holders(port: int, proc: str = "/proc") -> tuple[list[dict[str, Any]], bool]:
    """Processes listening on the port, and whether some /proc/PID/fd could not be read."""
    inodes: set[int] = set()
    for name in ("tcp", "tcp6"):
        try:
            inodes |= listening_inodes(_read(os.path.join(proc, "net", name)), port)
        except FileNotFoundError:
            continue
    found: list[dict[str, Any]] = []
    unreadable = False
    if not inodes:
        return found, unreadable
    for pid in sorted(int(n) for n in os.listdir(proc) if n.isdigit()):
        fd_dir = os.path.join(proc, str(pid), "fd")
        try:
            fds = os.listdir(fd_dir)
        except PermissionError:
            unreadable = True
            continue
        except OSError:
            continue  # exited meanwhile
        targets: list[str] = []
        for fd in fds:
            try:
                targets.append(os.readlink(os.path.join(fd_dir, fd)))
            except PermissionError:
                unreadable = True
            except OSError:
                continue  # closed meanwhile (the listing's own descriptor, for one)
        if not any(t.startswith("socket:[") and int(t[8:-1]) in inodes for t in targets):
            continue
        try:
            unit = unit_of(_read(os.path.join(proc, str(pid), "cgroup")))
            cmd = _read(os.path.join(proc, str(pid), "cmdline"), binary=True)
            command = cmd.replace(b"\0", b" ").decode("utf-8", "replace").strip()[:160]
        except OSError:
            unit, command = "", ""
        found.append({"pid": pid, "unit": unit, "command": command})
    if not found:
        unreadable = True  # something listens, but no process we can see holds it
    return found, unreadable


def problems_for(port: int, unit: str, found: list[dict[str, Any]], unreadable: bool) -> list[str]:
    own = unit if unit.endswith(".service") else f"{unit}.service"
    foreign = [h for h in found if h["unit"] != own]
    if foreign:
        who = "; ".join(
            f"pid {h['pid']} ({h['command'] or '?'}) in {h['unit'] or 'no unit'}" for h in foreign
        )
        return [f"port {port}: held by {who}, need it free or held by {own} (sglang_server_port)."]
    if unreadable and not found:
        return [
            f"port {port}: something listens on it but its process cannot be seen (need root and,"
            f" in a container, CAP_SYS_PTRACE); need it free or held by {own} (sglang_server_port)."
        ]
    return []


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "port": {"type": "int", "required": True},
            "unit": {"type": "str", "required": True},
        },
        supports_check_mode=True,
    )
    port, unit = module.params["port"], module.params["unit"]
    found, unreadable = holders(port)
    module.exit_json(
        changed=False, holders=found, problems=problems_for(port, unit, found, unreadable)
    )


if __name__ == "__main__":
    main()
