"""The README and docs/: the README fits on two screens and links every docs page, and
docs/parameters.md is what scripts/parameters_doc.py makes of playbooks/vars/parameters.yml, whose
lists are the names the playbooks pass on."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def _doc_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "parameters_doc", ROOT / "scripts" / "parameters_doc.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_readme_fits_on_two_screens_and_links_every_docs_page() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 120
    linked = set(re.findall(r"\]\((docs/[^)#]+\.md)\)", text))
    pages = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert pages - linked == set(), "docs pages the README does not link"
    assert all((ROOT / p).is_file() for p in linked)


def test_docs_parameters_md_is_generated_from_the_one_list() -> None:
    mod = _doc_module()
    assert (ROOT / "docs" / "parameters.md").read_text(encoding="utf-8") == mod.render(), (
        "docs/parameters.md is not current: run .venv/bin/python scripts/parameters_doc.py"
    )


def test_a_default_from_is_the_value_the_code_uses() -> None:
    from bench.capacity import DEFAULT_SHARE
    from sweep.rollout import canary
    from sweep.store import greedy

    mod = _doc_module()
    by_name = {p["name"]: p for p in mod.parameters()["deploy"]}
    assert mod.default_of(by_name["deploy_tolerance"]) == str(canary.TOLERANCE)
    assert mod.default_of(by_name["greedy_match_min"]) == str(greedy.MATCH_MIN)
    sweep = {p["name"]: p for p in mod.parameters()["sweep"]}
    assert mod.default_of(sweep["slo_share"]) == str(DEFAULT_SHARE)
    role = yaml.safe_load((ROOT / "roles/sglang_bench/defaults/main.yml").read_text())
    assert mod.default_of(sweep["repetitions"]).startswith(f"{role['sglang_bench_repetitions']} ")
    with pytest.raises(AttributeError):
        mod.default_of({"name": "x", "default_from": "sweep.rollout.canary:NO_SUCH"})


@pytest.mark.parametrize("playbook", ["sweep", "deploy"])
def test_each_parameter_is_read_where_the_list_says(playbook: str) -> None:
    """A name the playbook reads itself appears in the playbooks; every other one reaches the
    controller's Python, which reads it by name."""
    params = _doc_module().parameters()[playbook]
    names = [p["name"] for p in params]
    assert len(names) == len(set(names))
    plays = "\n".join(p.read_text() for p in (ROOT / "playbooks").rglob("*.yml"))
    plays = plays.replace((ROOT / "playbooks/vars/parameters.yml").read_text(), "")
    python = "\n".join(p.read_text() for d in ("sweep", "bench") for p in (ROOT / d).rglob("*.py"))
    for p in params:
        where = plays if p.get("playbook") else python
        assert re.search(rf"\b{p['name']}\b", where), f"{p['name']} is read nowhere"
