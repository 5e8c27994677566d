"""Import-only stand-ins for modules the CPU engine imports but never calls. On a CPU with AMX too:
SGLang 0.5.23 takes its AMX path only where sgl_kernel registers the torch op convert_weight_packed
(srt/utils/common.py cpu_has_amx_support), and a stand-in registers none.

TEST ONLY, never installed on a GPU host. PyPI's torchvision does not import beside the local CPU
torch, and sgl_kernel on PyPI is a CUDA build; SGLang imports both at start-up. Every attribute of a
stand-in is importable; calling one raises, so a code path that really needs them fails loudly
instead of computing something wrong.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any


class StandinCalled(RuntimeError):
    pass


class _Placeholder:
    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> _Placeholder:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Placeholder(f"{self._name}.{attr}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise StandinCalled(
            f"test stand-in {self._name} was called: this CPU needs the real module"
        )

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        return (object,)


class _Module(types.ModuleType):
    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Placeholder(f"{self.__name__}.{attr}")


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, root: str) -> None:
        self.root = root

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname.startswith(self.root + "."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _Module(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


def install(package: types.ModuleType) -> None:
    """Make `package` (a stand-in's __init__) and all its submodules stand-ins."""
    package.__class__ = _Module
    if not any(isinstance(f, _Finder) and f.root == package.__name__ for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder(package.__name__))
