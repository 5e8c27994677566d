"""Command line: `python -m bench run ...` and `python -m bench speedup BASE SPEC`."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.capacity import DEFAULT_MAX_TRIALS, DEFAULT_PRECISION, DEFAULT_SHARE, Search, Slo
from bench.errors import BadArguments, BenchError
from bench.metrics import MAX_SEND_LAG_MS
from bench.prompt_sets import CATEGORIES
from bench.workload import parse_float, parse_float_list, parse_int_list


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__, allow_abbrev=False)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="benchmark one server configuration", allow_abbrev=False)
    r.add_argument("--url", required=True, help="server base URL, e.g. http://127.0.0.1:30000")
    r.add_argument(
        "--contexts",
        required=True,
        help="prompt lengths in tokens, e.g. 512,8k,32k; natural: chat-shaped prompts as rendered",
    )
    r.add_argument(
        "--concurrency",
        help="closed-loop cells: requests kept in flight, e.g. 1,4,16,48 (this, --request-rate"
        " or both)",
    )
    r.add_argument(
        "--request-rate",
        help="open-loop cells: requests sent per second on a seeded schedule, e.g. 1,2.5,10",
    )
    r.add_argument(
        "--burstiness",
        help="open loop: shape of the gamma-distributed gaps between sends (default 1: Poisson;"
        " below 1 burstier, above 1 more regular)",
    )
    r.add_argument(
        "--max-concurrency",
        help="open loop: at most this many requests in flight; an arrival waits for a slot, and"
        " that wait counts as send lag",
    )
    r.add_argument(
        "--open-loop-seconds",
        help="open loop: requests per cell = max(--min-requests, ceil(rate * this)) (default 60)",
    )
    r.add_argument(
        "--max-send-lag-ms",
        help="an open-loop cell whose p99 send lag is above this is recorded as invalid: the"
        f" client fell behind its schedule (default {MAX_SEND_LAG_MS:g})",
    )
    r.add_argument(
        "--capacity",
        action="store_true",
        help="search each cell's capacity: the highest open-loop rate meeting the SLO"
        " (bench/capacity.py), on this server, every trial recorded as an open-loop cell",
    )
    r.add_argument("--slo-ttft-ms", help="capacity: the TTFT target of a good request")
    r.add_argument("--slo-tpot-ms", help="capacity: the TPOT target of a good request")
    r.add_argument(
        "--slo-share",
        help=f"capacity: the share of good requests a rate must reach (default {DEFAULT_SHARE:g},"
        " goodput's attainment)",
    )
    r.add_argument("--capacity-start-rate", help="capacity: the first trial's rate (default 1)")
    r.add_argument(
        "--capacity-precision",
        help=f"capacity: the bracket's relative width to stop at (default {DEFAULT_PRECISION:g})",
    )
    r.add_argument(
        "--capacity-max-trials",
        help=f"capacity: trials per search at most (default {DEFAULT_MAX_TRIALS})",
    )
    r.add_argument(
        "--capacity-max-seconds", help="capacity: seconds per search at most (default 3600)"
    )
    r.add_argument(
        "--output-len",
        default="256",
        help="output tokens per request (list); natural: until the model ends its turn, capped"
        " by the request's max_tokens (else --natural-max-tokens)",
    )
    r.add_argument(
        "--categories",
        default="chat",
        help=f"prompt sets among {','.join(CATEGORIES)}: chat is the built-in conversations of"
        " five domains, dataset the --dataset file's, the others raw text or token windows",
    )
    r.add_argument(
        "--dataset",
        type=Path,
        help="your own conversations: JSONL of chat requests (messages), JSONL of prompts"
        " (prompt) or ShareGPT JSON (conversations); the category dataset and the greedy set",
    )
    r.add_argument("--dataset-format", default="auto", help="chat, prompts, sharegpt or auto")
    r.add_argument("--dataset-sample", type=int, help="use this many requests of the file")
    r.add_argument("--dataset-seed", type=int, default=0, help="seed of --dataset-sample")
    r.add_argument("--natural-max-tokens", type=int, default=1024)
    r.add_argument(
        "--greedy-prompts",
        type=int,
        default=16,
        help="greedy-output check: prompts answered at temperature 0, one at a time (0: none)",
    )
    r.add_argument("--greedy-max-tokens", type=int, default=64)
    r.add_argument(
        "--greedy-concurrency",
        type=int,
        default=1,
        help="greedy prompts in flight: 1 for the check; more only to measure its noise floor",
    )
    r.add_argument("--out", required=True, type=Path, help="directory for the records")
    r.add_argument("--repetitions", type=int, default=1)
    r.add_argument(
        "--more-repetitions",
        metavar="JSON",
        help="after --repetitions, as many again while the point may still be the best, up to a"
        " cap (bench/more_repetitions.py; the sweep's planner writes this rule)",
    )
    r.add_argument(
        "--requests-per-slot",
        type=int,
        default=4,
        help="requests per cell = max(--min-requests, concurrency * this)",
    )
    r.add_argument("--min-requests", type=int, default=8)
    r.add_argument("--warmup", type=int, default=1, help="unmeasured requests before each cell")
    r.add_argument("--temperature", type=float, default=0.0)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument(
        "--api-key",
        default=None,
        help="server API key (default: $SGLANG_API_KEY); never written to records",
    )
    r.add_argument("--redo", action="store_true", help="rerun cells that are already recorded")
    r.add_argument(
        "--redo-failed", action="store_true", help="rerun recorded cells that had failed requests"
    )
    r.add_argument("--request-timeout", type=float, default=1800.0, help="seconds per request")
    r.add_argument(
        "--idle-timeout",
        type=float,
        default=300.0,
        help="seconds without a byte before a request counts as failed",
    )
    r.add_argument(
        "--archive",
        type=Path,
        help="after the run, pack the records, /server_info, the unit file and the journal of the"
        " verified server run into this .tar.gz (needs --unit and --invocation)",
    )
    r.add_argument("--unit", help="the server's systemd unit (with --archive)")
    r.add_argument(
        "--invocation",
        help="the verified InvocationID (with --archive); another one running fails the archive",
    )
    live = r.add_mutually_exclusive_group()
    live.add_argument("--live", dest="live", action="store_true", default=None)
    live.add_argument("--no-live", dest="live", action="store_false")
    s = sub.add_parser(
        "speedup", help="speed-up of a speculative run over a baseline run", allow_abbrev=False
    )
    s.add_argument("baseline", type=Path)
    s.add_argument("spec", type=Path)
    s.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return p


def _positive(name: str, v: float) -> None:
    if v <= 0:
        raise BadArguments(f"{name} must be positive, got {v}")


_CAPACITY = (
    "capacity_start_rate",
    "capacity_precision",
    "capacity_max_trials",
    "capacity_max_seconds",
)
_SLO = ("slo_ttft_ms", "slo_tpot_ms", "slo_share")


def _capacity(a: argparse.Namespace) -> dict[str, Any]:
    """RunConfig's capacity fields, each value checked and named; {} without --capacity."""
    if not a.capacity:
        for name in (*_SLO, *_CAPACITY):
            if getattr(a, name) is not None:
                flag = "--" + name.replace("_", "-")
                raise BadArguments(f"{flag} applies to a capacity search: give --capacity too")
        return {}
    slo = {
        name[4:]: parse_float(getattr(a, name), "--" + name.replace("_", "-"))
        for name in _SLO
        if getattr(a, name) is not None
    }
    out: dict[str, Any] = {"slo": Slo(**slo)}
    for name in _CAPACITY:
        text = getattr(a, name)
        if text is None:
            continue
        flag = "--" + name.replace("_", "-")
        if name == "capacity_max_trials":
            try:
                out[name] = int(text)
            except ValueError:
                raise BadArguments(f"{flag} must be an integer, got {text!r}") from None
        else:
            out[name] = parse_float(text, flag)
    # the search's own bounds, checked now rather than after the first cells
    Search(
        out.get("capacity_start_rate", 1.0),
        out.get("capacity_precision", DEFAULT_PRECISION),
        out.get("capacity_max_trials", DEFAULT_MAX_TRIALS),
    )
    return out


def _open_loop(a: argparse.Namespace) -> dict[str, Any]:
    """RunConfig's open-loop fields from the command line, each value checked and named."""
    if a.concurrency is None and a.request_rate is None and not a.capacity:
        raise BadArguments(
            "give --concurrency (closed-loop cells), --request-rate (open-loop cells), --capacity"
            " or several"
        )
    given = {
        name: getattr(a, name)
        for name in ("burstiness", "max_concurrency", "open_loop_seconds", "max_send_lag_ms")
        if getattr(a, name) is not None
    }
    if a.request_rate is None and not a.capacity:
        if given:
            flag = "--" + next(iter(given)).replace("_", "-")
            raise BadArguments(f"{flag} applies to open-loop cells: give --request-rate too")
        return {}
    out: dict[str, Any] = {
        "request_rates": []
        if a.request_rate is None
        else parse_float_list(a.request_rate, "--request-rate")
    }
    for name, text in given.items():
        flag = "--" + name.replace("_", "-")
        if name == "max_concurrency":
            try:
                out[name] = int(text)
            except ValueError:
                raise BadArguments(f"{flag} must be a positive integer, got {text!r}") from None
            if out[name] < 1:
                raise BadArguments(f"{flag} must be a positive integer, got {text!r}")
        else:
            out[name] = parse_float(text, flag)
    return out


def _cmd_run(a: argparse.Namespace) -> int:
    from bench.more_repetitions import MoreRule
    from bench.runner import RunConfig, run_benchmark

    if not a.url.startswith(("http://", "https://")):
        raise BadArguments(f"--url must start with http:// or https://, got {a.url!r}")
    for name in ("request_timeout", "idle_timeout"):
        _positive("--" + name.replace("_", "-"), getattr(a, name))
    if a.out.exists() and not a.out.is_dir():
        raise BadArguments(f"--out {a.out} exists and is not a directory")
    if a.archive and not (a.unit and a.invocation):
        raise BadArguments("--archive needs --unit and --invocation (the verified server run)")
    for name in ("natural_max_tokens", "greedy_max_tokens", "greedy_concurrency"):
        _positive("--" + name.replace("_", "-"), getattr(a, name))
    if a.greedy_prompts < 0:
        raise BadArguments(f"--greedy-prompts must be 0 or more, got {a.greedy_prompts}")
    dataset = []
    if a.dataset is not None:
        from bench import datasets

        dataset = datasets.sample(
            a.dataset, a.dataset_sample, a.dataset_seed, a.dataset_format
        ).conversations
    elif a.dataset_sample is not None:
        raise BadArguments("--dataset-sample needs --dataset")
    cfg = RunConfig(
        url=a.url,
        out=a.out,
        contexts=parse_int_list(a.contexts, natural=True),
        concurrencies=[] if a.concurrency is None else parse_int_list(a.concurrency),
        output_lens=parse_int_list(a.output_len, natural=True),
        categories=[c.strip() for c in a.categories.split(",") if c.strip()],
        repetitions=a.repetitions,
        requests_per_slot=a.requests_per_slot,
        min_requests=a.min_requests,
        warmup=a.warmup,
        temperature=a.temperature,
        seed=a.seed,
        api_key=a.api_key or os.environ.get("SGLANG_API_KEY") or None,
        redo=a.redo,
        redo_failed=a.redo_failed,
        request_timeout=a.request_timeout,
        idle_timeout=a.idle_timeout,
        live=a.live,
        dataset=dataset,
        natural_max_tokens=a.natural_max_tokens,
        greedy_prompts=a.greedy_prompts,
        greedy_max_tokens=a.greedy_max_tokens,
        greedy_concurrency=a.greedy_concurrency,
        more=None if a.more_repetitions is None else MoreRule.from_json(a.more_repetitions),
        **_open_loop(a),
        **_capacity(a),
    )
    asyncio.run(run_benchmark(cfg))
    if a.archive:
        from bench.archive import collect

        print(collect(a.url, a.unit, a.invocation, a.out, a.archive))
    return 0


def _cmd_speedup(a: argparse.Namespace) -> int:
    from bench.speedup import compute, format_table

    rows = compute(a.baseline, a.spec)
    print(json.dumps(rows, indent=1) if a.json else format_table(rows))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "run":
            return _cmd_run(args)
        return _cmd_speedup(args)
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("interrupted: completed cells are recorded; rerun to continue", file=sys.stderr)
        return 130
