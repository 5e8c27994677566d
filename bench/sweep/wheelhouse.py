"""Controller side: the wheels a host needs to install the bench package without an index.

Hosts (GPU clusters, the test containers) often cannot reach a package index, so the controller
builds the project's wheel and downloads binary wheels of its dependencies for the host's Python
and machine, plus pip itself (installed from its wheel, no ensurepip needed on the host).
The directory name carries a hash of the sources: a changed bench package is a new wheelhouse,
and the host reinstalls when that name changes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

PIP_QUIET = ["-q", "--disable-pip-version-check"]


def source_hash(project: Path) -> str:
    h = hashlib.sha256()
    sources = sorted(
        p
        for p in (project / "bench").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith(".pyc")
    )
    files = [project / "pyproject.toml", *sources]
    for p in files:
        h.update(str(p.relative_to(project)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


def wheelhouse_name(project: Path, python_version: str, machine: str) -> str:
    major_minor = "".join(python_version.split(".")[:2])
    return f"{source_hash(project)}-cp{major_minor}-{machine}"


def pip_wheel(wheelhouse: Path) -> str:
    """File name of the pip wheel (hosts run pip from it: no ensurepip needed)."""
    return next(wheelhouse.glob("pip-*.whl")).name


def build(project: Path, cache: Path, python_version: str, machine: str) -> tuple[Path, bool]:
    """Returns (wheelhouse directory, whether it was built now)."""
    name = wheelhouse_name(project, python_version, machine)
    dest = cache / name
    if (dest / "COMPLETE").is_file():
        return dest, False
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
        if dest.exists():  # another host's build won the race
            shutil.rmtree(tmp)
        else:
            os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest, True
