"""Flag dialects per emulated SGLang version, and start-up validation like ServerArgs."""

from __future__ import annotations

import subprocess

import pytest
from conftest import EMULATOR_DIR, SYSTEM_PYTHON, ModelDirs
from sglang_emulator.flags import build_parser, resolve
from sglang_emulator.settings import Settings

OLD_WINDOW = "--speculative-dflash-draft-window-size"
NEW_WINDOW = "--speculative-draft-window-size"


def run_cli(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Runs the emulator to completion: for start-up failures that exit on their own."""
    full_env = {"PYTHONPATH": str(EMULATOR_DIR), "SGLANG_EMU_LOAD_SECONDS": "0.2", **(env or {})}
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
        ("0.5.19", OLD_WINDOW, True),
        ("0.5.19", NEW_WINDOW, True),
        ("0.5.23", OLD_WINDOW, False),
        ("0.5.23", NEW_WINDOW, True),
        ("ddtree", OLD_WINDOW, False),
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
            else ("speculative_draft_window_size")
        )
        assert args[field] == 2048
    else:
        with pytest.raises(SystemExit) as exc:
            parse(version, argv)
        assert exc.value.code == 2


def test_old_window_flag_is_an_argparse_error_in_0_5_23(model_dirs: ModelDirs):
    res = run_cli(dflash(model_dirs, OLD_WINDOW, "2048"))
    assert res.returncode == 2
    assert "unrecognized arguments: --speculative-dflash-draft-window-size 2048" in res.stderr
    assert "Load weight begin" not in res.stderr + res.stdout


def test_deprecated_alias_warns_in_0_5_19(model_dirs: ModelDirs, capsys: pytest.CaptureFixture):
    parse("0.5.19", dflash(model_dirs, OLD_WINDOW, "4096"))
    assert "deprecated" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("version", "argv_tail"),
    [
        ("0.5.23", ["--speculative-algorithm", "DDTREE"]),
        ("0.5.23", ["--speculative-ddtree-budget", "16"]),
        ("0.5.23", ["--speculative-algorithm", "MEDUSA"]),
        ("0.5.23", ["--no-such-flag"]),
    ],
)
def test_unknown_flags_and_choices_exit_2(
    model_dirs: ModelDirs, version: str, argv_tail: list[str], capsys: pytest.CaptureFixture
):
    with pytest.raises(SystemExit) as exc:
        parse(version, ["--model-path", str(model_dirs.model), *argv_tail])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments" in err or "invalid choice" in err


def test_flag_aliases(model_dirs: ModelDirs):
    args = parse(
        "0.5.23",
        ["--model", str(model_dirs.model), "--tp", "8", "--speculative-algorithm", "DFLASH",
         "--speculative-draft-model", str(model_dirs.drafter)],
    )  # fmt: skip
    assert args["model_path"] == str(model_dirs.model)
    assert args["tp_size"] == 8
    assert args["speculative_draft_model_path"] == str(model_dirs.drafter)


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
    ]  # fmt: skip
    args = parse("ddtree", argv, {"SGLANG_DDTREE_MAX_TOPK": "4"})
    assert args["speculative_ddtree_budget"] == 24
    assert args["speculative_ddtree_max_topk"] == 4
    assert parse("ddtree", argv)["speculative_ddtree_max_topk"] == 6
