"""The real-SGLang test set-up: the scenario and the scripts start SGLang on CPU the same way."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_scenario_and_scripts_share_the_cpu_server_recipe() -> None:
    recipe = json.loads((ROOT / "tests/real_sglang/cpu_server.json").read_text())
    scenario = yaml.safe_load((ROOT / "molecule/real-sglang/molecule.yml").read_text())
    host = scenario["provisioner"]["inventory"]["host_vars"]["sglang-realhost"]
    assert host["real_cpu_flags"] == recipe["flags"]
    assert host["sglang_server_extra_env"] == recipe["env"]


def test_the_lock_pins_every_package_once_and_sglang_at_the_tested_release() -> None:
    lines = (ROOT / "tests/real_sglang/requirements.lock").read_text().splitlines()
    pins = [line for line in lines if line and not line.startswith("#")]
    names = [pin.split("==")[0].lower() for pin in pins]
    assert all("==" in pin for pin in pins), [p for p in pins if "==" not in p]
    assert len(names) == len(set(names))
    assert "sglang==0.5.23" in pins
    # the test-only stand-ins replace these; the real ones must never be pinned beside them
    assert not {"torchvision", "sgl-kernel", "sglang-kernel"} & set(names)
