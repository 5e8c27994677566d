"""python -m sweep check|plan|next|finish-point|fail-point|report|winner|deployed|run|status|
wheelhouse

The controller side of a sweep (the hosts only ever get the bench package, bench/).
sweep.yml calls check, plan, next, finish-point and fail-point (check, plan, finish-point and
fail-point read JSON on stdin) and report; the sglang_bench role calls wheelhouse; users call report
(any time, a partial sweep too), run and status. Contracts: docs/architecture.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sweep.store.greedy import MATCH_MIN


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m sweep", description=__doc__, allow_abbrev=False)
    sub = p.add_subparsers(dest="command", required=True)

    def command(name: str, summary: str) -> argparse.ArgumentParser:
        # add_parser does not inherit allow_abbrev: each subcommand must refuse prefixes itself
        return sub.add_parser(name, help=summary, allow_abbrev=False)

    command(
        "check",
        "validate a sweep's command line and first host's variables, no host asked (JSON on stdin)",
    )

    s = command("plan", "start a sweep's invocation: validate, expand, record (JSON on stdin)")
    s.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan, write nothing (but a dataset's sample, a cache)",
    )

    s = command("next", "the next run for a host: run, wait or done (sweep/cli/planner.py)")
    s.add_argument("sweep_dir", type=Path)
    s.add_argument("host")
    s.add_argument(
        "--wait",
        type=float,
        default=0.0,
        help="while the answer is wait, ask again for up to this many seconds",
    )

    s = command("finish-point", "record a complete point (info JSON on stdin)")
    s.add_argument("sweep_dir", type=Path)
    s.add_argument("--archive", type=Path, required=True)

    s = command("fail-point", "record a failed point (info JSON on stdin)")
    s.add_argument("sweep_dir", type=Path)

    s = command("report", "summary.csv, report.md and plots of a (partial) sweep")
    s.add_argument("sweep_dir", type=Path)
    s.add_argument("--no-plots", action="store_true")
    s.add_argument("--json", action="store_true")
    s.add_argument(
        "--objective",
        default="throughput",
        help="what wins a cell: throughput (default), tpot or goodput (needs both SLOs)",
    )
    s.add_argument("--slo-ttft-ms", type=float, help="goodput: TTFT limit per request, ms")
    s.add_argument("--slo-tpot-ms", type=float, help="goodput: TPOT limit per request, ms")
    s.add_argument(
        "--greedy-match-min",
        type=float,
        default=MATCH_MIN,
        help="share of a point's greedy answers that must equal the baseline's "
        f"(default {MATCH_MIN})",
    )

    command(
        "winner",
        "the point deploy.yml rolls out: a cell's winner, or a named point (JSON on stdin)",
    )

    s = command("canary", "the canary's bench against the sweep's figures (JSON on stdin)")
    s.add_argument("sweep_dir", type=Path)
    s.add_argument("--archive", type=Path, required=True, help="the verification bench's archive")

    s = command("deployed", "record that a host now serves a sweep's point (JSON on stdin)")
    s.add_argument("sweep_dir", type=Path)

    s = command("run", "run sweep.yml through ansible-runner")
    s.add_argument("-e", "--extra-vars", action="append", default=[], dest="extra")
    s.add_argument("-i", "--inventory")
    s.add_argument("--private-dir", type=Path, default=Path("artifacts/sweep-runner"))
    s.add_argument("--ident")
    s.add_argument("--detach", action="store_true", help="start in the background, print ident")

    s = command("status", "state of a run started by `run`")
    s.add_argument("ident")
    s.add_argument("--private-dir", type=Path, default=Path("artifacts/sweep-runner"))

    s = command("wheelhouse", "build the bench wheelhouse for a host (controller)")
    s.add_argument("--project", type=Path, required=True)
    s.add_argument("--cache", type=Path, required=True)
    s.add_argument("--python-version", required=True)
    s.add_argument("--machine", required=True)
    return p


def _stdin_json() -> dict[str, Any]:
    data = json.loads(sys.stdin.read() or "{}")
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object on stdin")
    return data


def _run(a: argparse.Namespace) -> int:
    if a.command == "check":
        from sweep.cli.inputs import read_inputs

        given = read_inputs(_stdin_json())
        ds = given.dataset
        print(
            json.dumps(
                {
                    "sweep": given.name,
                    "points": [p.point_id for p in given.points],
                    "bench": given.bench,
                    "dataset": None
                    if ds is None
                    else f"{len(ds.conversations)} of {ds.total} requests ({ds.fmt}; sources "
                    f"{', '.join(ds.sources())}; {ds.skipped} skipped)",
                }
            )
        )
        return 0
    if a.command == "plan":
        from sweep.cli import planner
        from sweep.cli.plan import make_plan
        from sweep.store import progress

        if a.dry_run:
            print(json.dumps(make_plan(_stdin_json()).to_dict()))
            return 0
        out = planner.start(_stdin_json(), planner.forks_of_playbook())
        sweep_dir = Path(out["root"])
        progress.append(sweep_dir, f"{progress.line(sweep_dir)} | {out['summary']}")
        print(json.dumps(out))
        return 0
    if a.command == "next":
        from sweep.cli import planner

        print(planner.dumps(planner.wait_for_run(a.sweep_dir, a.host, a.wait)))
        return 0
    if a.command in ("finish-point", "fail-point"):
        from sweep.store import progress, record

        info = record.load_info(sys.stdin.read())
        if a.command == "finish-point":
            record.finish_point(a.sweep_dir, a.archive, info)
        else:
            record.fail_point(a.sweep_dir, info)
            record.remember_failure(a.sweep_dir, info)
        text = progress.line(a.sweep_dir, info["point"]["id"])
        progress.append(a.sweep_dir, text)
        print(text)
        return 0
    if a.command == "report":
        from sweep.report.report import write_report

        out = write_report(
            a.sweep_dir,
            with_plots=not a.no_plots,
            objective=a.objective,
            slo_ttft_ms=a.slo_ttft_ms,
            slo_tpot_ms=a.slo_tpot_ms,
            greedy_match_min=a.greedy_match_min,
        )
        if a.json:
            print(json.dumps(out, indent=1))
        else:
            print(f"report: {out['report']}\npage: {out['html']}\nsummary: {out['summary']}")
            for line in out["best"]:
                print(f"best {line}")
        return 0
    if a.command == "winner":
        from sweep.rollout import deploy

        print(json.dumps(deploy.choose(_stdin_json())))
        return 0
    if a.command == "canary":
        from sweep.rollout import canary

        inp = _stdin_json()
        print(
            json.dumps(
                canary.check(
                    a.sweep_dir,
                    a.archive,
                    str(inp["point"]),
                    dict(inp["cell"]),
                    str(inp.get("host_class") or ""),
                    dict(inp.get("objective") or {}),
                    float(inp.get("tolerance", canary.TOLERANCE)),
                    float(inp.get("greedy_match_min", MATCH_MIN)),
                    str(inp.get("unmeasured_ok")).lower() == "true",
                )
            )
        )
        return 0
    if a.command == "deployed":
        from sweep.rollout import deploy

        deploy.record(a.sweep_dir, _stdin_json())
        return 0
    if a.command == "run":
        from sweep.cli import runner

        extravars = runner.parse_extravars(a.extra)
        ident = a.ident or runner.new_ident()
        if a.detach:
            pid = runner.run_detached(extravars, a.private_dir.resolve(), ident, a.inventory)
            print(f"{ident} (pid {pid}); inspect: python -m sweep status {ident}")
            return 0
        return runner.run_foreground(extravars, a.private_dir.resolve(), ident, a.inventory)
    if a.command == "status":
        from sweep.cli import runner

        print(json.dumps(runner.status(a.private_dir.resolve(), a.ident), indent=1))
        return 0
    if a.command == "wheelhouse":
        from sweep.store import wheelhouse

        path, built = wheelhouse.build(
            a.project.resolve(), a.cache.resolve(), a.python_version, a.machine
        )
        print(
            json.dumps(
                {
                    "path": str(path),
                    "archive": str(wheelhouse.archive(path)),
                    "name": path.name,
                    "built": built,
                    "pip_wheel": wheelhouse.pip_wheel(path),
                }
            )
        )
        return 0
    raise AssertionError(f"unhandled command {a.command}")


def main(argv: Sequence[str] | None = None) -> int:
    # A detached run (ansible-runner start) daemonizes with umask 0: keep what we write at most
    # group- and world-readable, whatever the caller's umask was, never looser.
    os.umask(os.umask(0) | 0o022)
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except Exception as e:  # one clear line for the playbook's failure message
        from sweep.config.params import SweepInputError

        kind = "bad sweep input" if isinstance(e, SweepInputError) else type(e).__name__
        print(f"sweep: {kind}: {e}", file=sys.stderr)
        return 2 if isinstance(e, SweepInputError) else 1


if __name__ == "__main__":
    sys.exit(main())
