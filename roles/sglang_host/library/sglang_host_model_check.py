#!/usr/bin/python
# Ansible wants DOCUMENTATION, EXAMPLES and RETURN before the imports.
# ruff: noqa: E402
from __future__ import annotations

DOCUMENTATION = r"""
module: sglang_host_model_check
short_description: Checks that model directories hold a config and every safetensors weight file
description:
  - Read-only. For each directory - it exists, has a parseable config.json, and has its weights
    (model.safetensors.index.json listing shards that are all present, or *.safetensors files).
  - Each weight file must be non-empty and as long as its own safetensors header says, which also
    catches files cut short by an interrupted copy. Only the headers are read, never the tensors.
  - Never fails on a bad directory; returns C(problems), one sentence per defect naming what was
    found and what is needed, so a preflight can report every defect of a host at once.
options:
  models:
    description: Directories to check.
    type: list
    elements: dict
    required: true
    suboptions:
      path: {description: The model directory., type: path, required: true}
      label: {description: What the directory is, for messages (e.g. target model)., type: str}
attributes:
  check_mode: {support: full}
"""

EXAMPLES = r"""
- name: Check the model directories
  sglang_host_model_check:
    models:
      - {path: /srv/models/target, label: target model}
      - {path: /srv/models/drafter, label: drafter}
  register: models
"""

RETURN = r"""
models:
  description: Per directory - path, label, exists, config, weights (file names), bytes, problems.
  type: list
  returned: always
problems:
  description: Every defect found, one sentence each (empty when all directories are usable).
  type: list
  elements: str
  returned: always
"""

import json
import os
import struct
from typing import Any

from ansible.module_utils.basic import AnsibleModule

INDEX = "model.safetensors.index.json"
# A safetensors header is JSON of at most 100 MB (the format's own limit).
MAX_HEADER = 100 * 1024 * 1024


def safetensors_problem(path: str) -> str | None:
    """Why this file is not a complete safetensors file, or None when it is."""
    try:
        size = os.path.getsize(path)
    except FileNotFoundError:
        return "is missing"
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if size == 0:
        return "is empty (0 bytes)"
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                return f"is {size} bytes, too short for a safetensors header"
            (length,) = struct.unpack("<Q", head)
            if length > MAX_HEADER or 8 + length > size:
                return f"is {size} bytes but its header claims {length} header bytes (truncated?)"
            header = json.loads(fh.read(length))
    except (OSError, ValueError) as exc:
        return f"has no readable safetensors header ({exc})"
    if not isinstance(header, dict):
        return "has a safetensors header that is not a JSON object"
    end = 0
    for name, tensor in header.items():
        if name == "__metadata__" or not isinstance(tensor, dict):
            continue
        offsets = tensor.get("data_offsets") or [0, 0]
        end = max(end, int(offsets[1]))
    expected = 8 + length + end
    if size != expected:
        return f"is {size} bytes, its header needs {expected} (truncated or damaged copy)"
    return None


def check_model(path: str, label: str) -> dict[str, Any]:
    what = f"{label} {path}" if label else path
    result: dict[str, Any] = {
        "path": path,
        "label": label,
        "exists": os.path.isdir(path),
        "config": False,
        "weights": [],
        "bytes": 0,
        "problems": [],
    }
    problems: list[str] = result["problems"]
    if not result["exists"]:
        found = "a file" if os.path.exists(path) else "nothing"
        problems.append(f"{what}: found {found}, need a model directory.")
        return result
    config = os.path.join(path, "config.json")
    try:
        with open(config) as fh:
            json.load(fh)
        result["config"] = True
    except FileNotFoundError:
        problems.append(f"{what}: config.json not found, need the model's config.json.")
    except (OSError, ValueError) as exc:
        problems.append(f"{what}: config.json is not readable JSON ({exc}).")

    index_path = os.path.join(path, INDEX)
    if os.path.exists(index_path):
        try:
            with open(index_path) as fh:
                index = json.load(fh)
            shards = sorted(set((index.get("weight_map") or {}).values()))
        except (OSError, ValueError, AttributeError) as exc:
            problems.append(f"{what}: {INDEX} is not readable JSON with a weight_map ({exc}).")
            return result
        if not shards:
            problems.append(f"{what}: {INDEX} lists no shard files, need at least one.")
            return result
        source = f"listed in {INDEX}"
    else:
        shards = sorted(n for n in os.listdir(path) if n.endswith(".safetensors"))
        if not shards:
            problems.append(
                f"{what}: found no *.safetensors weights and no {INDEX}, need the weight files."
            )
            return result
        source = "in the directory"
    result["weights"] = shards
    bad: list[str] = []
    for shard in shards:
        shard_path = os.path.join(path, shard)
        problem = safetensors_problem(shard_path)
        if problem:
            bad.append(f"{shard} {problem}")
        else:
            result["bytes"] += os.path.getsize(shard_path)
    if bad:
        problems.append(
            f"{what}: {len(shards) - len(bad)} of {len(shards)} weight files {source} are usable,"
            f" need all {len(shards)}: " + "; ".join(bad) + "."
        )
    return result


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "models": {
                "type": "list",
                "elements": "dict",
                "required": True,
                "options": {
                    "path": {"type": "path", "required": True},
                    "label": {"type": "str", "default": ""},
                },
            }
        },
        supports_check_mode=True,
    )
    models = [check_model(m["path"], m["label"] or "") for m in module.params["models"]]
    problems = [p for m in models for p in m["problems"]]
    module.exit_json(changed=False, models=models, problems=problems)


if __name__ == "__main__":
    main()
