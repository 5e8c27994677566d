"""roles/sglang_emulator/files/pack.py: one archive of the emulator for unarchive."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "roles" / "sglang_emulator" / "files" / "pack.py"


def pack(*dirs: Path, tmp: Path) -> Path:
    env = {**os.environ, "TMPDIR": str(tmp)}
    out = subprocess.run(
        [sys.executable, str(PACK), *map(str, dirs)], env=env, check=True, capture_output=True
    )
    return Path(out.stdout.decode().strip())


def test_each_directory_lands_by_name_without_bytecode(tmp_path: Path) -> None:
    a, b = tmp_path / "src" / "pkg_a", tmp_path / "other" / "pkg_b"
    (a / "sub").mkdir(parents=True)
    (a / "__pycache__").mkdir()
    b.mkdir(parents=True)
    (a / "__init__.py").write_text("A = 1\n")
    (a / "sub" / "mod.py").write_text("B = 2\n")
    (a / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\0")
    (b / "x.py").write_text("C = 3\n")
    archive = pack(a, b, tmp=tmp_path)
    assert archive.parent == tmp_path and archive.name.startswith("sglang-pack-")
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        owners = {(m.uid, m.gid, m.uname) for m in tar.getmembers()}
        mtime = tar.getmember("pkg_a/__init__.py").mtime
    assert names == ["pkg_a/__init__.py", "pkg_a/sub/mod.py", "pkg_b/x.py"]
    assert owners == {(0, 0, "root")}
    assert mtime == int((a / "__init__.py").stat().st_mtime)


def test_same_content_same_archive_an_edit_a_new_one(tmp_path: Path) -> None:
    a = tmp_path / "pkg"
    a.mkdir()
    (a / "m.py").write_text("X = 1\n")
    first = pack(a, tmp=tmp_path)
    (a / "__pycache__").mkdir()  # Python writing its cache changes nothing
    assert pack(a, tmp=tmp_path) == first
    (a / "m.py").write_text("X = 2\n")
    assert pack(a, tmp=tmp_path) != first


def test_a_missing_directory_is_named(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(PACK), str(tmp_path / "nope")], capture_output=True, text=True
    )
    assert out.returncode != 0 and f"{tmp_path / 'nope'} is not a directory" in out.stderr


def test_the_role_packs_the_emulators_sources() -> None:
    spec = importlib.util.spec_from_file_location("pack", PACK)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    names = [n for _, n in mod.members([ROOT / "tests/emulator/sglang_emulator"])]
    assert "sglang_emulator/__main__.py" in names
    assert not [n for n in names if "__pycache__" in n]
