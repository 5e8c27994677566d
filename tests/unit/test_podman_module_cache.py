"""The test hosts' connection plugin shares one AnsiballZ cache across a run's ansible processes
(tests/podman/connection/podman.py share_module_cache): each process's cache becomes a link to the
run's directory, a process that built a cache of its own first keeps it, and Ansible's clean-up of
a process's temporary directory leaves the shared one whole."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def plugin() -> ModuleType:
    sys.path.insert(0, str(ROOT / "collections"))
    try:
        spec = importlib.util.spec_from_file_location(
            "podman_connection", ROOT / "tests/podman/connection/podman.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "collections"))
    return module


def test_two_processes_build_into_one_directory(plugin: ModuleType, tmp_path: Path) -> None:
    shared = tmp_path / "run" / "ansiballz"
    first, second = tmp_path / "ansible-local-1", tmp_path / "ansible-local-2"
    first.mkdir()
    second.mkdir()
    assert plugin.share_module_cache(str(first), str(shared))
    assert plugin.share_module_cache(str(second), str(shared))
    (first / "ansiballz_cache" / "ansible.modules.file-ZIP_DEFLATED-none").write_text("zip")
    built = second / "ansiballz_cache" / "ansible.modules.file-ZIP_DEFLATED-none"
    assert built.read_text() == "zip"
    # a second worker of the same process finds the link made: still shared
    assert plugin.share_module_cache(str(first), str(shared))
    # Ansible removes a process's temporary directory at its exit: the link goes, the cache stays
    shutil.rmtree(first)
    assert (shared / "ansible.modules.file-ZIP_DEFLATED-none").read_text() == "zip"


def test_nothing_is_shared_without_a_directory(plugin: ModuleType, tmp_path: Path) -> None:
    assert not plugin.share_module_cache(str(tmp_path), None)
    assert not plugin.share_module_cache(str(tmp_path), "")
    assert not (tmp_path / "ansiballz_cache").exists()


def test_a_cache_built_first_is_kept(plugin: ModuleType, tmp_path: Path) -> None:
    own = tmp_path / "ansible-local-1" / "ansiballz_cache"
    own.mkdir(parents=True)
    (own / "ansible.modules.ping-ZIP_DEFLATED-none").write_text("own")
    assert not plugin.share_module_cache(str(own.parent), str(tmp_path / "shared"))
    assert not own.is_symlink()
    assert (own / "ansible.modules.ping-ZIP_DEFLATED-none").read_text() == "own"
