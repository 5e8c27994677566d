"""The online planner: every host asks it for its next run, one at a time, until it says done.

`python -m sweep plan` starts an invocation (start): the plan of the sweep as it stands, its
input kept in `<sweep>/plan-input.json` with the invocation's start. Then each host loops on
`python -m sweep next <sweep> <host>` (next_run), which answers, under a lock:

- `run`: an item to serve and bench (a grid's point; a search's run; a lost host's point taken
  over), claimed for this host;
- `wait`: nothing to hand out now, but runs in flight elsewhere may make some (a search's round
  not complete, or a point a host holds that may still be lost);
- `done`: nothing left for this host in this invocation.

What to run is recomputed from the records on disk at every ask (sweep/cli/plan.py make_plan, the
searches' replay), so a killed controller resumes exactly, and there is no cap on a search's
length. Claims (sweep/store/claims.py) make sure a run is handed out once; a claim held by a host
the playbook lost (unreachable: playbooks/callback_plugins/sweep_hosts.py lists them) is taken over.
Among the runs a host may take it gets, in order: a run of the configuration it is already
serving (no restart); the first in the plan's order.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from filelock import FileLock

from bench.records import write_json
from sweep import layout
from sweep.cli.plan import Plan, make_plan, record_ruled, record_run, settle_same
from sweep.config.params import SweepInputError
from sweep.search import search_rounds
from sweep.store import claims

INPUT_FILE = "plan-input.json"
HOSTS_DIR = ".hosts"  # <sweep>/.hosts/<host>.json: the run last handed to the host
LOCK_FILE = ".planner.lock"
LOST_DIR_ENV = "SGLANG_SWEEP_LOST_DIR"  # set by playbooks/callback_plugins/sweep_hosts.py
FORKS_ENV = "SGLANG_SWEEP_FORKS"  # likewise: the playbook's forks


def max_runs(plan: Plan) -> int:
    """The most runs an invocation can hand out: every point it may reach, the baselines once,
    and a take-over per host. A search plans a round at a time, but one invocation runs it to
    its end: every point of its grid may be reached."""
    searched = sum(1 for p in plan.points if not p.is_baseline)
    baselines = len(plan.points) - searched
    reachable = max(searched, len((plan.search or {}).get("points") or []))
    return reachable + baselines + len(plan.hosts)


def start(inp: dict[str, Any], forks: int | None = None) -> dict[str, Any]:
    """A new invocation: the plan now, recorded (sweep.json, adopted measurements, search.json),
    and its input kept for next_run. Refuses more hosts than the controller's forks: the others
    would sit idle while the first ones run."""
    hosts = [str(h) for h in inp.get("hosts") or []]
    if forks is not None and len(hosts) > forks:
        raise SweepInputError(
            f"{len(hosts)} hosts but ansible forks={forks}: {len(hosts) - forks} of them would sit "
            f"idle while the others run. Raise forks to at least {len(hosts)} (ansible-playbook "
            "-f, or forks in ansible.cfg), or run on fewer hosts (--limit)."
        )
    inp = {**inp, "started": time.time()}
    plan = make_plan(inp)
    _record(plan)
    out = plan.to_dict()
    out["max_runs"] = max_runs(plan)
    sweep_dir = plan.sweep_dir
    # where `next` is asked and the report is written
    out["root"] = str(sweep_dir)
    sweep_dir.mkdir(parents=True, exist_ok=True)
    claims.clear(sweep_dir)
    for stale in (sweep_dir / HOSTS_DIR).glob("*.json"):
        stale.unlink()
    write_json(sweep_dir / INPUT_FILE, inp)
    return out


def _record(plan: Plan) -> None:
    """sweep.json, once per invocation (the first time: its run entry, the adopted measurements,
    its claims and staging cleared); every time, the points that start the same server as one
    measured since (plan.settle_same) and the search's search.json."""
    runs = (layout.read_sweep(plan.sweep_dir) or {}).get("runs") or [{}]
    if runs[-1].get("started") != plan.run_started:
        record_run(plan)
    record_ruled(plan)
    settle_same(plan)
    if plan.search is not None:
        write_json(plan.sweep_dir / layout.SEARCH_FILE, plan.search)


def lost_hosts(env: dict[str, str] | None = None) -> set[str]:
    """The hosts the running playbook lost (its callback's list), none outside a playbook."""
    lost_dir = (env if env is not None else os.environ).get(LOST_DIR_ENV)
    if not lost_dir:
        return set()
    return {p.name for p in Path(lost_dir).glob("*") if p.is_file()}


def _host_state(sweep_dir: Path, host: str) -> dict[str, Any]:
    return layout.read_json(sweep_dir / HOSTS_DIR / f"{host}.json") or {}


def _hand_out(sweep_dir: Path, host: str, item: dict[str, Any], why: str) -> dict[str, Any]:
    path = sweep_dir / HOSTS_DIR / f"{host}.json"
    write_json(path, {"item": item, "handed": time.time()})
    return {"action": "run", "item": item, "why": why, "started": time.time()}


def next_run(sweep_dir: Path, host: str, lost: set[str] | None = None) -> dict[str, Any]:
    """The next run for `host` (see the module docstring), decided under the sweep's lock."""
    sweep_dir = sweep_dir.resolve()
    inp = layout.read_json(sweep_dir / INPUT_FILE)
    if inp is None:
        raise SweepInputError(f"{sweep_dir}: no sweep started there ({INPUT_FILE}): plan it first")
    lost = lost_hosts() if lost is None else lost
    with FileLock(str(sweep_dir / LOCK_FILE)):
        since = float(inp["started"])
        plan = current(sweep_dir, inp)
        if search_rounds.stopped(plan.sweep_dir, since):
            why = f"the sweep was stopped: {layout.stop_reason(plan.sweep_dir)}"
            return {"action": "done", "why": why}
        alive = [h for h in plan.hosts if h not in lost]
        planned = plan.to_dict()
        # every item names its sweep (the playbook's tasks read its directory and bench there)
        queue: list[dict[str, Any]] = [{"sweep": planned["sweep"], **i} for i in planned["queue"]]
        serving = ((_host_state(sweep_dir, host).get("item") or {}).get("server")) or None
        free, in_flight = _claimable(queue, plan, host, alive)
        if free:
            same = [i for i in free if i["server"] == serving]
            item = (same or free)[0]
            got = claims.claim(_item_dir(item, plan), item["id"], host, alive, item.get("hosts"))
            assert got["mine"], got  # checked under the lock just now
            why = {
                "claimed": "next in the plan",
                "held": "this host's already",
                "taken_over": f"taken over from {got.get('from')} (lost)",
                "retried": f"tried again: it failed on {got.get('from')} for a cause that may "
                "not recur on another host",
            }[str(got["state"])]
            if same and item is same[0] and got["state"] == "claimed":
                why = "the configuration this host already serves"
            return _hand_out(sweep_dir, host, item, why)
        if in_flight:
            return {"action": "wait", "why": f"{in_flight} run(s) in flight on other hosts"}
        return {"action": "done", "why": "nothing left to run in this invocation"}


def current(sweep_dir: Path, inp: dict[str, Any] | None = None) -> Plan:
    """The invocation's plan now, from the records on disk, recorded (see _record)."""
    if inp is None:
        inp = layout.read_json(sweep_dir / INPUT_FILE)
        if inp is None:
            raise SweepInputError(f"{sweep_dir}: no sweep started there ({INPUT_FILE})")
    plan = make_plan(inp)
    _record(plan)
    return plan


def _item_dir(item: dict[str, Any], plan: Plan) -> Path:
    return Path(str((item.get("sweep") or {}).get("dir") or plan.sweep_dir))


def _claimable(
    queue: list[dict[str, Any]], plan: Plan, host: str, alive: list[str]
) -> tuple[list[dict[str, Any]], int]:
    """The queue's items this host may take now, and how many others hold (in flight)."""
    free: list[dict[str, Any]] = []
    in_flight = 0
    for item in queue:
        d = _item_dir(item, plan)
        if item.get("hosts") is not None and host not in item["hosts"]:
            in_flight += claims.peek(d, item["id"], host, None) == "taken"
            continue
        state = claims.peek(d, item["id"], host, alive)
        if state in ("free", "held", "lost"):
            free.append(item)
        elif state == "taken":
            in_flight += 1
    return free, in_flight


def wait_for_run(
    sweep_dir: Path,
    host: str,
    wait_s: float,
    poll_s: float = 2.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """next_run, asked again every `poll_s` while it says wait, for up to `wait_s` seconds."""
    deadline = clock() + wait_s
    while True:
        answer = next_run(sweep_dir, host)
        if answer["action"] != "wait" or clock() + poll_s > deadline:
            return answer
        sleep(poll_s)


def forks_of_playbook(env: dict[str, str] | None = None) -> int | None:
    raw = (env if env is not None else os.environ).get(FORKS_ENV, "")
    return int(raw) if raw.isdigit() else None


def describe(answer: dict[str, Any]) -> str:
    """One line for the playbook's output."""
    if answer["action"] != "run":
        return f"{answer['action']}: {answer['why']}"
    item = answer["item"]
    where = (item.get("sweep") or {}).get("name")
    return f"run {item['id']}" + (f" in {where}" if where else "") + f": {answer['why']}"


def dumps(answer: dict[str, Any]) -> str:
    return json.dumps({**answer, "line": describe(answer)})
