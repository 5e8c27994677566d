"""The role's dialect interpreter: logical parameters to flags, env and expected server_info."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
import yaml

ROLE = Path(__file__).resolve().parents[2] / "roles" / "sglang_server"


def _load_filters() -> Any:
    spec = importlib.util.spec_from_file_location(
        "sglang_server_filters", ROLE / "filter_plugins" / "sglang_server.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


filters = _load_filters()
DIALECTS: dict[str, Any] = yaml.safe_load((ROLE / "vars" / "dialects.yml").read_text())[
    "sglang_server_dialects_builtin"
]


def config(**overrides: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "model_path": "/srv/models/target",
        "served_model_name": "",
        "draft_model_path": "/srv/models/drafter",
        "tp_size": 8,
        "host": "0.0.0.0",
        "port": 30000,
        "context_length": 0,
        "mem_fraction_static": 0.0,
        "cuda_graph_max_bs": 0,
        "max_running_requests": 0,
        "enable_metrics": False,
        "speculative_algorithm": "DFLASH",
        "budget": 16,
        "topk": 1,
        "window": 2048,
        "extra_flags": [],
    }
    cfg.update(overrides)
    return cfg


def flat(flags: list[list[str]]) -> list[str]:
    return [word for flag in flags for word in flag]


def test_dflash_on_0_5_11_uses_the_old_window_flag() -> None:
    out = filters.sglang_server_launch(config(), DIALECTS["0.5.11"])
    words = flat(out["flags"])
    assert words[words.index("--speculative-dflash-draft-window-size") + 1] == "2048"
    assert "--speculative-draft-window-size" not in words
    assert out["expect"]["speculative_dflash_draft_window_size"] == 2048


@pytest.mark.parametrize("dialect", ["0.5.19", "0.5.20+", "ddtree"])
def test_dflash_on_newer_builds_uses_the_new_window_flag(dialect: str) -> None:
    out = filters.sglang_server_launch(config(), DIALECTS[dialect])
    words = flat(out["flags"])
    assert words[words.index("--speculative-draft-window-size") + 1] == "2048"
    assert "--speculative-dflash-draft-window-size" not in words
    assert out["expect"]["speculative_num_draft_tokens"] == 16
    assert out["expect"]["speculative_eagle_topk"] == 1
    assert out["env"] == {}


def test_ddtree_budget_is_a_flag_and_topk_an_environment_variable() -> None:
    out = filters.sglang_server_launch(
        config(speculative_algorithm="DDTREE", budget=8, topk=4), DIALECTS["ddtree"]
    )
    words = flat(out["flags"])
    assert words[words.index("--speculative-algorithm") + 1] == "DDTREE"
    assert words[words.index("--speculative-ddtree-budget") + 1] == "8"
    assert "--speculative-eagle-topk" not in words
    assert out["env"] == {"SGLANG_DDTREE_MAX_TOPK": "4"}
    assert out["expect"]["speculative_ddtree_budget"] == 8
    assert out["expect"]["speculative_ddtree_max_topk"] == 4


def test_speculation_off_renders_no_speculative_flag() -> None:
    out = filters.sglang_server_launch(config(speculative_algorithm="NONE"), DIALECTS["0.5.20+"])
    assert not [w for w in flat(out["flags"]) if w.startswith("--speculative")]
    assert out["expect"]["speculative_algorithm"] is None


def test_optional_serving_flags_appear_only_when_set() -> None:
    bare = flat(filters.sglang_server_launch(config(), DIALECTS["0.5.20+"])["flags"])
    assert "--context-length" not in bare and "--enable-metrics" not in bare
    full = flat(
        filters.sglang_server_launch(
            config(
                context_length=32768,
                mem_fraction_static=0.85,
                cuda_graph_max_bs=48,
                max_running_requests=48,
                enable_metrics=True,
                served_model_name="big-moe",
                extra_flags=["--trust-remote-code"],
            ),
            DIALECTS["0.5.20+"],
        )["flags"]
    )
    for flag, value in [
        ("--context-length", "32768"),
        ("--mem-fraction-static", "0.85"),
        ("--cuda-graph-max-bs", "48"),
        ("--max-running-requests", "48"),
        ("--served-model-name", "big-moe"),
    ]:
        assert full[full.index(flag) + 1] == value
    assert "--enable-metrics" in full and full[-1] == "--trust-remote-code"


@pytest.mark.parametrize(
    ("raw", "quoted"),
    [
        ("plain", '"plain"'),
        ('say "hi"', '"say \\"hi\\""'),
        ("50%", '"50%%"'),
        ("$HOME", '"$$HOME"'),
        ("a\\b", '"a\\\\b"'),
    ],
)
def test_systemd_quote_escapes_what_systemd_would_expand(raw: str, quoted: str) -> None:
    assert filters.systemd_quote(raw) == quoted


@pytest.mark.parametrize(
    ("version", "dialect"),
    [
        ("0.5.11", "0.5.11"),
        ("0.5.18", "0.5.11"),
        ("0.5.19", "0.5.19"),
        ("0.5.20", "0.5.20+"),
        ("0.5.23", "0.5.20+"),
        ("0.5.23+ddtree", "ddtree"),
        ("0.6.0rc1", "0.5.20+"),
        ("", "fallback"),
        ("garbage", "fallback"),
        ("0.5.10.post1", "unsupported:0.5.10.post1"),
    ],
)
def test_dialect_for_version(version: str, dialect: str) -> None:
    assert filters.sglang_dialect_for_version(version, "fallback") == dialect
