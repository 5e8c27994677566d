#!/usr/bin/python
# The /proc reading is shared with library/sglang_ready.py: module_utils/sglang_port_owner.py.
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

from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_port_owner import ProcReader, socket_holders
from ansible.module_utils.sglang_secrets import redact_command_line


def holders(port: int, proc: str = "/proc") -> tuple[list[dict[str, Any]], bool]:
    """Processes listening on the port, and whether some /proc/PID/fd could not be read."""
    procs = ProcReader(proc_root=proc)
    inodes = procs.listening_inodes(port)
    if not inodes:
        return [], False
    pids, unreadable = socket_holders(procs, inodes, sorted(procs.all_pids()))
    # a stray server's command line may carry its --api-key: hidden before it is shown anywhere
    found = [
        {
            "pid": pid,
            "unit": procs.unit(pid),
            "command": redact_command_line(procs.command_line(pid))[:160],
        }
        for pid in pids
    ]
    # Something listens but no process we can see holds it: unreadable, whatever the fds said.
    return found, unreadable or not found


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
