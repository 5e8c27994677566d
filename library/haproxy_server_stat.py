#!/usr/bin/python
# Reads one server's line of HAProxy's `show stat` over its runtime API socket: the read that
# community.general.haproxy lacks (it has no check mode, changes state on every call and passes a
# backend or server HAProxy does not have by doing nothing). Stdlib only.
# Ansible wants DOCUMENTATION, EXAMPLES and RETURN before the imports.
# ruff: noqa: E402
from __future__ import annotations

DOCUMENTATION = r"""
---
module: haproxy_server_stat
short_description: Read one HAProxy server's state and counters from the runtime API
description:
  - Read-only. Sends C(show stat) to HAProxy's runtime API socket and returns the line of
    O(backend)/O(server) - its status (C(UP), C(DRAIN), C(MAINT), ...), the sessions in flight
    (C(scur)) and the sessions it was sent in total (C(stot)).
  - Fails, naming the bad value, when the socket does not exist or does not answer, when HAProxy has
    no such backend (the message lists those it has) or the backend has no such server (it lists its
    servers). A preflight runs it before anything changes.
  - Runs on the load balancer's host (C(delegate_to)); never reports C(changed).
version_added: "0.1.0"
author:
  - sglang-specbench project
options:
  socket:
    description: HAProxy's runtime API socket (C(stats socket) in haproxy.cfg).
    type: path
    default: /run/haproxy/admin.sock
  backend:
    description: The backend (C(pxname)) the server is in.
    type: str
    required: true
  server:
    description: The server's name in that backend (C(svname)).
    type: str
    required: true
  timeout:
    description: Seconds to wait for HAProxy's answer.
    type: float
    default: 5
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
seealso:
  - module: community.general.haproxy
    description: Drains, disables and enables the server; this module only reads it.
"""

EXAMPLES = r"""
- name: Check the backend and the server exist before a roll-out
  haproxy_server_stat:
    backend: sglang
    server: gpu-01
  delegate_to: lb-01

- name: Read the sessions it was sent so far
  haproxy_server_stat:
    socket: /run/haproxy/admin.sock
    backend: sglang
    server: gpu-01
  delegate_to: lb-01
  register: gpu01_stat
"""

RETURN = r"""
status:
  description: The server's status as HAProxy shows it.
  type: str
  returned: success
  sample: UP
scur:
  description: Sessions in flight to the server now.
  type: int
  returned: success
  sample: 0
stot:
  description: Sessions sent to the server since HAProxy started.
  type: int
  returned: success
  sample: 1234
weight:
  description: The server's weight.
  type: int
  returned: success
stat:
  description: The server's whole C(show stat) line, as HAProxy names its columns.
  type: dict
  returned: success
"""

import csv
import socket
from typing import Any

from ansible.module_utils.basic import AnsibleModule


def show_stat(path: str, timeout: float) -> list[dict[str, str]]:
    """Every line of `show stat`, by HAProxy's column names."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(timeout)
        client.connect(path)
        client.sendall(b"show stat\n")
        chunks = []
        while chunk := client.recv(65536):
            chunks.append(chunk)
    text = b"".join(chunks).decode("utf-8", "replace").lstrip("# ")
    return list(csv.DictReader(text.splitlines()))


def server_line(rows: list[dict[str, str]], backend: str, server: str) -> dict[str, str] | str:
    """The server's line, or a sentence naming what HAProxy does not have and what it has."""
    backends = sorted({r["pxname"] for r in rows if r.get("svname") == "BACKEND"})
    if backend not in backends:
        return f"HAProxy has no backend {backend!r} (it has: {', '.join(backends) or 'none'})"
    servers = [
        r["svname"]
        for r in rows
        if r.get("pxname") == backend and r.get("svname") not in ("FRONTEND", "BACKEND")
    ]
    for r in rows:
        if r.get("pxname") == backend and r.get("svname") == server:
            return r
    has = ", ".join(servers) or "none"
    return f"HAProxy's backend {backend!r} has no server {server!r} (it has: {has})"


def _int(value: str | None) -> int:
    return int(value) if value and value.isdigit() else 0


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "socket": {"type": "path", "default": "/run/haproxy/admin.sock"},
            "backend": {"type": "str", "required": True},
            "server": {"type": "str", "required": True},
            "timeout": {"type": "float", "default": 5.0},
        },
        supports_check_mode=True,
    )
    p: dict[str, Any] = module.params
    try:
        rows = show_stat(p["socket"], p["timeout"])
    except OSError as e:
        module.fail_json(
            msg=f"HAProxy's runtime API socket {p['socket']} does not answer: {e}"
            " (its `stats socket ... level admin` line in haproxy.cfg, and the balancer host)"
        )
    line = server_line(rows, p["backend"], p["server"])
    if isinstance(line, str):
        module.fail_json(msg=line)
    module.exit_json(
        changed=False,
        status=line.get("status", ""),
        scur=_int(line.get("scur")),
        stot=_int(line.get("stot")),
        weight=_int(line.get("weight")),
        stat=dict(line),
    )


if __name__ == "__main__":
    main()
