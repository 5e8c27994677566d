#!/usr/bin/python
# The first step of a deliberate restart (roles/sglang_server/handlers/main.yml): a server that
# never served is stopped at once, the whole cgroup, instead of being given a drain it has no
# requests for. Ansible wants DOCUMENTATION, EXAMPLES and RETURN before the imports.
# ruff: noqa: E402
from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_stop_unready
short_description: Stop an SGLang unit at once when its server never served, before a restart
description:
  - Reads the unit's MainPID and InvocationID (the run a following restart replaces, which
    M(sglang_ready) waits to see gone), and whether that run ever reached readiness: its journal
    (C(_SYSTEMD_INVOCATION_ID)) holds SGLang's ready line, O(ready_marker).
  - A run that served is left alone: the restart gives it its drain (C(KillMode=mixed), SIGTERM to
    the main process, up to C(TimeoutStopSec)), in-flight requests finish.
  - A run that never served (still loading its weights, warming up, or crash-looping) has no
    requests to drain, and a process that is still starting may not have installed its signal
    handlers yet (a real SGLang scheduler then ignores SIGTERM, and the stop waits out the whole
    C(TimeoutStopSec)). So the unit gets a stop job (C(systemctl stop --no-block)), every process
    of its cgroup SIGTERM, and SIGKILL after O(grace) seconds if any is left; the module returns
    once the unit is stopped (at most O(grace) + O(kill_wait) seconds).
  - It fails, naming them, when processes of the unit are still there O(kill_wait) seconds after
    SIGKILL (uninterruptible: a process stuck in the GPU driver after a fault cannot be killed),
    or when the unit has not stopped by then: the restart would meet them holding the GPUs and
    the port, so it is not tried.
  - The stop job is what keeps a crash loop from racing the restart. Killed without one, a run
    exits with a failure, C(Restart=on-failure) starts another after C(RestartSec), and the
    restart that follows this module then meets that new run while it starts, with a plain
    SIGTERM that may wait out C(TimeoutStopSec). A stop job also cancels a pending auto-restart,
    so a unit waiting to auto-restart (no process) is stopped too.
  - Then also resets the unit's failed state and start-limit counter (C(systemctl reset-failed)),
    so deliberate restarts do not count against C(StartLimitBurst).
version_added: "0.1.0"
author:
  - sglang-specbench project
options:
  unit:
    description: The systemd unit, e.g. C(sglang.service).
    type: str
    required: true
  ready_marker:
    description: The line a server logs once it serves (SGLang 0.5.11 to 0.5.23, the emulator).
    type: str
    default: The server is fired up and ready to roll!
  grace:
    description: Seconds the processes of a run that never served get after SIGTERM, before SIGKILL.
    type: int
    default: 10
  kill_wait:
    description: >-
    Seconds to wait, after SIGKILL, for the cgroup to be empty and the unit stopped; processes
    left after that fail the module.
    type: int
    default: 20
attributes:
  check_mode:
    support: full
    details: reports what it would do (changed when it would stop the unit) and sends nothing
  diff_mode:
    support: none
seealso:
  - module: sglang_ready
"""

EXAMPLES = r"""
- name: Record the running server, stop it at once when it never served
  sglang_stop_unready:
    unit: sglang.service
  register: __sglang_server_before
"""

RETURN = r"""
MainPID:
  description: The unit's main process when the module started (0 when none).
  returned: always
  type: int
  sample: 12345
InvocationID:
  description: The unit's invocation when the module started ("" when never started).
  returned: always
  type: str
  sample: 5f3c0a2e9d8b4f1c8e7d6c5b4a392817
state:
  description: ActiveState/SubState when the module started.
  returned: always
  type: str
  sample: activating/start
served:
  description: Whether that run logged the ready line (null when no run was active).
  returned: always
  type: bool
  sample: false
stopped:
  description: >-
    How the run was stopped - C(none) (left for the restart's drain, or nothing ran),
    C(cancelled) (a pending auto-restart, no process), C(SIGTERM) or C(SIGKILL).
  returned: always
  type: str
  sample: SIGKILL
elapsed:
  description: Seconds spent stopping.
  returned: always
  type: float
  sample: 10.2
"""

import time
from collections.abc import Callable
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_systemd import SystemdReader, UnitState

ACTIVE = ("active", "activating", "deactivating", "reloading")

Run = Callable[[list[str]], tuple[int, str, str]]


def served(run: Run, state: UnitState, marker: str) -> bool:
    """Whether the run `state` describes logged the ready line."""
    rc, out, _ = run(
        ["journalctl", f"_SYSTEMD_INVOCATION_ID={state.invocation}", "-o", "cat", "--no-pager"]
    )
    return rc == 0 and marker in out


CGROUP_ROOTS = ("/sys/fs/cgroup", "/sys/fs/cgroup/systemd")


def cgroup_pids(run: Run, unit: str) -> list[int]:
    """The processes of the unit's cgroup (empty once it is)."""
    rc, out, _ = run(["systemctl", "show", unit, "-p", "ControlGroup", "--value"])
    group = out.strip()
    if rc != 0 or not group:
        return []
    # the unified hierarchy (v2), then systemd's own of a v1 or hybrid one
    for root in CGROUP_ROOTS:
        try:
            with open(f"{root}{group}/cgroup.procs", encoding="ascii") as f:
                return [int(x) for x in f.read().split()]
        except OSError:
            continue
    rc, out, _ = run(["systemctl", "show", unit, "-p", "MainPID", "--value"])
    pid = int(out.strip() or 0) if rc == 0 else 0
    return [pid] if pid > 0 else []


def wait_empty(run: Run, unit: str, seconds: float, sleep: Callable[[float], None]) -> bool:
    deadline = time.monotonic() + seconds
    while cgroup_pids(run, unit):
        if time.monotonic() >= deadline:
            return False
        sleep(0.2)
    return True


def wait_stopped(run: Run, unit: str, seconds: float, sleep: Callable[[float], None]) -> bool:
    """Until the stop job has ended (the unit inactive or failed, not waiting to restart)."""
    deadline = time.monotonic() + seconds
    while SystemdReader(run).show(unit).active_state in ACTIVE:
        if time.monotonic() >= deadline:
            return False
        sleep(0.2)
    return True


class Survivors(Exception):
    """The unit did not stop: processes outlived SIGKILL, or the stop job did not end."""


def stop_unready(
    run: Run,
    unit: str,
    marker: str,
    grace: float,
    kill_wait: float,
    check_mode: bool,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    state = SystemdReader(run).show(unit)
    out: dict[str, Any] = {
        "MainPID": state.main_pid,
        "InvocationID": state.invocation,
        "state": f"{state.active_state}/{state.sub_state}",
        "served": None,
        "stopped": "none",
        "elapsed": 0.0,
        "changed": False,
    }
    if state.active_state not in ACTIVE:
        return out  # nothing runs and nothing will: the restart starts it
    if state.main_pid > 0:
        out["served"] = served(run, state, marker)
        if out["served"]:
            return out  # it serves: the restart drains it
    out["changed"] = True
    if check_mode:
        return out
    start = time.monotonic()
    run(["systemctl", "stop", "--no-block", unit])
    out["stopped"] = "cancelled"
    if cgroup_pids(run, unit):
        run(["systemctl", "kill", "--kill-whom=all", "--signal=SIGTERM", unit])
        out["stopped"] = "SIGTERM"
        if not wait_empty(run, unit, grace, sleep):
            run(["systemctl", "kill", "--kill-whom=all", "--signal=SIGKILL", unit])
            out["stopped"] = "SIGKILL"
            if not wait_empty(run, unit, kill_wait, sleep):
                left = cgroup_pids(run, unit)
                raise Survivors(
                    f"{unit}: {len(left)} process(es) still there {kill_wait} s after SIGKILL "
                    f"(PIDs {', '.join(map(str, left))}): uninterruptible, as a process stuck in "
                    "the GPU driver after a fault is; not restarting over them (they hold the "
                    f"GPUs and the port). Look with: ps -o pid,stat,wchan:32,cmd -p "
                    f"{','.join(map(str, left))}"
                )
    if not wait_stopped(run, unit, kill_wait, sleep):
        now = SystemdReader(run).show(unit)
        raise Survivors(
            f"{unit}: still {now.active_state}/{now.sub_state} {kill_wait} s after its processes "
            f"were stopped; not restarting over it (systemctl status {unit})"
        )
    out["elapsed"] = round(time.monotonic() - start, 3)
    return out


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "unit": {"type": "str", "required": True},
            "ready_marker": {"type": "str", "default": "The server is fired up and ready to roll!"},
            "grace": {"type": "int", "default": 10},
            "kill_wait": {"type": "int", "default": 20},
        },
        supports_check_mode=True,
    )
    p = module.params

    def run(cmd: list[str]) -> tuple[int, str, str]:
        rc, out, err = module.run_command(cmd)
        return int(rc), str(out), str(err)

    try:
        result = stop_unready(
            run, p["unit"], p["ready_marker"], p["grace"], p["kill_wait"], module.check_mode
        )
    except Survivors as e:
        module.fail_json(msg=f"sglang_stop_unready: {e}", stopped="SIGKILL", changed=True)
    except Exception as e:  # systemctl show failed: name it
        module.fail_json(msg=f"sglang_stop_unready: {e}")
    if not module.check_mode:
        run(["systemctl", "reset-failed", p["unit"]])  # rc ignored: a never-failed unit is fine
    module.exit_json(**result)


if __name__ == "__main__":
    main()
