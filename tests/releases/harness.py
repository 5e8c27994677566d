"""Every real SGLang release from 0.5.11 on, as its own parser and source describe it.

Wheels are downloaded once (`pip download --no-deps`) into cache/sglang-wheels, unpacked into
cache/sglang-releases/VERSION, and probed by tests/releases/probe_release.py in the real-SGLang
test image (scripts/real-sglang-image.sh), whose venv holds the dependencies the parsers import.
SGLANG_RELEASE_PYTHON=/path/to/venv/bin/python probes with a local real-SGLang venv instead.
Facts are cached per wheel and probe code; parsing rendered command lines is never cached.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / "cache"
WHEELS = CACHE / "sglang-wheels"
RELEASES_DIR = CACHE / "sglang-releases"
FACTS_DIR = CACHE / "sglang-release-facts"
PROBE = Path(__file__).resolve().parent / "probe_release.py"
DISCOVERY = REPO / "roles" / "sglang_server" / "files" / "sglang-build-facts.py"
IMAGE = os.environ.get("REALHOST_IMAGE", "localhost/sglang-realhost:cpu")
IMAGE_PYTHON = "/opt/sglang/venv/bin/python"

RELEASES = [f"0.5.{n}" for n in range(11, 24)]


class HarnessError(RuntimeError):
    pass


def wheel(version: str) -> Path:
    found = sorted(WHEELS.glob(f"sglang-{version}-*.whl"))
    if not found:
        WHEELS.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
        cmd += ["--only-binary=:all:", "--dest", str(WHEELS), f"sglang=={version}"]
        run = subprocess.run(cmd, capture_output=True, text=True)
        found = sorted(WHEELS.glob(f"sglang-{version}-*.whl"))
        if run.returncode != 0 or not found:
            raise HarnessError(f"pip download sglang=={version} failed: {run.stderr[-2000:]}")
    return found[-1]


def unpacked(version: str) -> Path:
    dest = RELEASES_DIR / version
    done = dest / ".unpacked"
    source = wheel(version)
    if done.is_file() and done.read_text() == source.name:
        return dest
    dest.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(source) as zf:
        zf.extractall(dest)
    done.write_text(source.name)
    return dest


def _digest(*paths: Path) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(path.name.encode())
        h.update(path.read_bytes() if path.stat().st_size < 1 << 20 else str(path.stat()).encode())
    return h.hexdigest()[:16]


def _probe_command(release: Path, extra: list[str], mounts: dict[Path, str]) -> list[str]:
    local = os.environ.get("SGLANG_RELEASE_PYTHON")
    if local:
        return [local, str(PROBE), *[str(a) for a in extra]]
    have = subprocess.run(["podman", "image", "exists", IMAGE]).returncode == 0
    if not have:
        raise HarnessError(f"{IMAGE} is missing: build it with scripts/real-sglang-image.sh")
    cmd = ["podman", "run", "--rm", "--network", "none", "--entrypoint", IMAGE_PYTHON]
    cmd += ["-e", "PYTHONPATH=/release", "-e", "SGLANG_USE_CPU_ENGINE=1"]
    cmd += ["-v", f"{release}:/release:ro", "-v", f"{REPO}:/repo:ro"]
    for host, inside in mounts.items():
        cmd += ["-v", f"{host}:{inside}:ro"]
    return [*cmd, IMAGE, "/repo/tests/releases/probe_release.py", *extra]


def probe(version: str, argvs: list[list[str]] | None = None) -> dict[str, Any]:
    release = unpacked(version)
    with tempfile.TemporaryDirectory() as tmp:
        extra: list[str] = []
        mounts: dict[Path, str] = {}
        if argvs is not None:
            path = Path(tmp) / "argvs.json"
            path.write_text(json.dumps(argvs))
            local = bool(os.environ.get("SGLANG_RELEASE_PYTHON"))
            extra = ["--parse", str(path) if local else "/argvs/argvs.json"]
            mounts[Path(tmp)] = "/argvs"
        env = {**os.environ, "PYTHONPATH": str(release), "SGLANG_USE_CPU_ENGINE": "1"}
        cmd = _probe_command(release, extra, mounts)
        run = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=release)
    if run.returncode != 0:
        raise HarnessError(f"probing sglang {version} failed:\n{run.stderr[-4000:]}")
    facts = json.loads(run.stdout.strip().splitlines()[-1])
    if facts.get("version") != version:
        raise HarnessError(f"probed {version} but the build says {facts.get('version')!r}")
    return facts


def facts(version: str) -> dict[str, Any]:
    key = _digest(wheel(version), PROBE, DISCOVERY)
    cached = FACTS_DIR / f"{version}-{key}.json"
    if cached.is_file():
        return json.loads(cached.read_text())
    result = probe(version)
    FACTS_DIR.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(result, sort_keys=True))
    return result


def all_facts(jobs: int = 2) -> dict[str, dict[str, Any]]:
    with ThreadPoolExecutor(jobs) as pool:
        return dict(zip(RELEASES, pool.map(facts, RELEASES), strict=True))


def parse_all(argvs: dict[str, list[list[str]]], jobs: int = 2) -> dict[str, list[dict[str, Any]]]:
    """Parses each release's argvs with that release's own parser."""

    def one(version: str) -> list[dict[str, Any]]:
        return probe(version, argvs[version])["parsed"]

    with ThreadPoolExecutor(jobs) as pool:
        return dict(zip(argvs, pool.map(one, argvs), strict=True))


if __name__ == "__main__":
    for version, f in all_facts().items():
        print(version, f["build_id"], len(f["options"]), "options", len(f["fields"]), "fields")
