# The readiness conditions of a (re)started SGLang server, checked in order on every poll (new main
# process, port bound by the unit, expected environment, /server_info, health, a real generation,
# the same main process after), and the poll loop around them: wait_until_ready, or check_once in
# check mode. The module (library/sglang_ready.py) builds the Settings and the Dependencies.
# Runs on the target host: standard library only.
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from typing import Any

from ansible.module_utils.sglang_expect import (
    env_mismatches,
    expect_mismatches,
    server_info_subset,
)
from ansible.module_utils.sglang_failure_cause import classify
from ansible.module_utils.sglang_http import HttpClient
from ansible.module_utils.sglang_journal import failure_message, read_journal
from ansible.module_utils.sglang_port_owner import ProcPermissionError
from ansible.module_utils.sglang_server_process import ProcReader, observe_port, unit_processes
from ansible.module_utils.sglang_systemd import SystemdError, SystemdReader, UnitState, parse_int
from ansible.module_utils.sglang_unit_watch import UnitFailure, UnitWatcher

CONDITIONS = (
    "old_gone",
    "port_bound",
    "env_matched",
    "config_matched",
    "healthy",
    "first_generation",
)
INITIAL_POLL_INTERVAL = 0.1
POLL_BACKOFF = 1.5
HTTP_TIMEOUT = 5.0
# Condition (4): endpoints tried in order, the next one only when the build answers 404.
HEALTH_CHAINS = {
    "auto": ("/ready", "/health_generate", "/health"),
    "ready": ("/ready",),
    "health_generate": ("/health_generate", "/health"),
    "health": ("/health",),
}


@dataclasses.dataclass(frozen=True)
class Settings:
    url: str
    port: int
    unit: str | None
    previous_pid: int | None
    previous_invocation: str | None
    expect: dict[str, Any]
    timeout: int
    prompt: str
    max_new_tokens: int
    probe_timeout: float
    require_speculation: bool
    max_poll_interval: float
    check_mode: bool
    health_check: str = "auto"
    expect_env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    api_key_from_unit: bool = False
    api_key_env: str = "SGLANG_API_KEY"


@dataclasses.dataclass
class Dependencies:
    systemd: SystemdReader
    procs: ProcReader
    http: HttpClient
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    wall_clock: Callable[[], float] = time.time


@dataclasses.dataclass(frozen=True)
class Unmet:
    condition: str
    detail: str


class NotReady(Exception):
    def __init__(self, unmet: Unmet) -> None:
        super().__init__(unmet.detail)
        self.unmet = unmet


class ReadinessError(Exception):
    """Ends the module with fail_json."""

    def __init__(self, msg: str, result: dict[str, Any]) -> None:
        super().__init__(msg)
        self.msg = msg
        self.result = result


class ReadinessChecker:
    """Evaluates the conditions in order; the caller decides whether to poll again."""

    def __init__(self, settings: Settings, deps: Dependencies) -> None:
        self.s = settings
        self.d = deps
        self.started = deps.clock()
        self.started_wall = deps.wall_clock()
        self.watcher = (
            UnitWatcher(
                settings.unit, settings.previous_pid, settings.previous_invocation, deps.clock
            )
            if settings.unit
            else None
        )
        self.phases: dict[str, float | None] = dict.fromkeys(CONDITIONS)
        self.server_info: dict[str, Any] | None = None
        self.server_info_path = "/server_info"
        chain = HEALTH_CHAINS[settings.health_check]
        if settings.check_mode:  # /health_generate runs a generation: not read-only
            chain = tuple(p for p in chain if p != "/health_generate") or ("/health",)
        self.health_paths = list(chain)
        self.probe: dict[str, Any] | None = None
        self.deadline = self.started + settings.timeout
        self.server_pid: int | None = None  # the unit process owning the listening port
        self.environ_pid: int | None = None  # whose /proc/PID/environ was read
        self.environ_process: str | None = None  # "port_owner" or "main_pid"
        self._env_verified_pid: int | None = None
        # What the latest pass verified (reset at every pass).
        self.config_ok = False
        self.env_ok = False

    # -- helpers -----------------------------------------------------------------------------

    def now(self) -> float:
        return self.d.clock() - self.started

    def _passed(self, condition: str) -> None:
        if self.phases[condition] is None:
            self.phases[condition] = round(self.now(), 3)

    def _http_timeout(self, wanted: float) -> float:
        return max(0.5, min(wanted, self.deadline - self.d.clock()))

    # -- the conditions ----------------------------------------------------------------------

    def read_unit(self) -> UnitState | None:
        if not self.s.unit or self.watcher is None:
            return None
        try:
            state = self.d.systemd.show(self.s.unit)
        except SystemdError as exc:
            raise UnitFailure(str(exc)) from None
        self.watcher.observe(state, self.d.procs)
        return state

    def check_old_gone(self, state: UnitState) -> None:
        assert self.watcher is not None
        if not self.watcher.is_new(state):
            if state.main_pid <= 0:
                detail = f"no main process yet ({state.summary()})"
            else:
                detail = (
                    f"main PID {state.main_pid} is still the previous server "
                    f"(InvocationID={state.invocation or '?'}, {state.summary()})"
                )
            raise NotReady(Unmet("old_gone", detail))
        old = self.s.previous_pid
        if old and old > 0:
            old_state = self.d.procs.process_state(old)
            if old_state not in (None, "Z"):
                raise NotReady(
                    Unmet(
                        "old_gone",
                        f"the previous main process {old} still exists (state {old_state})",
                    )
                )
        self._passed("old_gone")

    def check_port(self, state: UnitState) -> None:
        procs = self.d.procs
        unit_pids = unit_processes(procs, state.control_group, state.main_pid)
        try:
            seen = observe_port(procs, self.s.port, unit_pids)
        except ProcPermissionError as exc:
            raise UnitFailure(
                f"cannot verify who owns port {self.s.port}: {exc}; run this task with become"
            ) from exc
        self.server_pid = seen.owner
        if not seen.owned:
            raise NotReady(Unmet("port_bound", seen.detail))
        self._passed("port_bound")

    def check_env(self, state: UnitState) -> None:
        """expect_env against /proc/PID/environ of the server; a mismatch is final."""
        if not self.s.expect_env:
            return
        # The main PID is the launcher; SGLang, its child, owns the port. Both normally share the
        # variables asked for, but the port owner is the process that really serves.
        if self.server_pid:
            pid, role = self.server_pid, "port_owner"
        else:
            pid, role = state.main_pid, "main_pid"
        self.environ_pid, self.environ_process = pid, role
        if pid == self._env_verified_pid:  # an environment cannot change: once per process
            self.env_ok = True
            return
        try:
            env = self.d.procs.environ(pid, self.s.expect_env)
        except ProcPermissionError as exc:
            raise UnitFailure(
                f"cannot verify expect_env: {exc}; the module must run as root on the host "
                "(become: true) to read another user's process environment",
                "env_matched",
            ) from exc
        if env is None:
            raise NotReady(
                Unmet("env_matched", f"process {pid} exited before its environment was read")
            )
        problems = env_mismatches(env, self.s.expect_env)
        if problems:
            who = (
                f"the server process {pid} (owner of port {self.s.port})"
                if role == "port_owner"
                else f"the unit's main process {pid}"
            )
            raise UnitFailure(
                f"{who} was started with the wrong environment (expect_env; an environment cannot "
                f"change, so this is final): {'; '.join(problems)}",
                "env_matched",
            )
        self._env_verified_pid = pid
        self.env_ok = True
        self._passed("env_matched")

    def check_config(self) -> None:
        resp = self.d.http.get(self.server_info_path, self._http_timeout(HTTP_TIMEOUT))
        if resp.status == 404 and self.server_info_path == "/server_info":
            self.server_info_path = "/get_server_info"
            resp = self.d.http.get(self.server_info_path, self._http_timeout(HTTP_TIMEOUT))
        info = resp.json() if resp.status == 200 else None
        if not isinstance(info, dict):
            what = resp.describe() if resp.status != 200 else "an answer that is not a JSON object"
            raise NotReady(Unmet("config_matched", f"GET {self.server_info_path}: {what}"))
        self.server_info = server_info_subset(info, self.s.expect)
        problems = expect_mismatches(info, self.s.expect)
        if problems:
            raise NotReady(Unmet("config_matched", "; ".join(problems)))
        self.config_ok = True
        self._passed("config_matched")

    def check_health(self) -> None:
        path = self.health_paths[0]
        resp = self.d.http.get(path, self._http_timeout(HTTP_TIMEOUT))
        while resp.status == 404 and len(self.health_paths) > 1:
            self.health_paths.pop(0)  # this build lacks it; remember for the next polls
            path = self.health_paths[0]
            resp = self.d.http.get(path, self._http_timeout(HTTP_TIMEOUT))
        if resp.status != 200:
            raise NotReady(Unmet("healthy", f"GET {path}: {resp.describe()}"))
        self._passed("healthy")

    def check_generation(self) -> None:
        payload = {
            "text": self.s.prompt,
            "sampling_params": {"max_new_tokens": self.s.max_new_tokens, "temperature": 0},
        }
        began = self.d.clock()
        resp = self.d.http.post_json("/generate", payload, self._http_timeout(self.s.probe_timeout))
        latency = self.d.clock() - began
        body = resp.json() if resp.status == 200 else None
        if isinstance(body, list) and body:
            body = body[0]
        meta = body.get("meta_info") if isinstance(body, dict) else None
        if not isinstance(meta, dict):
            raise NotReady(Unmet("first_generation", f"POST /generate: {resp.describe()}"))
        tokens = parse_int(str(meta.get("completion_tokens", 0)))
        verify = meta.get("spec_verify_ct")
        if tokens <= 0:
            raise NotReady(Unmet("first_generation", f"POST /generate returned no tokens: {meta}"))
        if self.s.require_speculation and not (isinstance(verify, (int, float)) and verify > 0):
            raise NotReady(
                Unmet(
                    "first_generation",
                    f"POST /generate shows no speculation (spec_verify_ct={verify!r}) "
                    "but require_speculation is set",
                )
            )
        accept = meta.get("spec_accept_length")
        if accept is None and isinstance(verify, (int, float)) and verify > 0:
            accept = tokens / verify
        self.probe = {
            "latency": round(latency, 4),
            "completion_tokens": tokens,
            "spec_verify_ct": verify,
            "spec_accept_length": accept,
        }
        self._passed("first_generation")

    def evaluate(self, with_generation: bool) -> UnitState | None:
        """One pass over every condition in order; raises NotReady at the first unmet one."""
        self.config_ok = self.env_ok = False
        state = self.read_unit()
        if state is not None:
            self.check_old_gone(state)
            self.check_port(state)
            self.check_env(state)
        self.check_config()
        self.check_health()
        if with_generation:
            self.check_generation()
            after = self.read_unit()  # condition 6: the watcher fails on a changed main PID
            if after is not None:
                state = after
        return state

    # -- results -----------------------------------------------------------------------------

    def restarted_from(self) -> dict[str, Any] | None:
        if self.s.previous_pid is None and not self.s.previous_invocation:
            return None
        return {"pid": self.s.previous_pid, "invocation_id": self.s.previous_invocation}

    def result(self, state: UnitState | None, ready: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "changed": False,
            "ready": ready,
            "url": self.s.url,
            "elapsed": round(self.now(), 3),
            "phases": dict(self.phases),
            "pid": state.main_pid if state else None,
            "invocation_id": state.invocation if state else None,
            "restarted_from": self.restarted_from(),
            "server_info_endpoint": self.server_info_path,
            "health_endpoint": self.health_paths[0],
            "verified": self.verified(),
            "environ_pid": self.environ_pid,
            "environ_process": self.environ_process,
        }
        if self.s.unit:
            out["unit"] = self.s.unit
        if state is not None:
            out["unit_state"] = state.as_dict()
        if self.server_info is not None:
            out["server_info"] = self.server_info
        if self.probe is not None:
            out["probe"] = self.probe
        return out

    def verified(self) -> dict[str, list[str]]:
        """Where each requested parameter was verified by the latest pass."""
        expect, env = sorted(self.s.expect), sorted(self.s.expect_env)
        unverified = ([] if self.config_ok else expect) + ([] if self.env_ok else env)
        return {
            "server_info": expect if self.config_ok else [],
            "environ": env if self.env_ok else [],
            "unverified": sorted(unverified),
        }

    def journal(self) -> list[str]:
        if not self.s.unit or self.watcher is None:
            return []
        since = self.started_wall - 10
        return read_journal(self.d.systemd, self.s.unit, self.watcher.new_invocations, since)

    def failure(
        self, headline: str, unmet: Unmet | None, timed_out: bool = False
    ) -> ReadinessError:
        lines = self.journal()
        last = self.watcher.last if self.watcher else None
        result = self.result(last, ready=False)
        result["journal"] = lines
        # cause, cause_detail, cause_flags: what the journal says, else crash or timeout
        result.update(classify(lines, deadline_passed=timed_out).as_result())
        if unmet is not None:
            result["unmet"] = unmet.condition
            result["detail"] = unmet.detail
        return ReadinessError(failure_message(headline, self.s.unit, lines), result)


def wait_until_ready(settings: Settings, deps: Dependencies) -> dict[str, Any]:
    """Poll until every condition holds; raise ReadinessError on a crash or at the time-out."""
    checker = ReadinessChecker(settings, deps)
    interval = INITIAL_POLL_INTERVAL
    progress = -1
    while True:
        try:
            state = checker.evaluate(with_generation=True)
            return checker.result(state, ready=True)
        except UnitFailure as exc:
            final = Unmet(exc.condition, str(exc)) if exc.condition != "unit_state" else None
            raise checker.failure(str(exc), final) from None
        except NotReady as exc:
            unmet = exc.unmet
        remaining = checker.deadline - deps.clock()
        if remaining <= 0:
            headline = (
                f"timed out after {settings.timeout} s waiting for the SGLang server at "
                f"{settings.url}: condition '{unmet.condition}' still unmet: {unmet.detail}"
            )
            raise checker.failure(headline, unmet, timed_out=True)
        reached = CONDITIONS.index(unmet.condition)
        if reached > progress:
            progress, interval = reached, INITIAL_POLL_INTERVAL
        deps.sleep(min(interval, remaining))
        interval = min(interval * POLL_BACKOFF, settings.max_poll_interval)


def check_once(settings: Settings, deps: Dependencies) -> dict[str, Any]:
    """Check mode: one read-only pass, no generation, never fails for not being ready."""
    checker = ReadinessChecker(settings, deps)
    state: UnitState | None = None
    extra: dict[str, Any] = {}
    try:
        state = checker.evaluate(with_generation=False)
        ready = True
    except UnitFailure as exc:
        ready = False
        extra = {"unmet": exc.condition, "detail": str(exc)}
    except NotReady as exc:
        ready = False
        extra = {"unmet": exc.unmet.condition, "detail": exc.unmet.detail}
    if state is None and checker.watcher is not None:
        state = checker.watcher.last
    return {**checker.result(state, ready=ready), **extra}
