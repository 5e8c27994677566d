"""SGLang's command-line flags, per emulated version, and their resolution (like ServerArgs).

Every option string added here exists in the emulated release with the same dest and the same
hidden-ness, and the resolved fields are ServerArgs fields of that release
(tests/releases/test_emulator_vs_releases.py checks both against the real releases' parsers).
Source references are to the unpacked wheels, cache/sglang-releases/VERSION/sglang/.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from typing import Any

from . import release
from .logs import warn
from .settings import Settings

DFLASH_DEFAULT_BLOCK_SIZE = 16

# What --speculative-algorithm knows. Up to 0.5.11 argparse `choices` (server_args.py:5367), so an
# unknown name is argparse's exit 2. From 0.5.12 a free string: upper-cased, NEXTN turned into
# EAGLE (0.5.23 arg_groups/speculative_hook.py:109), then SpeculativeAlgorithm.from_string
# raises `ValueError: Unknown speculative algorithm name: X` (0.5.23 spec_info.py:65): a
# traceback and exit status 1. From 0.5.12 these are that enum's members (NONE left out).
ALGORITHMS: dict[str, tuple[str, ...]] = {
    "0.5.11": ("DFLASH", "EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"),
    "0.5.15": ("DFLASH", "EAGLE", "EAGLE3", "FROZEN_KV_MTP", "STANDALONE", "NGRAM"),
    "0.5.19": ("DFLASH", "DSPARK", "EAGLE", "EAGLE3", "FROZEN_KV_MTP", "STANDALONE", "NGRAM"),
    "0.5.23": (
        *("DFLASH", "UNO", "DSPARK", "EAGLE", "EAGLE3"),
        *("FROZEN_KV_MTP", "STANDALONE", "NGRAM"),
    ),
}
ALGORITHMS["ddtree"] = (*ALGORITHMS["0.5.23"], "DDTREE")
ALIASES = {"NEXTN": "EAGLE"}  # resolved in every version (0.5.11 server_args.py:3310)
# What the emulator serves; the other known names fail at start-up (ValueError, exit 1).
EMULATED_ALGORITHMS = ("DFLASH", "DDTREE", "EAGLE", "EAGLE3", "STANDALONE", "NGRAM")
# Options of the DDTree fork that 0.5.23 does not have.
FORK_ONLY_OPTIONS = ("--speculative-ddtree-budget", "--speculative-dflash-draft-window-size")
# Up to 0.5.13 ServerArgs.from_cli_args renames these dests (0.5.11 server_args.py:6677-6681).
FIELD_OF_DEST = {"tensor_parallel_size": "tp_size", "data_parallel_size": "dp_size"}
OLD_WINDOW_FLAG = "--speculative-dflash-draft-window-size"
NEW_WINDOW_FLAG = "--speculative-draft-window-size"


def algorithms(version: str) -> list[str]:
    """The algorithm names a version accepts (its choices, else its enum's members)."""
    return list(ALGORITHMS[version])


def has_algorithm_choices(version: str) -> bool:
    return release(version) < (0, 5, 12)


def window_field(version: str) -> str:
    """Name of the drafter-window field in server_args / server_info for a version."""
    if release(version) < (0, 5, 12):
        return "speculative_dflash_draft_window_size"
    return "speculative_draft_window_size"


def window_flag(version: str) -> str:
    """The window flag the version documents (the old one is hidden or absent from 0.5.13)."""
    return OLD_WINDOW_FLAG if release(version) < (0, 5, 12) else NEW_WINDOW_FLAG


def cuda_graph_field(version: str) -> str:
    """Field of the largest decode batch captured in CUDA graphs (split from 0.5.14 on)."""
    return "cuda_graph_max_bs" if release(version) < (0, 5, 14) else "cuda_graph_max_bs_decode"


class DeprecatedAliasStoreAction(argparse.Action):
    """SGLang's DeprecatedAliasStoreAction (0.5.15 arg_groups/argparse_actions.py:98): stores the
    value under the new flag's dest and warns. The warning comes through `logger.warning` before
    SGLang configures logging, so Python's last-resort handler prints the bare message."""

    def __init__(self, option_strings, dest, new_flag=None, **kwargs):  # type: ignore[no-untyped-def]
        self.new_flag = new_flag
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[no-untyped-def]
        replacement = f" Use '{self.new_flag}' instead." if self.new_flag else ""
        sys.stderr.write(
            f"\033[1;33m'{option_string}' is deprecated and will be removed in a future "
            f"release.{replacement}\033[0m\n"
        )
        sys.stderr.flush()
        setattr(namespace, self.dest, values)


def add_cli_args(parser: argparse.ArgumentParser, version: str) -> None:
    """The emulated version's options (the subset of ServerArgs.add_cli_args the emulator knows)."""
    r = release(version)
    add = parser.add_argument
    add("--model-path", "--model", dest="model_path", type=str, required=True)
    add("--tokenizer-path", type=str, default=None)
    add("--served-model-name", type=str, default=None)
    if r < (0, 5, 14):
        add("--tensor-parallel-size", "--tp-size", dest="tensor_parallel_size", type=int, default=1)
        add("--data-parallel-size", "--dp-size", dest="data_parallel_size", type=int, default=1)
    else:
        add("--tp-size", "--tensor-parallel-size", dest="tp_size", type=int, default=1)
        add("--dp-size", "--data-parallel-size", dest="dp_size", type=int, default=1)
    add("--host", type=str, default="127.0.0.1")
    add("--port", type=int, default=30000)
    add("--api-key", type=str, default=None)
    add("--context-length", type=int, default=None)
    add("--mem-fraction-static", type=float, default=None)
    if r < (0, 5, 14):
        add("--cuda-graph-max-bs", type=int, default=None)
    else:
        add("--cuda-graph-max-bs-decode", type=int, default=None)
        add("--cuda-graph-max-bs-prefill", type=int, default=None)
        if r < (0, 5, 20):  # then gone: `--cuda-graph-max-bs` is an ambiguous prefix (exit 2)
            add(
                "--cuda-graph-max-bs",
                type=int,
                action=DeprecatedAliasStoreAction,
                new_flag="--cuda-graph-max-bs-decode",
                dest="cuda_graph_max_bs_decode",
                help="Deprecated alias for --cuda-graph-max-bs-decode.",
            )
    add("--max-running-requests", type=int, default=None)
    add("--chunked-prefill-size", type=int, default=None)
    add("--enable-metrics", action="store_true")
    add("--disable-radix-cache", action="store_true")
    add("--skip-server-warmup", action="store_true")
    add("--log-level", type=str, default="info")
    add("--trust-remote-code", action="store_true")
    add("--random-seed", type=int, default=None)
    choices = algorithms(version) if has_algorithm_choices(version) else None
    add("--speculative-algorithm", type=str, default=None, choices=choices)
    add(
        "--speculative-draft-model-path",
        "--speculative-draft-model",
        dest="speculative_draft_model_path",
        type=str,
        default=None,
    )
    add("--speculative-num-steps", type=int, default=None)
    add("--speculative-eagle-topk", type=int, default=None)
    add("--speculative-num-draft-tokens", type=int, default=None)
    add("--speculative-dflash-block-size", type=int, default=None)
    wfield = window_field(version)
    add(window_flag(version), dest=wfield, type=int, default=None)
    # The old name: a plain alias in 0.5.12, a hidden deprecated one in 0.5.13-0.5.19, gone in
    # 0.5.20 (exit 2, unrecognized). The DDTree fork accepts it (the seeds started it that way).
    if (0, 5, 12) <= r < (0, 5, 20) or version == "ddtree":
        hidden = r >= (0, 5, 13)
        add(
            OLD_WINDOW_FLAG,
            type=int,
            dest=wfield,
            **(
                {"action": DeprecatedAliasStoreAction, "new_flag": NEW_WINDOW_FLAG}
                if hidden
                else {}
            ),
            help=argparse.SUPPRESS if hidden else None,
        )
    if version == "ddtree":
        add("--speculative-ddtree-budget", type=int, default=None)


def build_parser(version: str) -> argparse.ArgumentParser:
    # prepare_server_args (0.5.23 server_args.py:679): prog "sglang serve", abbreviations allowed.
    parser = argparse.ArgumentParser(prog="sglang serve")
    add_cli_args(parser, version)
    return parser


def server_args_fields(version: str) -> list[str]:
    """The ServerArgs fields the emulator reports for a version (keys of `resolve`'s result)."""
    fields: list[str] = []
    for action in build_parser(version)._actions:
        name = FIELD_OF_DEST.get(action.dest, action.dest)
        if action.option_strings and name != "help" and name not in fields:
            fields.append(name)
    return fields


def drafter_block_size(draft_path: str | None) -> int | None:
    """block_size from the drafter's config.json (top level or under dflash_config)."""
    if not draft_path:
        return None
    try:
        with open(os.path.join(draft_path, "config.json")) as f:
            cfg = json.load(f)
    except (OSError, ValueError) as e:
        warn(
            "Failed to infer DFLASH block_size from draft model config; defaulting "
            f"speculative_num_draft_tokens to {DFLASH_DEFAULT_BLOCK_SIZE}. Error: {e}"
        )
        return None
    size = cfg.get("block_size") or (cfg.get("dflash_config") or {}).get("block_size")
    return int(size) if size else None


def _check_window(a: dict[str, Any], version: str) -> None:
    """The window must be positive: for DFLASH in 0.5.11 (server_args.py:3380), for any
    algorithm from 0.5.12 (0.5.23 arg_groups/speculative_hook.py:219)."""
    wfield = window_field(version)
    window = a[wfield]
    if window is None or window > 0:
        return
    if release(version) < (0, 5, 12):
        raise ValueError(f"DFLASH requires {OLD_WINDOW_FLAG} to be positive, got {window}.")
    raise ValueError(f"{NEW_WINDOW_FLAG} must be positive, got {window}.")


def _resolve_dflash(a: dict[str, Any], version: str) -> None:
    if a["speculative_draft_model_path"] is None:
        raise ValueError(
            "DFLASH speculative decoding requires setting --speculative-draft-model-path."
        )
    for name in ("speculative_num_steps", "speculative_eagle_topk"):
        if a[name] is not None and a[name] != 1:
            warn(f"DFLASH only supports {name} == 1; overriding {name}={a[name]} to 1.")
        a[name] = 1
    block = drafter_block_size(a["speculative_draft_model_path"]) or DFLASH_DEFAULT_BLOCK_SIZE
    for name in ("speculative_dflash_block_size", "speculative_num_draft_tokens"):
        if a[name] is not None and a[name] != block:
            raise ValueError(
                f"--{name.replace('_', '-')}={a[name]} differs from the draft model's "
                f"block_size={block}. For DFLASH they must match."
            )
    a["speculative_num_draft_tokens"] = block
    a["speculative_dflash_block_size"] = block
    if release(version) < (0, 5, 12):
        _check_window(a, version)
    window = a[window_field(version)]
    if window is not None and window < block:
        prefix = f"DFLASH {OLD_WINDOW_FLAG}" if release(version) < (0, 5, 12) else NEW_WINDOW_FLAG
        raise ValueError(
            f"{prefix} must be >= --speculative-num-draft-tokens (block_size). "
            f"window_size={window}, block_size={block}."
        )
    if a["max_running_requests"] is None:
        a["max_running_requests"] = 48
        warn(
            "Max running requests is reset to 48 for speculative decoding. You can override "
            "this by explicitly setting --max-running-requests."
        )


def _resolve_algorithm(a: dict[str, Any], version: str) -> str | None:
    algo = a["speculative_algorithm"]
    if algo is None:
        return None
    if not has_algorithm_choices(version):
        algo = algo.upper()  # argparse's choices are exact; from 0.5.12 any case
    algo = ALIASES.get(algo, algo)
    if release(version) >= (0, 5, 12):
        _check_window(a, version)
    if algo not in ALGORITHMS[version]:
        raise ValueError(f"Unknown speculative algorithm name: {algo}")
    if algo not in EMULATED_ALGORITHMS:
        raise ValueError(
            f"sglang emulator: --speculative-algorithm {algo} is not emulated "
            f"(emulated: {', '.join(EMULATED_ALGORITHMS)})."
        )
    a["speculative_algorithm"] = algo
    return algo


def resolve(ns: argparse.Namespace, settings: Settings, argv: list[str]) -> dict[str, Any]:
    """Resolved server arguments (what /server_info reports); raises ValueError like SGLang."""
    version = settings.version
    dests = _dests(version)
    a: dict[str, Any] = {FIELD_OF_DEST.get(k, k): v for k, v in vars(ns).items() if k in dests}
    if a["tokenizer_path"] is None:
        a["tokenizer_path"] = a["model_path"]
    if a["served_model_name"] is None:
        a["served_model_name"] = a["model_path"]
    algo = _resolve_algorithm(a, version)
    if algo in ("DFLASH", "DDTREE"):
        _resolve_dflash(a, version)
    if algo == "DDTREE":
        # Left unset when not given: the fork's worker takes block_size - 1 (see perf_model).
        budget = a["speculative_ddtree_budget"]
        if budget is not None and budget < 1:
            raise ValueError("--speculative-ddtree-budget must be >= 1.")
    elif algo is not None and algo != "DFLASH":
        if algo == "EAGLE" and not a["speculative_draft_model_path"]:
            # An MTP target (the emulated DeepseekV3 is one) drafts with its own NEXTN layers
            # (0.5.23 arg_groups/speculative_hook.py:1138-1143).
            a["speculative_draft_model_path"] = a["model_path"]
        if algo in ("EAGLE3", "STANDALONE") and not a["speculative_draft_model_path"]:
            raise ValueError(
                f"{algo} speculative decoding requires setting --speculative-draft-model-path."
            )
        defaults = {
            "speculative_num_steps": 3,
            "speculative_eagle_topk": 1,
            "speculative_num_draft_tokens": 4,
        }
        for name, value in defaults.items():
            if a[name] is None:
                a[name] = value
    if a["max_running_requests"] is None:
        a["max_running_requests"] = 256
    cuda_graph = cuda_graph_field(version)
    if a[cuda_graph] is None:
        a[cuda_graph] = a["max_running_requests"]
    if a["mem_fraction_static"] is None:
        a["mem_fraction_static"] = 0.88
    if a["chunked_prefill_size"] is None:
        a["chunked_prefill_size"] = 8192
    return a


@functools.cache
def _dests(version: str) -> frozenset[str]:
    return frozenset(a.dest for a in build_parser(version)._actions if a.option_strings) - {"help"}


def launch_command(argv: list[str]) -> str:
    """/server_info `launch_command` (0.5.23 on): the arguments as given, joined by spaces
    (0.5.23 server_args.py:717, sampling/watermarking/core.py:134)."""
    return " ".join(argv)
