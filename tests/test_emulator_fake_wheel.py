"""The test-only `sglang` wheel (tests/fake_sglang) as the role's discovery script sees it.

The wheel is built and unpacked (a directory on PYTHONPATH is an installed distribution to
importlib.metadata), then roles/sglang_server/files/sglang-build-facts.py describes it for each
SGLANG_EMU_VERSION: it must describe exactly the emulator's parser, fields and algorithms.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest
from conftest import SYSTEM_PYTHON, ModelDirs
from sglang_emulator import VERSIONS
from sglang_emulator.flags import ALIASES, algorithms, build_parser, server_args_fields

REPO = Path(__file__).resolve().parents[1]
BUILD_WHEEL = REPO / "tests" / "fake_sglang" / "build_wheel.py"
DISCOVERY = REPO / "roles" / "sglang_server" / "files" / "sglang-build-facts.py"


@pytest.fixture(scope="module")
def fake_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    spec = importlib.util.spec_from_file_location("fake_build_wheel", BUILD_WHEEL)
    assert spec and spec.loader
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    dest = tmp_path_factory.mktemp("fake-sglang")
    wheel = builder.build(dest / "wheel")
    site = dest / "site"
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        zf.extractall(site)
    assert "sglang/srt/server_args.py" in names
    assert "sglang/srt/speculative/spec_info.py" in names
    return site


def run(site: Path, version: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(site), "SGLANG_EMU_VERSION": version, "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [SYSTEM_PYTHON, *args], env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("version", list(VERSIONS))
def test_discovery_describes_the_emulated_version(fake_site: Path, version: str):
    res = run(fake_site, version, str(DISCOVERY))
    assert res.returncode == 0, res.stderr
    facts: dict[str, Any] = json.loads(res.stdout)
    assert facts["version"] == VERSIONS[version]
    parser = build_parser(version)
    mine = {o: a for a in parser._actions for o in a.option_strings}
    assert set(facts["options"]) == set(mine)
    for option, action in mine.items():
        assert facts["options"][option]["dest"] == action.dest, option
        assert facts["options"][option]["hidden"] == (action.help == "==SUPPRESS=="), option
    assert facts["fields"] == server_args_fields(version)
    expected = [a for a in algorithms(version) if version == "0.5.11" or a not in ALIASES]
    assert facts["algorithms"] == sorted(expected)
    assert ("DDTREE" in facts["algorithms"]) == (version == "ddtree")
    # Static text: the fork's variable is in the fake's source for every version.
    assert "SGLANG_DDTREE_MAX_TOPK" in facts["env"]
    assert not [e for e in facts["env"] if e.startswith("SGLANG_EMU_")]


def test_launch_server_runs_the_emulated_version(fake_site: Path, model_dirs: ModelDirs):
    res = run(fake_site, "0.5.11", "-m", "sglang.launch_server", "--model-path",
              str(model_dirs.model), "--speculative-draft-window-size", "2048")  # fmt: skip
    assert res.returncode == 2
    assert "sglang serve: error: unrecognized arguments: --speculative-draft-window-size" in (
        res.stderr
    )
