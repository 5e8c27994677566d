"""The SGLang emulator (tests/emulator) against the real releases it emulates.

For each emulated release (0.5.11, 0.5.15, 0.5.19, 0.5.23), from that release's own parser and
source (`release_facts`, tests/releases/harness.py): every option string of the emulator's parser
exists with the same dest, hidden-ness, value-taking and choices; the algorithms it knows are the
release's; its /server_info fields are ServerArgs fields and its other top-level keys exactly the
ones the release's `server_info` builds; the meta_info keys and metric names it writes are the
release's. The DDTree fork (`ddtree`, in no release) is 0.5.23 plus its own options.
"""

from __future__ import annotations

import asyncio
import re
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import harness
import pytest
from sglang_emulator import VERSIONS, metrics
from sglang_emulator.api import Emulator
from sglang_emulator.flags import (
    ALIASES,
    FORK_ONLY_OPTIONS,
    algorithms,
    build_parser,
    has_algorithm_choices,
    server_args_fields,
    window_field,
)
from sglang_emulator.scheduler import GenRequest
from sglang_emulator.settings import Settings
from sglang_emulator.stats import ServerStats

EMULATED = [v for v in VERSIONS if v != "ddtree"]
# meta_info keys a release writes only in conditions the emulator never has (capped drafts,
# ragged block verification: 0.5.23 managers/tokenizer_manager.py:3174-3210).
CONDITIONAL_SPEC_META = {"spec_cap_length", "spec_block_accept_length", "spec_cap_lens_histogram"}


def parser_options(version: str) -> dict[str, dict[str, Any]]:
    """The emulator's options, described as the role's discovery script describes a build's."""
    options: dict[str, dict[str, Any]] = {}
    for action in build_parser(version)._actions:
        for option in action.option_strings:
            options[option] = {
                "dest": action.dest,
                "hidden": action.help == "==SUPPRESS==",
                "takes_value": action.nargs != 0,
                "choices": sorted(str(c) for c in action.choices) if action.choices else None,
            }
    return options


def emulator(version: str, *argv: str) -> Emulator:
    settings = Settings.from_env({"SGLANG_EMU_VERSION": version})
    args = {field: None for field in server_args_fields(version)}
    args.update(
        model_path="/m",
        served_model_name="/m",
        tokenizer_path="/m",
        max_running_requests=48,
        chunked_prefill_size=8192,
        speculative_algorithm="DFLASH",
        speculative_num_draft_tokens=16,
        speculative_dflash_block_size=16,
    )
    return Emulator(settings, args, " ".join(argv))


def meta_info_keys(version: str) -> set[str]:
    """Every key the emulator's /generate meta_info has for a speculative request, first stream
    chunk and final answer."""
    emu = emulator(version)

    async def keys() -> set[str]:
        r = GenRequest([1, 2, 3], 8, "code", 0)
        first = set(emu.meta_info(r, False, stream_first=True))
        r.out.extend(8)
        r.verify_ct, r.correct_drafts, r.histogram = 3, 5, [1, 1, 1]
        r.first_token = r.finish = r.arrival + 0.1
        return first | set(emu.meta_info(r, True))

    return asyncio.run(keys())


def metric_names(version: str) -> dict[str, str]:
    """name -> Prometheus type of every series the emulator's /metrics shows (speculation on)."""
    stats = ServerStats(verify_calls=3, generation_tokens=10, prompt_tokens=4)
    sched = SimpleNamespace(running=[], waiting=[], token_usage=lambda: 0.0)
    release = Settings.from_env({"SGLANG_EMU_VERSION": version}).release
    text = metrics.render(stats, sched, "m", {"load_weight": 1.0}, release)  # type: ignore[arg-type]
    return dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.MULTILINE))


@cache
def release_source(version: str) -> str:
    """The text of the release's managers, observability and utils (where meta_info is built)."""
    srt = Path(harness.unpacked(version)) / "sglang" / "srt"
    parts = [
        path.read_text(errors="replace")
        for folder in ("managers", "observability", "utils")
        for path in sorted((srt / folder).rglob("*.py"))
    ]
    return "\n".join(parts)


@pytest.mark.parametrize("version", EMULATED)
def test_version_string_is_the_release(version: str, release_facts: dict[str, Any]):
    assert release_facts[version]["version"] == VERSIONS[version]


@pytest.mark.parametrize("version", EMULATED)
def test_every_option_exists_with_the_same_dest_and_hiddenness(
    version: str, release_facts: dict[str, Any]
):
    real = release_facts[version]["options"]
    problems = []
    for option, mine in parser_options(version).items():
        theirs = real.get(option)
        if theirs is None:
            problems.append(f"{option}: not an option of sglang {version}")
            continue
        for key in ("dest", "hidden", "takes_value", "choices"):
            if mine[key] != theirs[key]:
                problems.append(
                    f"{option}: {key} is {mine[key]!r}, sglang {version}: {theirs[key]!r}"
                )
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("version", EMULATED)
def test_algorithms_are_the_release_s(version: str, release_facts: dict[str, Any]):
    facts = release_facts[version]
    assert has_algorithm_choices(version) == bool(
        facts["options"]["--speculative-algorithm"]["choices"]
    )
    mine = [a for a in algorithms(version) if has_algorithm_choices(version) or a not in ALIASES]
    assert sorted(mine) == facts["algorithms"]


@pytest.mark.parametrize("version", EMULATED)
def test_server_info_fields_are_server_args_fields(version: str, release_facts: dict[str, Any]):
    fields = set(release_facts[version]["fields"])
    mine = server_args_fields(version)
    assert window_field(version) in mine
    unknown = sorted(set(mine) - fields)
    assert not unknown, f"not ServerArgs fields of sglang {version}: {unknown}"


@pytest.mark.parametrize("version", EMULATED)
def test_server_info_extra_keys_are_the_release_s(version: str, release_facts: dict[str, Any]):
    facts = release_facts[version]
    assert "server_info_keys" in facts, facts.get("server_info_keys_error")
    emu = emulator(version, "--model-path", "/m")
    body = emu.server_info_body()
    extra, real = set(body) - set(emu.args), set(facts["server_info_keys"])
    assert extra == real, f"emulator only: {sorted(extra - real)}; missing: {sorted(real - extra)}"


@pytest.mark.parametrize("version", EMULATED)
def test_meta_info_keys_are_the_release_s(version: str, release_facts: dict[str, Any]):
    keys = meta_info_keys(version)
    real = set(release_facts[version]["meta_info"])
    spec = {k for k in keys if k.startswith("spec_")}
    real_spec = {k for k in real if k.startswith("spec_")} - CONDITIONAL_SPEC_META
    assert spec <= real, f"sglang {version} writes no {sorted(spec - real)}"
    assert real_spec <= spec, f"the emulator leaves out {sorted(real_spec - spec)}"
    # The other keys are built in dict literals and helpers the probe does not read: each must
    # at least be a string the release's managers/observability/utils source has.
    source = release_source(version)
    missing = sorted(k for k in keys - spec if f'"{k}"' not in source)
    assert not missing, f"sglang {version} has no meta_info key {missing}"


@pytest.mark.parametrize("version", EMULATED)
def test_metric_names_are_the_release_s(version: str, release_facts: dict[str, Any]):
    real = set(release_facts[version]["metrics"])
    problems = []
    for name, kind in metric_names(version).items():
        base = name.removeprefix("sglang:")
        # prometheus_client exposes a Counter named "x" or "x_total" as "x_total".
        if base in real or (kind == "counter" and base.removesuffix("_total") in real):
            continue
        problems.append(f"{name} ({kind})")
    assert not problems, f"sglang {version} has no metric {problems}"


def test_ddtree_fork_is_0_5_23_plus_its_own_options(release_facts: dict[str, Any]):
    fork, base = parser_options("ddtree"), parser_options("0.5.23")
    assert set(fork) - set(base) == set(FORK_ONLY_OPTIONS)
    assert {o: v for o, v in fork.items() if o not in FORK_ONLY_OPTIONS} == base
    assert fork["--speculative-dflash-draft-window-size"]["dest"] == window_field("0.5.23")
    facts = release_facts["0.5.23"]
    assert sorted(algorithms("ddtree")) == sorted([*facts["algorithms"], "DDTREE"])
    fork_fields = set(server_args_fields("ddtree")) - {"speculative_ddtree_budget"}
    assert fork_fields == set(server_args_fields("0.5.23"))
    assert "speculative_ddtree_max_topk" not in server_args_fields("ddtree")  # env var only
    emu = emulator("ddtree")
    assert set(emu.server_info_body()) - set(emu.args) == set(facts["server_info_keys"])
    assert meta_info_keys("ddtree") == meta_info_keys("0.5.23")
    assert metric_names("ddtree") == metric_names("0.5.23")
