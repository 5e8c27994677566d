"""Readiness soak: N restarts of the emulated SGLang server under real systemd, each judged against
the new process's own "ready" journal line, for two readiness methods:

  ours   library/sglang_ready.py run standalone on the host (previous PID/invocation, unit,
         expect, expect_env with the new topk, require_speculation, API key);
  naive  poll GET /v1/models every --naive-interval s after the restart; the first 200 is ready.

Both methods watch the SAME restart, started together right after `systemctl restart --no-block`:
every restart gives a paired observation under identical load/drain/warm-up draws, and the run is
half as long as alternating. Neither method changes anything (the module only reads and sends one
8-token probe, the naive one only reads), so they do not disturb each other.

Ground truth per restart: the "The server is fired up and ready to roll!" journal line whose
_SYSTEMD_INVOCATION_ID is the unit's new InvocationID (its __REALTIME_TIMESTAMP and _PID). A method
is false-ready when it returns before that timestamp, with a main PID other than the one that
logged the line (or the previous one), or with a server whose SGLANG_DDTREE_MAX_TOPK is not the
requested one. The topk is an environment variable only (no /server_info field; the module checks
it with expect_env), read here from /proc/PID/environ of the process a method ended on: the
module's environ_pid (the port owner), the main PID the naive method saw. Lag = method return
time minus ready line time, both read on the host's clock.

Each restart draws (seeded) load, warm-up and drain times and alternates SGLANG_DDTREE_MAX_TOPK,
all through the drop-in /etc/systemd/system/sglang.service.d/soak.conf; a drawn drain applies to the
NEXT restart (it is the stopping process's setting). A background streaming /generate loop with
the API key keeps the old process busy while it drains.

The script and its modules beside it are stdlib-only: the controller copies them to the host,
where the `host-restart` and `host-traffic` subcommands run. They are soak_plan.py (the settings,
the restart plans), soak_host.py (the host side), soak_judge.py (judging and summary) and
soak_controller.py (the container, the bundle, the soak).

    .venv/bin/python benchmarks/readiness_soak.py [--restarts 30] [--seed 1] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys

from soak_controller import soak
from soak_host import host_restart, host_traffic
from soak_plan import RestartPlan


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    sub = parser.add_subparsers(dest="command")
    parser.add_argument("--restarts", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", help="JSON with every row (default results/soak/...)")
    parser.add_argument("--naive-interval", type=float, default=0.2, help="seconds between polls")
    parser.add_argument("--module-timeout", type=int, default=120)
    parser.add_argument("--traffic-workers", type=int, default=2, help="0 = no traffic")
    parser.add_argument("--traffic-tokens", type=int, default=256)
    parser.add_argument("--keep-container", action="store_true", help="leave sglang-soak up")
    parser.add_argument(
        "--skip-setup", action="store_true", help="reuse a running sglang-soak as it is"
    )
    restart = sub.add_parser(
        "host-restart", help="(on the host) one restart, one JSON row", allow_abbrev=False
    )
    restart.add_argument("plan")
    traffic = sub.add_parser(
        "host-traffic", help="(on the host) streaming load until SIGTERM", allow_abbrev=False
    )
    traffic.add_argument("--workers", type=int, default=2)
    traffic.add_argument("--max-tokens", type=int, default=256)
    args = parser.parse_args(argv)
    if args.command == "host-restart":
        print(json.dumps(host_restart(RestartPlan(**json.loads(args.plan)))))
        return 0
    if args.command == "host-traffic":
        host_traffic(args.workers, args.max_tokens)
        return 0
    if args.restarts < 1:
        parser.error("--restarts must be >= 1")
    return soak(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
