#!/usr/bin/env python3
"""Builds the test-only `sglang` wheel: version 0.5.23, `sglang.launch_server` runs the emulator.

    python3 tests/fake_sglang/build_wheel.py DEST_DIR

Writes DEST_DIR/sglang-0.5.23-py3-none-any.whl holding src/sglang (every *.py under it) and a copy
of the project's emulator (tests/emulator/sglang_emulator), so a venv built from a wheelhouse
serves the emulator exactly where a GPU host runs SGLang, and `importlib.metadata.version("sglang")`
answers 0.5.23. What the build says of itself follows SGLANG_EMU_VERSION at run time, as the
emulator does: `sglang.version.__version__` (e.g. 0.5.15, 0.5.23+ddtree) and, for the role's
discovery script (roles/sglang_server/files/sglang-build-facts.py), `sglang.srt.server_args`
(ServerArgs fields and add_cli_args) and `sglang.srt.speculative.spec_info` (SpeculativeAlgorithm).
Byte-for-byte reproducible (fixed timestamps, sorted entries): the same sources give the same wheel.
Stdlib only; no build backend, no network.
"""

from __future__ import annotations

import base64
import hashlib
import sys
import zipfile
from pathlib import Path

NAME = "sglang"
VERSION = "0.5.23"
HERE = Path(__file__).resolve().parent
EMULATOR = HERE.parent / "emulator" / "sglang_emulator"
EPOCH = (1980, 1, 1, 0, 0, 0)

METADATA = f"""Metadata-Version: 2.1
Name: {NAME}
Version: {VERSION}
Summary: TEST ONLY - stand-in for SGLang whose server is the sglang-specbench emulator
Requires-Python: >=3.10
"""
WHEEL = """Wheel-Version: 1.0
Generator: sglang-specbench tests/fake_sglang/build_wheel.py
Root-Is-Purelib: true
Tag: py3-none-any
"""


def sources() -> list[tuple[str, bytes]]:
    files: list[tuple[str, bytes]] = []
    for root, package in ((HERE / "src" / "sglang", "sglang"), (EMULATOR, "sglang_emulator")):
        for path in sorted(root.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            files.append((f"{package}/{path.relative_to(root).as_posix()}", path.read_bytes()))
    return files


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build(dest: Path) -> Path:
    dist_info = f"{NAME}-{VERSION}.dist-info"
    files = [
        *sources(),
        (f"{dist_info}/METADATA", METADATA.encode()),
        (f"{dist_info}/WHEEL", WHEEL.encode()),
        (f"{dist_info}/top_level.txt", b"sglang\nsglang_emulator\n"),
    ]
    record = "\n".join([record_line(n, d) for n, d in files] + [f"{dist_info}/RECORD,,", ""])
    files.append((f"{dist_info}/RECORD", record.encode()))
    dest.mkdir(parents=True, exist_ok=True)
    wheel = dest / f"{NAME}-{VERSION}-py3-none-any.whl"
    tmp = wheel.with_suffix(".partial")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files:
            info = zipfile.ZipInfo(name, EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    tmp.replace(wheel)
    return wheel


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write(f"usage: {Path(__file__).name} DEST_DIR\n")
        return 2
    print(build(Path(argv[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
