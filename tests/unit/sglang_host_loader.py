"""Loads roles/sglang_host's filter plugin and modules and the test fakes by path (not packages)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from ansible.module_utils.testing import patch_module_args
from project_module_utils import use_project_module_utils

ROOT = Path(__file__).resolve().parents[2]
ROLE = ROOT / "roles" / "sglang_host"
FAKES = ROOT / "tests" / "fakes"
FAKE_NVIDIA_SMI = FAKES / "nvidia-smi"


def load(name: str, path: Path) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    use_project_module_utils()
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    spec = importlib.util.spec_from_loader(name, loader)
    assert spec
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


def filters() -> ModuleType:
    return load("sglang_host_filters", ROLE / "filter_plugins" / "sglang_host.py")


def library(name: str) -> ModuleType:
    return load(name, ROLE / "library" / f"{name}.py")


def make_model_dir() -> ModuleType:
    return load("make_model_dir", FAKES / "make_model_dir.py")


class ModuleExit(Exception):
    def __init__(self, result: dict[str, Any], failed: bool) -> None:
        self.result = result
        self.failed = failed


def run_module(
    module: ModuleType, args: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, Any], bool]:
    """A loaded module's main() with `args`: its result and whether it failed."""

    def exit_json(_self: Any, **result: Any) -> None:
        raise ModuleExit(result, False)

    def fail_json(_self: Any, **result: Any) -> None:
        raise ModuleExit(result, True)

    monkeypatch.setattr(module.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(module.AnsibleModule, "fail_json", fail_json)
    with patch_module_args(args), pytest.raises(ModuleExit) as caught:
        module.main()
    return caught.value.result, caught.value.failed
