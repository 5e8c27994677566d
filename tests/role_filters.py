"""The sglang_server role's filter plugin and dialect data, loaded for tests (unit and releases)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import yaml

ROLE = Path(__file__).resolve().parents[1] / "roles" / "sglang_server"
TABLE: dict[str, Any] = yaml.safe_load((ROLE / "vars" / "dialects.yml").read_text())


def load_filters() -> Any:
    spec = importlib.util.spec_from_file_location(
        "sglang_server_filters", ROLE / "filter_plugins" / "sglang_server.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
