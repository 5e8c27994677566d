"""Loads roles/sglang_host's filter plugin and modules and the test fakes by path (not packages)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

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
