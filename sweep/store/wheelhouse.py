"""Controller side: the wheels a host needs to install the bench package without an index.

Hosts (GPU clusters, the test containers) often cannot reach a package index, so the controller
builds the project's wheel and downloads binary wheels of its dependencies for the host's Python
and machine, plus pip itself (installed from its wheel, no ensurepip needed on the host).
The directory name carries a hash of what the wheel is built from (bench/ and the build tables of
pyproject.toml): a changed bench package is a new wheelhouse, and the host reinstalls when that name
changes. Controller code (this package, the playbooks, the tooling config) is not in it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from filelock import FileLock

PIP_QUIET = ["-q", "--disable-pip-version-check"]


def build_tables(pyproject: Path) -> bytes:
    """The parts of pyproject.toml that shape the wheel; [tool.ruff] and the like do not."""
    import tomllib  # the controller runs ansible-core 2.19: Python 3.11+

    data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    tool = data.get("tool") or {}
    kept = {
        "build-system": data.get("build-system"),
        "project": data.get("project"),
        "setuptools": tool.get("setuptools"),
    }
    return json.dumps(kept, sort_keys=True).encode()


def source_hash(project: Path) -> str:
    h = hashlib.sha256()
    h.update(build_tables(project / "pyproject.toml"))
    sources = sorted(
        p
        for p in (project / "bench").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith(".pyc")
    )
    for p in sources:
        h.update(str(p.relative_to(project)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


def wheelhouse_name(project: Path, python_version: str, machine: str) -> str:
    major_minor = "".join(python_version.split(".")[:2])
    return f"{source_hash(project)}-cp{major_minor}-{machine}"


def pip_wheel(wheelhouse: Path) -> str:
    """File name of the pip wheel (hosts run pip from it: no ensurepip needed)."""
    return next(wheelhouse.glob("pip-*.whl")).name


def archive(wheelhouse: Path) -> Path:
    """`<wheelhouse>.tar` beside it (the wheels, flat; written once, atomically): one file to
    copy to a host instead of one transfer per wheel."""
    path = wheelhouse.with_name(wheelhouse.name + ".tar")
    if path.is_file():
        return path
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        with tarfile.open(tmp, "w") as tar:
            for f in sorted(wheelhouse.iterdir()):
                if f.is_file():
                    tar.add(f, arcname=f.name)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def build(project: Path, cache: Path, python_version: str, machine: str) -> tuple[Path, bool]:
    """Returns (wheelhouse directory, whether it was built now)."""
    name = wheelhouse_name(project, python_version, machine)
    dest = cache / name
    if (dest / "COMPLETE").is_file():
        return dest, False
    cache.mkdir(parents=True, exist_ok=True)
    # setuptools builds in the source tree's own build/ whatever the wheel's name: two builds at
    # once (hosts of two Pythons in one sweep, two controllers on one checkout) write the same
    # files and one of them fails or packs the other's
    with FileLock(str(cache / ".build.lock")):
        if (dest / "COMPLETE").is_file():  # built while this one waited
            return dest, False
        _build(project, cache, name, python_version, machine)
    return dest, True


def _build(project: Path, cache: Path, name: str, python_version: str, machine: str) -> None:
    dest = cache / name
    tmp = cache / f".{name}.{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    pip = [sys.executable, "-m", "pip"]
    mm = ".".join(python_version.split(".")[:2])
    platforms = [
        f"manylinux2014_{machine}",
        f"manylinux_2_17_{machine}",
        f"manylinux_2_28_{machine}",
    ]
    try:
        subprocess.run(
            [*pip, "wheel", *PIP_QUIET, "--no-deps", "-w", str(tmp), str(project)], check=True
        )
        wheel = next(tmp.glob("sglang_specbench-*.whl"))
        download = [*pip, "download", *PIP_QUIET, "--only-binary=:all:", "--python-version", mm]
        download += ["--implementation", "cp", "-d", str(tmp), "pip"]
        for plat in platforms:
            download += ["--platform", plat]
        subprocess.run([*download, str(wheel)], check=True)
        (tmp / "COMPLETE").write_text(name + "\n")
        shutil.rmtree(dest, ignore_errors=True)  # an incomplete one, left by a killed build
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
