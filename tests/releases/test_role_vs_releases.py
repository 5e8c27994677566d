"""The role against every real SGLang release: what it renders, that release's own parser accepts,
and every /server_info field sglang_ready will expect is one that release reports.

Both ways the role chooses flags are checked: `auto` (discovery from the release's parser, by the
role's own filter) and the named dialect whose `releases` range covers the release.
"""

from __future__ import annotations

from typing import Any

import harness
import pytest
from role_filters import TABLE, load_filters

NAMED: dict[str, Any] = TABLE["sglang_server_dialects_builtin"]
CANDIDATES: dict[str, Any] = TABLE["sglang_server_dialect_candidates"]
SERVING: dict[str, Any] = TABLE["sglang_server_serving_candidates"]

# One realistic configuration per algorithm (budget, topk, window as an operator sets them).
SETTINGS = {
    "DFLASH": {"budget": 16, "topk": 1, "window": 2048},
    "EAGLE3": {"budget": 8, "topk": 4, "window": 2048},
    "NGRAM": {"budget": 8, "topk": 1, "window": 2048},
    "NONE": {"budget": 16, "topk": 1, "window": 2048},
}


filters = load_filters()


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def named_dialect_for(version: str) -> str:
    release = _release(version)
    covering = []
    for name, dialect in NAMED.items():
        first, last = dialect.get("releases") or (None, None)
        if first and _release(first) <= release and (last is None or release <= _release(last)):
            covering.append(name)
    assert len(covering) == 1, f"sglang {version} is covered by named dialects {covering}"
    return covering[0]


def config(algorithm: str) -> dict[str, Any]:
    return {
        "model_path": "/srv/models/target",
        "served_model_name": "target",
        "draft_model_path": "/srv/models/drafter",
        "tp_size": 8,
        "host": "0.0.0.0",
        "port": 30000,
        "context_length": 32768,
        "mem_fraction_static": 0.85,
        "cuda_graph_max_bs": 48,
        "max_running_requests": 48,
        "enable_metrics": True,
        "speculative_algorithm": algorithm,
        "extra_flags": [],
        **SETTINGS[algorithm],
    }


def renderings(version: str, facts: dict[str, Any]) -> list[dict[str, Any]]:
    """Everything the role can render for this release: per way of choosing, per algorithm."""
    ways = {
        "auto": filters.sglang_dialect_discover(facts, CANDIDATES, SERVING),
        named_dialect_for(version): NAMED[named_dialect_for(version)],
    }
    out = []
    for way, dialect in ways.items():
        for algorithm in ["NONE", *sorted(dialect["algorithms"])]:
            launch = filters.sglang_server_launch(config(algorithm), dialect)
            argv = [word for flag in launch["flags"] for word in flag]
            out.append({"way": way, "algorithm": algorithm, "launch": launch, "argv": argv})
    return out


@pytest.fixture(scope="session")
def checked(release_facts: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Per release: each rendering with that release's parse of it."""
    rendered = {v: renderings(v, f) for v, f in release_facts.items()}
    parsed = harness.parse_all({v: [r["argv"] for r in rs] for v, rs in rendered.items()})
    for version, items in rendered.items():
        for item, result in zip(items, parsed[version], strict=True):
            assert result["argv"] == item["argv"]
            item["parsed"] = result
    return rendered


def test_every_release_from_0_5_11_is_probed(release_facts: dict[str, Any]) -> None:
    assert sorted(release_facts, key=_release) == harness.RELEASES
    assert len(harness.RELEASES) == 13
    for version, facts in release_facts.items():
        assert facts["version"] == version


@pytest.mark.parametrize("version", harness.RELEASES)
def test_dflash_is_expressible_both_ways(version: str, release_facts: dict[str, Any]) -> None:
    discovered = filters.sglang_dialect_discover(release_facts[version], CANDIDATES, SERVING)
    assert "DFLASH" in discovered["algorithms"], discovered["unavailable"]
    assert not discovered["unavailable_serving"]
    assert "DFLASH" in NAMED[named_dialect_for(version)]["algorithms"]


@pytest.mark.parametrize("version", harness.RELEASES)
def test_the_release_parses_what_the_role_renders(version: str, checked: dict[str, Any]) -> None:
    for item in checked[version]:
        parsed = item["parsed"]
        label = f"sglang {version}, {item['way']}, {item['algorithm']}: {' '.join(item['argv'])}"
        assert parsed["ok"], f"{label}\n{parsed.get('error')}"
        for field, value in item["launch"]["expect"].items():
            if field in parsed["values"]:
                assert parsed["values"][field] == value, f"{label}: {field}"


@pytest.mark.parametrize("version", harness.RELEASES)
def test_every_expected_field_is_one_the_release_reports(
    version: str, checked: dict[str, Any], release_facts: dict[str, Any]
) -> None:
    fields = set(release_facts[version]["fields"])
    for item in checked[version]:
        missing = sorted(set(item["launch"]["expect"]) - fields)
        assert not missing, (
            f"sglang {version}, {item['way']}, {item['algorithm']}: sglang_ready would wait for "
            f"{missing}, which this release's /server_info never reports"
        )


@pytest.mark.parametrize("version", harness.RELEASES)
def test_discovery_and_the_named_dialect_agree(version: str, checked: dict[str, Any]) -> None:
    by_way: dict[str, dict[str, Any]] = {}
    for item in checked[version]:
        by_way.setdefault(item["way"], {})[item["algorithm"]] = item["launch"]
    auto, named = by_way.pop("auto"), next(iter(by_way.values()))
    for algorithm in sorted(set(auto) & set(named)):
        assert auto[algorithm]["flags"] == named[algorithm]["flags"], (version, algorithm)
        assert auto[algorithm]["expect"] == named[algorithm]["expect"], (version, algorithm)
