"""The test hosts' connection plugin (tests/podman/connection/podman.py) makes a run's modules
cheaper. share_module_cache: one AnsiballZ cache across a run's ansible processes, each process's
cache a link to the run's directory; a process that built a cache of its own first keeps it, and
Ansible's clean-up of a process's temporary directory leaves the shared one whole.
compile_module_payloads: the payloads carry bytecode that zipimport runs as it is."""

from __future__ import annotations

import base64
import importlib.util
import io
import shutil
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def plugin() -> Iterator[ModuleType]:
    from ansible.executor import module_common

    init = module_common._CachedModule.__init__
    sys.path.insert(0, str(ROOT / "collections"))
    patch = pytest.MonkeyPatch()
    patch.setenv("ANSIBLE_TEST_MODULE_BYTECODE", "0")  # not at import: the test below does it
    try:
        spec = importlib.util.spec_from_file_location(
            "podman_connection", ROOT / "tests/podman/connection/podman.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "collections"))
        patch.undo()
    assert module_common._CachedModule.__init__ is init
    yield module
    module_common._CachedModule.__init__ = init  # the test patched Ansible in this process


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


def _payload(files: dict[str, str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return base64.b64encode(out.getvalue())


def test_a_payload_runs_its_bytecode(plugin: ModuleType, tmp_path: Path) -> None:
    data = plugin.with_bytecode(
        _payload({"pkg/__init__.py": "", "pkg/mod.py": "VALUE = 6 * 7\n", "bad.py": "def (:\n"})
    )
    src = zipfile.ZipFile(io.BytesIO(base64.b64decode(data)))
    assert set(src.namelist()) == {
        "pkg/__init__.py",
        "pkg/__init__.pyc",
        "pkg/mod.py",
        "pkg/mod.pyc",
        "bad.py",
    }
    # the sources replaced by ones that fail: an import that still works ran the bytecode
    archive = tmp_path / "payload.zip"
    with zipfile.ZipFile(archive, "w") as dst:
        for info in src.infolist():
            dst.writestr(
                info, b"raise SystemExit(1)\n" if info.filename.endswith(".py") else src.read(info)
            )
    sys.path.insert(0, str(archive))
    try:
        mod = importlib.import_module("pkg.mod")
        assert mod.VALUE == 42
    finally:
        sys.path.remove(str(archive))
        for name in ("pkg.mod", "pkg"):
            sys.modules.pop(name, None)


def test_ansible_builds_its_cached_payloads_with_bytecode(
    plugin: ModuleType, tmp_path: Path
) -> None:
    from ansible.executor import module_common

    assert not plugin.compile_module_payloads(False)
    assert plugin.compile_module_payloads(True)
    assert not plugin.compile_module_payloads(True)  # once a process
    built = module_common._CachedModule(
        zip_data=_payload({"ansible/modules/ping.py": "print('pong')\n"}),
        metadata=None,
        source_mapping={},
    )
    names = zipfile.ZipFile(io.BytesIO(base64.b64decode(built.zip_data))).namelist()
    assert names == ["ansible/modules/ping.py", "ansible/modules/ping.pyc"]
    # its cache file is Ansible's own class, read back as it was written
    built.dump(str(tmp_path / "ping"))
    assert module_common._CachedModule.load(str(tmp_path / "ping")) == built
