"""SGLang's command-line flags, per emulated version, and their resolution (like ServerArgs)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from .logs import warn
from .settings import Settings

BASE_ALGORITHMS = ["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH"]
DFLASH_DEFAULT_BLOCK_SIZE = 16


def window_field(version: str) -> str:
    """Name of the drafter-window field in server_args / server_info for a version."""
    return (
        "speculative_dflash_draft_window_size"
        if version == "0.5.11"
        else ("speculative_draft_window_size")
    )


class _DeprecatedAlias(argparse.Action):
    """0.5.19: the old window flag still works, hidden, with a warning."""

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[no-untyped-def]
        warn(
            f"{option_string} is deprecated and will be removed in a future release; "
            "use --speculative-draft-window-size instead."
        )
        setattr(namespace, self.dest, values)


def build_parser(version: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="launch_server.py")
    add = p.add_argument
    add("--model-path", "--model", dest="model_path", type=str, required=True)
    add("--tokenizer-path", type=str, default=None)
    add("--served-model-name", type=str, default=None)
    add("--tp-size", "--tp", dest="tp_size", type=int, default=1)
    add("--dp-size", "--dp", dest="dp_size", type=int, default=1)
    add("--host", type=str, default="127.0.0.1")
    add("--port", type=int, default=30000)
    add("--api-key", type=str, default=None)
    add("--context-length", type=int, default=None)
    add("--mem-fraction-static", type=float, default=None)
    add("--cuda-graph-max-bs", type=int, default=None)
    add("--max-running-requests", type=int, default=None)
    add("--chunked-prefill-size", type=int, default=None)
    add("--enable-metrics", action="store_true")
    add("--disable-radix-cache", action="store_true")
    add("--skip-server-warmup", action="store_true")
    add("--log-level", type=str, default="info")
    add("--trust-remote-code", action="store_true")
    add("--random-seed", type=int, default=None)
    algorithms = [*BASE_ALGORITHMS, *(["DDTREE"] if version == "ddtree" else [])]
    add("--speculative-algorithm", type=str, default=None, choices=algorithms)
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
    if version == "0.5.11":
        add("--speculative-dflash-draft-window-size", dest="window", type=int, default=None)
    else:
        add("--speculative-draft-window-size", dest="window", type=int, default=None)
        if version == "0.5.19":
            add(
                "--speculative-dflash-draft-window-size",
                dest="window",
                type=int,
                action=_DeprecatedAlias,
                help=argparse.SUPPRESS,
            )
    if version == "ddtree":
        add("--speculative-ddtree-budget", type=int, default=None)
    return p


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


def _resolve_dflash(a: dict[str, Any], wfield: str) -> None:
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
    window = a[wfield]
    if window is not None and window < block:
        raise ValueError(
            "--speculative-draft-window-size must be >= --speculative-num-draft-tokens "
            f"(block_size). window_size={window}, block_size={block}."
        )
    if a["max_running_requests"] is None:
        a["max_running_requests"] = 48
        warn(
            "Max running requests is reset to 48 for speculative decoding. You can override "
            "this by explicitly setting --max-running-requests."
        )


def resolve(ns: argparse.Namespace, settings: Settings, argv: list[str]) -> dict[str, Any]:
    """Resolved server arguments (what /server_info reports); raises ValueError like SGLang."""
    a = {k: v for k, v in vars(ns).items() if k != "window"}
    wfield = window_field(settings.version)
    a[wfield] = ns.window
    a.setdefault("speculative_ddtree_budget", None)
    if a["tokenizer_path"] is None:
        a["tokenizer_path"] = a["model_path"]
    if a["served_model_name"] is None:
        a["served_model_name"] = a["model_path"]
    algo = a["speculative_algorithm"]
    if algo in ("DFLASH", "DDTREE"):
        _resolve_dflash(a, wfield)
    if algo == "DDTREE":
        if a["speculative_ddtree_budget"] is None:
            a["speculative_ddtree_budget"] = a["speculative_num_draft_tokens"]
        if a["speculative_ddtree_budget"] < 1:
            raise ValueError("--speculative-ddtree-budget must be >= 1.")
        a["speculative_ddtree_max_topk"] = settings.ddtree_max_topk
    elif algo is not None:
        if algo in ("EAGLE", "EAGLE3", "STANDALONE") and not a["speculative_draft_model_path"]:
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
    if a["cuda_graph_max_bs"] is None:
        a["cuda_graph_max_bs"] = a["max_running_requests"]
    if a["mem_fraction_static"] is None:
        a["mem_fraction_static"] = 0.88
    if a["chunked_prefill_size"] is None:
        a["chunked_prefill_size"] = 8192
    return a


def launch_command(argv: list[str]) -> str:
    return " ".join([sys.executable, "-m", "sglang.launch_server", *argv])
