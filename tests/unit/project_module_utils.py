"""The repo's module_utils/ as `ansible.module_utils.sglang_*`, for modules loaded by file path.

ansible.cfg (module_utils = module_utils) makes AnsiballZ ship them with a module; in the tests a
module is executed from its file, so its `from ansible.module_utils.sglang_... import` needs the
folder on the package's search path.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import ansible.module_utils

MODULE_UTILS = Path(__file__).resolve().parents[2] / "module_utils"


def use_project_module_utils() -> None:
    path = str(MODULE_UTILS)
    if path not in ansible.module_utils.__path__:
        ansible.module_utils.__path__.append(path)


def module_utils(name: str) -> ModuleType:
    """ansible.module_utils.<name>, from the repo's module_utils/."""
    use_project_module_utils()
    return importlib.import_module(f"ansible.module_utils.{name}")
