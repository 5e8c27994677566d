#!/usr/bin/python
# Ansible wants DOCUMENTATION, EXAMPLES and RETURN before the imports.
# ruff: noqa: E402
from __future__ import annotations

DOCUMENTATION = r"""
module: sglang_host_disk_check
short_description: Checks free disk for a set of paths, adding up paths on one filesystem
description:
  - Read-only. Each requirement names a path (which need not exist yet - its nearest existing parent
    decides the filesystem), the MiB that must stay free there, and what the space is for.
  - Requirements on one filesystem add up. Space counts as free when an unprivileged user could use
    it (statvfs f_bavail), like df.
  - Never fails on too little space; returns C(problems) naming found and needed MiB per filesystem.
options:
  requirements:
    description: What must fit where.
    type: list
    elements: dict
    required: true
    suboptions:
      path: {description: Path whose filesystem is checked., type: path, required: true}
      min_free_mb: {description: MiB that must be free., type: int, required: true}
      purpose: {description: What the space is for (for messages)., type: str, default: ""}
      only_if_missing:
        description: Count it only while the path does not exist (the space an install takes).
        type: bool
        default: false
attributes:
  check_mode: {support: full}
"""

EXAMPLES = r"""
- name: Check free disk
  sglang_host_disk_check:
    requirements:
      - path: /opt/sglang/venv
        min_free_mb: 30720
        purpose: SGLang virtual environment
        only_if_missing: true
      - {path: /srv/models/target, min_free_mb: 10240, purpose: target model directory}
"""

RETURN = r"""
filesystems:
  description: Per filesystem - mount, paths, free_mb, needed_mb, purposes.
  type: list
  returned: always
problems:
  description: One sentence per filesystem with too little free space (empty when all fit).
  type: list
  elements: str
  returned: always
"""

import os
from typing import Any

from ansible.module_utils.basic import AnsibleModule

MIB = 1024 * 1024


def existing_parent(path: str) -> str:
    path = os.path.abspath(path)
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def mount_point(path: str) -> str:
    """The top of the filesystem holding path (where the device id changes)."""
    path = os.path.realpath(path)
    dev = os.stat(path).st_dev
    while path != "/":
        parent = os.path.dirname(path)
        if os.stat(parent).st_dev != dev:
            break
        path = parent
    return path


def check(requirements: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    filesystems: dict[int, dict[str, Any]] = {}
    for req in requirements:
        if req.get("only_if_missing") and os.path.exists(req["path"]):
            continue
        anchor = existing_parent(req["path"])
        dev = os.stat(anchor).st_dev
        if dev not in filesystems:
            st = os.statvfs(anchor)
            filesystems[dev] = {
                "mount": mount_point(anchor),
                "free_mb": st.f_bavail * st.f_frsize // MIB,
                "needed_mb": 0,
                "paths": [],
                "purposes": [],
            }
        fs = filesystems[dev]
        fs["needed_mb"] += int(req["min_free_mb"])
        fs["paths"].append(req["path"])
        purpose = req.get("purpose") or req["path"]
        fs["purposes"].append(f"{purpose} {int(req['min_free_mb'])} MiB")
    problems = [
        f"free disk on {fs['mount']} (holding {', '.join(fs['paths'])}): found {fs['free_mb']} MiB,"
        f" need {fs['needed_mb']} MiB ({'; '.join(fs['purposes'])}) (sglang_host_free_disk)."
        for fs in filesystems.values()
        if fs["free_mb"] < fs["needed_mb"]
    ]
    return list(filesystems.values()), problems


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "requirements": {
                "type": "list",
                "elements": "dict",
                "required": True,
                "options": {
                    "path": {"type": "path", "required": True},
                    "min_free_mb": {"type": "int", "required": True},
                    "purpose": {"type": "str", "default": ""},
                    "only_if_missing": {"type": "bool", "default": False},
                },
            }
        },
        supports_check_mode=True,
    )
    filesystems, problems = check(module.params["requirements"])
    module.exit_json(changed=False, filesystems=filesystems, problems=problems)


if __name__ == "__main__":
    main()
