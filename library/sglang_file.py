#!/usr/bin/python
# Writes a small text file rendered on the controller, in one module call. The template and copy
# actions stat the file, make a remote temporary directory, transfer the file and run copy: four
# or five round trips, over a second per sweep point on the test hosts' podman connection.
# Ansible wants DOCUMENTATION, EXAMPLES and RETURN before the imports.
# ruff: noqa: E402
from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_file
short_description: Write a small text file whose content is given, in one round trip
description:
  - Writes O(content) to O(path) when the file is missing or holds something else, atomically (a
    temporary file in the same directory, then a rename), and sets owner, group and mode like
    M(ansible.builtin.copy). An unchanged file is left alone (its attributes are still enforced).
  - The content travels in the module's arguments, so the whole task is one module execution;
    meant for unit files and other small generated files (render them with the
    C(ansible.builtin.template) lookup), not for large or binary files.
  - The parent directory must exist.
version_added: "0.1.0"
author:
  - sglang-specbench project
options:
  path:
    description: The file to write.
    type: path
    required: true
  content:
    description: The whole content of the file (text, written as UTF-8).
    type: str
    required: true
extends_documentation_fragment:
  - ansible.builtin.files
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
"""

EXAMPLES = r"""
- name: Template the systemd unit
  sglang_file:
    path: /etc/systemd/system/sglang.service
    content: "{{ lookup('ansible.builtin.template', 'sglang.service.j2') }}"
    owner: root
    group: root
    mode: "0644"
  notify: sglang_server restart
"""

RETURN = r"""
path:
  description: The file written (or that would be written in check mode).
  returned: always
  type: str
  sample: /etc/systemd/system/sglang.service
content_changed:
  description: Whether the content was (or in check mode would be) written.
  returned: always
  type: bool
  sample: true
"""

import os
import tempfile
from typing import Any

from ansible.module_utils.basic import AnsibleModule


def current(path: str) -> str | None:
    """The file's text now; None when it does not exist."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            return f.read()
    except FileNotFoundError:
        return None


def write_atomically(module: AnsibleModule, path: str, content: str) -> None:
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        module.fail_json(msg=f"path={path}: its directory {directory} does not exist")
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(content)
        module.atomic_move(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path", "required": True},
            "content": {"type": "str", "required": True},
        },
        add_file_common_args=True,
        supports_check_mode=True,
    )
    path: str = module.params["path"]
    content: str = module.params["content"]
    if os.path.isdir(path):
        module.fail_json(msg=f"path={path}: is a directory")
    before = current(path)
    content_changed = before != content
    result: dict[str, Any] = {"path": path, "content_changed": content_changed}
    if module._diff:
        result["diff"] = {
            "before": before or "",
            "after": content,
            "before_header": path if before is not None else "(absent)",
            "after_header": path,
        }
    if content_changed and not module.check_mode:
        write_atomically(module, path, content)
    file_args = module.load_file_common_arguments(module.params)
    if module.check_mode and before is None:
        changed = True  # no file yet to compare attributes with
    else:
        changed = module.set_fs_attributes_if_different(file_args, content_changed)
    module.exit_json(changed=changed, **result)


if __name__ == "__main__":
    main()
