# Follows a restarted systemd unit between readiness polls (MainPID, InvocationID, ActiveState,
# SubState, NRestarts, Result) and raises UnitFailure at once on a state that will not become
# ready: failed, auto-restart, a rising NRestarts, a new main process that changes or exits, a
# unit that stays stopped.
# Used by library/sglang_ready.py. Runs on the target host: standard library only.
from __future__ import annotations

from collections.abc import Callable

from ansible.module_utils.sglang_port_owner import ProcReader
from ansible.module_utils.sglang_systemd import UnitState

# How long a unit may sit inactive, or failed from its previous run, before we conclude that no
# restart is coming. A restart job passes through "inactive" for milliseconds only.
STOPPED_GRACE = 10.0


class UnitFailure(Exception):
    """The unit is in a state that will not become ready: fail at once."""

    def __init__(self, msg: str, condition: str = "unit_state") -> None:
        super().__init__(msg)
        self.condition = condition  # reported as `unmet` where not the unit's state


class UnitWatcher:
    """Follows the unit between polls; raises UnitFailure on a crash, crash loop or PID change."""

    def __init__(
        self,
        unit: str,
        previous_pid: int | None,
        previous_invocation: str | None,
        clock: Callable[[], float],
    ) -> None:
        self.unit = unit
        self.previous_pid = previous_pid
        self.previous_invocation = previous_invocation
        self.clock = clock
        self.new_pid: int | None = None
        self.new_invocations: list[str] = []
        self.lowest_restarts: int | None = None
        self.stopped_since: float | None = None
        self.last: UnitState | None = None

    def is_new(self, state: UnitState) -> bool:
        if state.main_pid <= 0 or state.main_pid == self.previous_pid:
            return False
        return not (self.previous_invocation and state.invocation == self.previous_invocation)

    def observe(self, state: UnitState, procs: ProcReader) -> None:
        self.last = state
        invocation = state.invocation
        if invocation and invocation != self.previous_invocation:
            self.new_invocations += [invocation] if invocation not in self.new_invocations else []
        if state.load_state == "not-found":
            raise UnitFailure(f"unit {self.unit} not found (LoadState=not-found)")
        self._check_restarts(state)
        known_old_run = (
            bool(self.previous_invocation) and state.invocation == self.previous_invocation
        )
        if state.sub_state == "auto-restart":
            raise UnitFailure(
                f"{self.unit} crashed and systemd is restarting it (SubState=auto-restart; "
                f"{state.summary()})"
            )
        if state.active_state == "failed" and state.result == "start-limit-hit":
            # The start job never ran, so InvocationID is still the old one: no grace period.
            raise UnitFailure(
                f"{self.unit}: systemd refused to start it, start limit hit (StartLimitBurst, "
                "manual restarts count too; `systemctl reset-failed` clears it) "
                f"({state.summary()})"
            )
        if state.active_state == "failed" and not (known_old_run and self.new_pid is None):
            raise UnitFailure(f"{self.unit} failed ({state.summary()})")
        if self.new_pid is not None:
            self._check_same_main_process(state, procs)
        elif self.is_new(state):
            self.new_pid = state.main_pid
        self._check_not_stuck_stopped(state, known_old_run)

    def _check_restarts(self, state: UnitState) -> None:
        # A manual restart resets NRestarts, so compare with the lowest reading, not only the first.
        if self.lowest_restarts is not None and state.n_restarts > self.lowest_restarts:
            raise UnitFailure(
                f"{self.unit} is crash-looping: NRestarts rose from {self.lowest_restarts} to "
                f"{state.n_restarts} ({state.summary()})"
            )
        if self.lowest_restarts is None or state.n_restarts < self.lowest_restarts:
            self.lowest_restarts = state.n_restarts

    def _check_same_main_process(self, state: UnitState, procs: ProcReader) -> None:
        pid = self.new_pid
        if state.main_pid != pid:
            if state.main_pid == 0:
                raise UnitFailure(f"{self.unit}: main process {pid} exited ({state.summary()})")
            raise UnitFailure(
                f"{self.unit}: main PID changed from {pid} to {state.main_pid} after it was seen "
                f"as the new server ({state.summary()})"
            )
        proc_state = procs.process_state(pid)
        if proc_state is None or proc_state == "Z":
            gone = "is a zombie" if proc_state == "Z" else "is gone"
            raise UnitFailure(f"{self.unit}: main process {pid} {gone} ({state.summary()})")

    def _check_not_stuck_stopped(self, state: UnitState, known_old_run: bool) -> None:
        stopped = state.active_state in ("inactive", "failed")
        if not stopped:
            self.stopped_since = None
            return
        new_run_ended = (
            bool(self.previous_invocation) and bool(state.invocation) and not known_old_run
        )
        if new_run_ended:
            raise UnitFailure(f"{self.unit}: the new server exited ({state.summary()})")
        now = self.clock()
        if self.stopped_since is None:
            self.stopped_since = now
        elif now - self.stopped_since >= STOPPED_GRACE:
            raise UnitFailure(
                f"{self.unit} stays {state.active_state} and nothing starts it "
                f"(was it restarted?) ({state.summary()})"
            )
