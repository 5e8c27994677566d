"""Flag dialects per emulated SGLang version, and start-up validation like ServerArgs."""

from __future__ import annotations

import subprocess

import pytest
from conftest import EMULATOR_DIR, SYSTEM_PYTHON, ModelDirs
from sglang_emulator import VERSIONS
from sglang_emulator.flags import (
    ALGORITHMS,
    build_parser,
    resolve,
    server_args_fields,
    window_field,
)
from sglang_emulator.settings import Settings

OLD_WINDOW = "--speculative-dflash-draft-window-size"
NEW_WINDOW = "--speculative-draft-window-size"


def run_cli(
    args: list[str], env: dict[str, str] | None = None, version: str = "0.5.23"
) -> subprocess.CompletedProcess[str]:
    """Runs the emulator to completion: for start-up failures that exit on their own."""
    full_env = {
        "PYTHONPATH": str(EMULATOR_DIR),
        "SGLANG_EMU_LOAD_SECONDS": "0.2",
        "SGLANG_EMU_VERSION": version,
        **(env or {}),
    }
    return subprocess.run(
        [SYSTEM_PYTHON, "-m", "sglang_emulator", "--port", "1", *args],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=20,
    )


def dflash(dirs: ModelDirs, *extra: str) -> list[str]:
    return [
        "--model-path", str(dirs.model),
        "--speculative-algorithm", "DFLASH",
        "--speculative-draft-model-path", str(dirs.drafter),
        *extra,
    ]  # fmt: skip


def parse(version: str, argv: list[str], env: dict[str, str] | None = None) -> dict:
    settings = Settings.from_env({"SGLANG_EMU_VERSION": version, **(env or {})})
    ns = build_parser(version).parse_args(argv)
    return resolve(ns, settings, argv)


@pytest.mark.parametrize(
    ("version", "flag", "accepted"),
    [
        ("0.5.11", OLD_WINDOW, True),
        ("0.5.11", NEW_WINDOW, False),
        ("0.5.15", OLD_WINDOW, True),
        ("0.5.15", NEW_WINDOW, True),
        ("0.5.19", OLD_WINDOW, True),
        ("0.5.19", NEW_WINDOW, True),
        ("0.5.23", OLD_WINDOW, False),
        ("0.5.23", NEW_WINDOW, True),
        ("ddtree", OLD_WINDOW, True),  # the seeds started the fork with the old name
        ("ddtree", NEW_WINDOW, True),
    ],
)
def test_window_flag_dialects(model_dirs: ModelDirs, version: str, flag: str, accepted: bool):
    argv = dflash(model_dirs, flag, "2048")
    if accepted:
        args = parse(version, argv)
        field = (
            "speculative_dflash_draft_window_size"
            if version == "0.5.11"
            else "speculative_draft_window_size"
        )
        assert window_field(version) == field
        assert args[field] == 2048
        other = {"speculative_dflash_draft_window_size", "speculative_draft_window_size"} - {field}
        assert not other & set(args)
    else:
        with pytest.raises(SystemExit) as exc:
            parse(version, argv)
        assert exc.value.code == 2


@pytest.mark.parametrize("version", ["0.5.15", "0.5.19", "ddtree"])
def test_old_window_flag_is_a_hidden_deprecated_alias(version: str):
    actions = {o: a for a in build_parser(version)._actions for o in a.option_strings}
    old, new = actions[OLD_WINDOW], actions[NEW_WINDOW]
    assert old.dest == new.dest == "speculative_draft_window_size"
    assert old.help == "==SUPPRESS==" and new.help != "==SUPPRESS=="


def test_old_window_flag_is_an_argparse_error_in_0_5_23(model_dirs: ModelDirs):
    res = run_cli(dflash(model_dirs, OLD_WINDOW, "2048"))
    assert res.returncode == 2
    assert "unrecognized arguments: --speculative-dflash-draft-window-size 2048" in res.stderr
    assert "Load weight begin" not in res.stderr + res.stdout


@pytest.mark.parametrize("version", ["0.5.15", "0.5.19"])
def test_deprecated_alias_warns_like_sglang(
    model_dirs: ModelDirs, capsys: pytest.CaptureFixture, version: str
):
    # DeprecatedAliasStoreAction (arg_groups/argparse_actions.py) warns through logging before
    # SGLang configures it: Python's last-resort handler prints the bare, coloured message.
    args = parse(version, dflash(model_dirs, OLD_WINDOW, "4096"))
    assert args["speculative_draft_window_size"] == 4096
    assert capsys.readouterr().err.startswith(
        "\033[1;33m'--speculative-dflash-draft-window-size' is deprecated and will be removed "
        "in a future release. Use '--speculative-draft-window-size' instead.\033[0m\n"
    )


@pytest.mark.parametrize(
    ("version", "argv_tail"),
    [
        ("0.5.23", ["--speculative-ddtree-budget", "16"]),
        ("0.5.23", ["--no-such-flag"]),
        ("0.5.23", ["--cuda-graph-max-bs", "8"]),  # ambiguous: -decode or -prefill
        ("0.5.11", ["--speculative-algorithm", "MEDUSA"]),
        ("0.5.11", ["--speculative-algorithm", "DDTREE"]),
        ("0.5.11", ["--speculative-algorithm", "dflash"]),  # choices are exact
        ("0.5.11", ["--cuda-graph-max-bs-decode", "8"]),
    ],
)
def test_unknown_flags_and_choices_exit_2(
    model_dirs: ModelDirs, version: str, argv_tail: list[str], capsys: pytest.CaptureFixture
):
    with pytest.raises(SystemExit) as exc:
        parse(version, ["--model-path", str(model_dirs.model), *argv_tail])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "sglang serve: error:" in err
    assert any(s in err for s in ("unrecognized arguments", "invalid choice", "ambiguous option"))


@pytest.mark.parametrize(
    ("version", "algorithm", "message"),
    [
        ("0.5.15", "MEDUSA", "Unknown speculative algorithm name: MEDUSA"),
        ("0.5.19", "medusa", "Unknown speculative algorithm name: MEDUSA"),  # upper-cased first
        ("0.5.23", "MEDUSA", "Unknown speculative algorithm name: MEDUSA"),
        ("0.5.23", "DDTREE", "Unknown speculative algorithm name: DDTREE"),
        ("0.5.15", "DSPARK", "Unknown speculative algorithm name: DSPARK"),
        ("0.5.19", "DSPARK", "--speculative-algorithm DSPARK is not emulated"),
    ],
)
def test_unknown_algorithm_is_a_value_error_from_0_5_12(
    model_dirs: ModelDirs, version: str, algorithm: str, message: str
):
    # No argparse choices from 0.5.12: SpeculativeAlgorithm.from_string raises ValueError
    # during resolution, a traceback and exit status 1.
    res = run_cli(
        ["--model-path", str(model_dirs.model), "--speculative-algorithm", algorithm],
        version=version,
    )
    assert res.returncode == 1
    assert "Traceback (most recent call last)" in res.stderr
    assert f"ValueError: {message}" in res.stderr or f"ValueError: sglang emulator: {message}" in (
        res.stderr
    )


def test_algorithm_names_per_version(model_dirs: ModelDirs):
    assert "DDTREE" in ALGORITHMS["ddtree"] and "DDTREE" not in ALGORITHMS["0.5.23"]
    lower = ["--model-path", str(model_dirs.model), "--speculative-algorithm", "dflash",
             "--speculative-draft-model-path", str(model_dirs.drafter)]  # fmt: skip
    args = parse("0.5.23", lower)
    assert args["speculative_algorithm"] == "DFLASH"  # any case from 0.5.12
    for version in ("0.5.11", "0.5.23"):
        nextn = parse(version, ["--model-path", str(model_dirs.model),
                                "--speculative-algorithm", "NEXTN"])  # fmt: skip
        assert nextn["speculative_algorithm"] == "EAGLE"  # NEXTN is EAGLE's alias everywhere


@pytest.mark.parametrize("version", list(VERSIONS))
def test_resolved_fields_are_the_server_args_fields(model_dirs: ModelDirs, version: str):
    for argv in (
        ["--model-path", str(model_dirs.model)],
        dflash(model_dirs),
        ["--model-path", str(model_dirs.model), "--speculative-algorithm", "NGRAM"],
    ):
        assert list(parse(version, argv)) == server_args_fields(version)
    fields = server_args_fields(version)
    assert ("speculative_ddtree_budget" in fields) == (version == "ddtree")
    assert "speculative_ddtree_max_topk" not in fields  # an environment variable only
    assert ("tp_size" in fields) and ("tensor_parallel_size" not in fields)


def test_flag_aliases(model_dirs: ModelDirs):
    # `--tp` is no SGLang option: argparse takes it as the unambiguous prefix of `--tp-size`.
    args = parse(
        "0.5.23",
        ["--model", str(model_dirs.model), "--tp", "8", "--speculative-algorithm", "DFLASH",
         "--speculative-draft-model", str(model_dirs.drafter)],
    )  # fmt: skip
    assert args["model_path"] == str(model_dirs.model)
    assert args["tp_size"] == 8
    assert args["speculative_draft_model_path"] == str(model_dirs.drafter)
    # 0.5.11 parses into tensor_parallel_size; ServerArgs.from_cli_args makes it tp_size.
    assert (
        parse("0.5.11", ["--model-path", str(model_dirs.model), "--tp-size", "4"])["tp_size"] == 4
    )


def test_cuda_graph_max_bs_per_version(model_dirs: ModelDirs, capsys: pytest.CaptureFixture):
    base = ["--model-path", str(model_dirs.model)]
    assert parse("0.5.11", [*base, "--cuda-graph-max-bs", "8"])["cuda_graph_max_bs"] == 8
    assert parse("0.5.15", [*base, "--cuda-graph-max-bs", "8"])["cuda_graph_max_bs_decode"] == 8
    assert "'--cuda-graph-max-bs' is deprecated" in capsys.readouterr().err
    args = parse("0.5.23", [*base, "--cuda-graph-max-bs-decode", "8"])
    assert args["cuda_graph_max_bs_decode"] == 8 and "cuda_graph_max_bs" not in args


def test_dflash_resolution_like_sglang(model_dirs: ModelDirs, capsys: pytest.CaptureFixture):
    args = parse(
        "0.5.23",
        dflash(model_dirs, "--speculative-num-steps", "3", "--speculative-eagle-topk", "4"),
    )
    assert args["speculative_num_steps"] == 1
    assert args["speculative_eagle_topk"] == 1
    assert args["speculative_num_draft_tokens"] == 16
    assert args["max_running_requests"] == 48
    err = capsys.readouterr().err
    assert "DFLASH only supports speculative_num_steps == 1" in err
    assert "DFLASH only supports speculative_eagle_topk == 1" in err


def test_explicit_max_running_requests_is_kept(model_dirs: ModelDirs):
    args = parse("0.5.23", dflash(model_dirs, "--max-running-requests", "32"))
    assert args["max_running_requests"] == 32


def test_block_size_comes_from_the_drafter_config(make_model_dirs):
    dirs8 = make_model_dirs(block_size=8)
    assert parse("0.5.23", dflash(dirs8))["speculative_num_draft_tokens"] == 8
    no_key = make_model_dirs(block_size=None)
    assert parse("0.5.23", dflash(no_key))["speculative_num_draft_tokens"] == 16


@pytest.mark.parametrize(
    "extra",
    [
        ["--speculative-dflash-block-size", "8"],
        ["--speculative-num-draft-tokens", "12"],
        [NEW_WINDOW, "8"],
    ],
)
def test_inconsistent_dflash_settings_fail_with_a_traceback(model_dirs: ModelDirs, extra):
    res = run_cli(dflash(model_dirs, *extra))
    assert res.returncode == 1
    assert "Traceback (most recent call last)" in res.stderr
    assert "ValueError" in res.stderr


def test_dflash_needs_a_draft_model(model_dirs: ModelDirs):
    res = run_cli(["--model-path", str(model_dirs.model), "--speculative-algorithm", "DFLASH"])
    assert res.returncode == 1
    assert "requires setting --speculative-draft-model-path" in res.stderr


def test_missing_model_dir_fails_during_loading(tmp_path):
    res = run_cli(["--model-path", str(tmp_path / "absent")])
    assert res.returncode == 1
    assert "server_args=" in res.stderr  # got past argument parsing: it failed loading
    assert "Traceback (most recent call last)" in res.stderr
    assert "config.json" in res.stderr


def test_ddtree_fork_flags(model_dirs: ModelDirs):
    argv = [
        "--model-path", str(model_dirs.model),
        "--speculative-algorithm", "DDTREE",
        "--speculative-draft-model-path", str(model_dirs.drafter),
        "--speculative-ddtree-budget", "24",
        OLD_WINDOW, "2048",
    ]  # fmt: skip
    args = parse("ddtree", argv, {"SGLANG_DDTREE_MAX_TOPK": "4"})
    assert args["speculative_ddtree_budget"] == 24
    assert args["speculative_draft_window_size"] == 2048
    # topk is SGLANG_DDTREE_MAX_TOPK, an environment variable: not a server argument
    assert "speculative_ddtree_max_topk" not in args
    # No budget given: the field stays unset (the fork's worker uses block size - 1).
    assert parse("ddtree", argv[:6])["speculative_ddtree_budget"] is None


def test_window_must_be_positive(model_dirs: ModelDirs):
    res = run_cli(dflash(model_dirs, NEW_WINDOW, "0"))
    assert res.returncode == 1
    assert "ValueError: --speculative-draft-window-size must be positive, got 0." in res.stderr
    res = run_cli(dflash(model_dirs, OLD_WINDOW, "8"), version="0.5.11")
    assert res.returncode == 1
    assert "ValueError: DFLASH --speculative-dflash-draft-window-size must be >= " in res.stderr
