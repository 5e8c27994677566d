"""The role's dialect interpreter: logical parameters to flags, env and expected server_info."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from role_filters import TABLE, load_filters

filters = load_filters()
DIALECTS: dict[str, Any] = TABLE["sglang_server_dialects_builtin"]
CANDIDATES: dict[str, Any] = TABLE["sglang_server_dialect_candidates"]


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


@pytest.mark.parametrize("dialect", ["0.5.12", "0.5.20+"])
def test_dflash_from_0_5_12_uses_the_new_window_flag_and_field(dialect: str) -> None:
    out = filters.sglang_server_launch(config(), DIALECTS[dialect])
    words = flat(out["flags"])
    assert words[words.index("--speculative-draft-window-size") + 1] == "2048"
    assert "--speculative-dflash-draft-window-size" not in words
    assert out["expect"]["speculative_draft_window_size"] == 2048
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
    assert words[words.index("--speculative-dflash-draft-window-size") + 1] == "2048"
    assert out["env"] == {"SGLANG_DDTREE_MAX_TOPK": "4"}
    assert out["expect_env"] == {"SGLANG_DDTREE_MAX_TOPK": "4"}
    assert out["expect"]["speculative_ddtree_budget"] == 8
    assert out["expect"]["speculative_draft_window_size"] == 2048
    assert not [key for key in out["expect"] if "topk" in key]


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
        ("--cuda-graph-max-bs-decode", "48"),
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


def option(dest: str, hidden: bool = False) -> dict[str, Any]:
    return {"dest": dest, "hidden": hidden, "takes_value": True, "choices": None}


BASE_OPTIONS = {
    "--speculative-algorithm": option("speculative_algorithm"),
    "--speculative-num-draft-tokens": option("speculative_num_draft_tokens"),
    "--speculative-eagle-topk": option("speculative_eagle_topk"),
}
BASE_FIELDS = ["speculative_algorithm", "speculative_num_draft_tokens", "speculative_eagle_topk"]


def facts(options: dict[str, Any], fields: list[str], algorithms: list[str], env=()) -> dict:
    return {
        "version": "9.9.9",
        "build_id": "abc",
        "options": {**BASE_OPTIONS, **options},
        "fields": [*BASE_FIELDS, *fields],
        "algorithms": algorithms,
        "env": list(env),
    }


def test_discovery_on_a_fork_with_ddtree_and_only_the_old_window_flag() -> None:
    fork = facts(
        {
            "--speculative-dflash-draft-window-size": option(
                "speculative_dflash_draft_window_size"
            ),
            "--speculative-ddtree-budget": option("speculative_ddtree_budget"),
        },
        ["speculative_dflash_draft_window_size", "speculative_ddtree_budget"],
        ["DDTREE", "DFLASH", "EAGLE"],
        env=["SGLANG_DDTREE_MAX_TOPK"],
    )
    dialect = filters.sglang_dialect_discover(fork, CANDIDATES)
    assert sorted(dialect["algorithms"]) == ["DDTREE", "DFLASH"]
    out = filters.sglang_server_launch(
        config(speculative_algorithm="DDTREE", budget=20, topk=3), dialect
    )
    words = flat(out["flags"])
    assert words[words.index("--speculative-dflash-draft-window-size") + 1] == "2048"
    assert words[words.index("--speculative-ddtree-budget") + 1] == "20"
    assert out["expect"]["speculative_dflash_draft_window_size"] == 2048
    assert out["expect_env"] == {"SGLANG_DDTREE_MAX_TOPK": "3"}
    assert "9.9.9" in dialect["version"]


def test_discovery_prefers_the_current_window_flag_and_expects_its_dest() -> None:
    build = facts(
        {
            "--speculative-draft-window-size": option("speculative_draft_window_size"),
            "--speculative-dflash-draft-window-size": option(
                "speculative_draft_window_size", hidden=True
            ),
        },
        ["speculative_draft_window_size"],
        ["DFLASH", "NGRAM"],
    )
    out = filters.sglang_server_launch(config(), filters.sglang_dialect_discover(build, CANDIDATES))
    words = flat(out["flags"])
    assert "--speculative-draft-window-size" in words
    assert "--speculative-dflash-draft-window-size" not in words
    assert out["expect"]["speculative_draft_window_size"] == 2048


def test_discovery_reports_what_a_build_cannot_express() -> None:
    # DDTREE offered, but neither its budget flag nor its topk variable: unavailable, with reasons.
    build = facts({}, [], ["DDTREE", "DFLASH"])
    dialect = filters.sglang_dialect_discover(build, CANDIDATES)
    assert "DDTREE" not in dialect["algorithms"]
    reasons = " ".join(dialect["unavailable"]["DDTREE"])
    assert "--speculative-ddtree-budget" in reasons and "SGLANG_DDTREE_MAX_TOPK" in reasons
    assert "window" in " ".join(dialect["unavailable"]["DFLASH"])
    offers = filters.sglang_build_offers(build)
    assert "9.9.9" in offers and "--speculative-eagle-topk" in offers


def test_a_flag_whose_dest_the_build_does_not_report_is_rendered_but_not_expected() -> None:
    build = facts(
        {"--speculative-draft-window-size": option("draft_window")},
        [],
        ["DFLASH"],
    )
    out = filters.sglang_server_launch(config(), filters.sglang_dialect_discover(build, CANDIDATES))
    assert "--speculative-draft-window-size" in flat(out["flags"])
    assert "draft_window" not in out["expect"]


def point(**kw: Any) -> dict[str, Any]:
    return {"algorithm": "DDTREE", "budget": 8, "topk": 4, "window": 2048, **kw}


def test_point_rules_accept_what_the_dialect_can_express() -> None:
    assert filters.sglang_server_point_problems(point(), DIALECTS["ddtree"], 16) == []
    assert filters.sglang_server_point_problems(point(algorithm="NONE", topk=99), {}, 16) == []


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        ({"topk": 32}, "sglang_server_topk=32 cannot be expressed by DDTREE"),
        ({"window": 8}, "sglang_server_window=8 is smaller than the drafter's block size 16"),
        (
            {"algorithm": "DFLASH", "budget": 8, "topk": 1},
            "sglang_server_budget=8 differs from the drafter's block size 16",
        ),
        ({"algorithm": "DFLASH", "budget": 16, "topk": 2}, "(allowed: [1])"),
        ({"algorithm": "EAGLE"}, "sglang_server_speculative_algorithm=EAGLE is not available"),
        ({"budget": "x"}, "sglang_server_budget=x must be a positive integer"),
    ],
)
def test_point_rules_name_the_bad_value(overrides: dict[str, Any], says: str) -> None:
    problems = filters.sglang_server_point_problems(point(**overrides), DIALECTS["ddtree"], 16)
    assert says in " ".join(problems)


def test_block_size_rules_wait_for_the_block_size_and_names_can_be_the_planners() -> None:
    bad = point(algorithm="DFLASH", budget=8, topk=1)
    assert filters.sglang_server_point_problems(bad, DIALECTS["ddtree"]) == []
    problems = filters.sglang_server_point_problems(bad, DIALECTS["ddtree"], 16, logical_names=True)
    assert problems and problems[0].startswith("budget=8 differs")
    problems = filters.sglang_server_point_problems(bad, DIALECTS["ddtree"], 16)
    assert problems[0].startswith("sglang_server_budget=8 differs")


def test_rendering_refuses_a_point_the_build_cannot_express() -> None:
    with pytest.raises(ValueError, match="differs from the drafter's block size 16"):
        filters.sglang_server_launch(config(budget=8, block_size=16), DIALECTS["0.5.20+"])
    out = filters.sglang_server_launch(config(budget=16, block_size=16), DIALECTS["0.5.20+"])
    assert out["expect"]["speculative_num_draft_tokens"] == 16


# Real output captured on an H200 host (../shared/fixtures, beside the repository when present).
H200_LIST_GPUS = (
    Path(__file__).resolve().parents[3] / "shared/fixtures/nvidia-smi-h200/list-gpus.txt"
)


def test_gpu_class_from_nvidia_smi_list_gpus() -> None:
    lines = [
        "GPU 0: NVIDIA RTX PRO 6000 Blackwell Server Edition (UUID: GPU-1a)",
        "GPU 1: NVIDIA RTX PRO 6000 Blackwell Server Edition (UUID: GPU-2b)",
    ]
    gpu_class = filters.sglang_gpu_class
    assert gpu_class(lines) == "2x NVIDIA RTX PRO 6000 Blackwell Server Edition"
    assert gpu_class([*lines, "GPU 2: NVIDIA H200 (UUID: GPU-3c)"]) == (
        "3x NVIDIA H200 + NVIDIA RTX PRO 6000 Blackwell Server Edition"
    )
    assert gpu_class(["No devices were found"]) == ""
    assert gpu_class("") == ""


@pytest.mark.skipif(not H200_LIST_GPUS.is_file(), reason="the shared H200 fixture is not here")
def test_gpu_class_of_the_recorded_h200() -> None:
    assert filters.sglang_gpu_class(H200_LIST_GPUS.read_text()) == "1x NVIDIA H200"


def test_unknown_vars_are_named_with_the_closest_option() -> None:
    known = ["sglang_server_window", "sglang_server_topk", "sglang_server_budget"]
    given = ["sglang_server_window", "sglang_server_windw", "sglang_server_zzz_mine"]
    assert filters.sglang_unknown_vars(given, known, "sglang_server_") == [
        "sglang_server_windw (did you mean sglang_server_window?)",
        "sglang_server_zzz_mine",
    ]
    assert filters.sglang_unknown_vars(known, known, "sglang_server_") == []
