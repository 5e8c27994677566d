"""Packs Python package directories into one tar for `ansible.builtin.unarchive` (controller side).

    python3 pack.py SRC_DIR [SRC_DIR ...]   -> prints the archive's path

Each SRC_DIR lands at the archive's top level under its own name (sglang_emulator/..., sglang/...).
Copying a directory with `ansible.builtin.copy` costs a round trip per file (about 45 s for the
emulator over the podman connection); one archive is one transfer. Bytecode caches are left out.
Only files are members (a directory's mtime changes whenever Python writes a bytecode cache in it).
They keep their mtimes (unarchive compares them, so an unchanged tree reports no change, and
Python's bytecode cache on the host notices an edit) and are owned by root. The archive's name
is a hash of its content, written atomically beside any other run's: concurrent plays share it.
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
import tarfile
import tempfile
from pathlib import Path


def members(sources: list[Path]) -> list[tuple[Path, str]]:
    out = []
    for src in sources:
        if not src.is_dir():
            raise SystemExit(f"pack.py: {src} is not a directory")
        for path in sorted(src.rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            out.append((path, str(Path(src.name) / path.relative_to(src))))
    return out


def tar_bytes(sources: list[Path]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for path, arcname in members(sources):
            info = tar.gettarinfo(str(path), arcname=arcname)
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            info.mtime = int(info.mtime)
            with open(path, "rb") as f:
                tar.addfile(info, f)
    return buf.getvalue()


def main(argv: list[str]) -> int:
    if not argv:
        raise SystemExit("usage: pack.py SRC_DIR [SRC_DIR ...]")
    data = tar_bytes([Path(a).resolve() for a in argv])
    path = Path(tempfile.gettempdir()) / f"sglang-pack-{hashlib.sha256(data).hexdigest()[:16]}.tar"
    if not path.is_file():
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
