"""Test doubles for library/sglang_ready.py.

Only systemd and the /proc + cgroup tree are faked; the module's own ProcReader reads the fake tree
from disk (environ files included), and the server side is a real HTTP server on 127.0.0.1 with
scripted answers. The unit's Environment= / EnvironmentFiles= properties go through the module's
real SystemdReader with a fake systemctl. A fake clock drives a timeline of host events (old
process exits, new one binds, ...) so every branch of the wait loop runs in milliseconds of real
time. run_module() drives the module through AnsibleModule, catching exit_json/fail_json.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import shutil
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any
from unittest import mock

from ansible.module_utils.testing import patch_module_args
from project_module_utils import module_utils, use_project_module_utils

MODULE_PATH = Path(__file__).resolve().parents[2] / "library" / "sglang_ready.py"
UNIT = "sglang.service"
CONTROL_GROUP = "/system.slice/sglang.service"
# What systemd alone puts into a service's environment (plus PATH).
BASE_ENVIRON = {"PATH": "/usr/local/bin:/usr/bin", "LANG": "C.UTF-8", "INVOCATION_ID": "x"}
TCP_HEADER = (
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt"
    "   uid  timeout inode\n"
)


def load_module() -> ModuleType:
    if "sglang_ready" in sys.modules:
        return sys.modules["sglang_ready"]
    use_project_module_utils()
    spec = importlib.util.spec_from_file_location("sglang_ready", MODULE_PATH)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["sglang_ready"] = module
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------------------------------------
# The HTTP side: a real server with scripted answers
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Behaviour:
    """What the process answering the port says right now (None status = endpoint missing: 404)."""

    server_info: dict[str, Any] | None = None  # None: 503 (not serving yet)
    legacy_server_info_only: bool = False  # /server_info 404, /get_server_info answers
    ready: int | None = None  # None: a build before 0.5.20, without /ready
    health_generate: int | None = 200
    health: int = 200
    generate_status: int = 200
    generate_meta: dict[str, Any] | None = dataclasses.field(
        default_factory=lambda: {
            "completion_tokens": 8,
            "spec_verify_ct": 2,
            "spec_accept_length": 4.0,
        }
    )
    generate_delay: float = 0.0
    on_generate: Callable[[], None] | None = None  # runs when a generation is asked for

    def answer(self, method: str, path: str) -> tuple[int, Any]:
        if path in ("/server_info", "/get_server_info") and method == "GET":
            if (path == "/server_info") == self.legacy_server_info_only:
                return 404, {"detail": "Not Found"}
            if self.server_info is None:
                return 503, None
            return 200, self.server_info
        if path == "/ready" and method == "GET":
            return (404, {"detail": "Not Found"}) if self.ready is None else (self.ready, None)
        if path == "/health_generate" and method == "GET":
            if self.health_generate is None:
                return 404, {"detail": "Not Found"}
            return self.health_generate, None
        if path == "/health" and method == "GET":
            return self.health, None
        if path == "/generate" and method == "POST":
            if self.on_generate is not None:
                self.on_generate()
            if self.generate_delay:
                time.sleep(self.generate_delay)
            if self.generate_status != 200 or self.generate_meta is None:
                return self.generate_status, {"error": "not now"}
            return 200, {"text": " Paris.", "meta_info": dict(self.generate_meta)}
        return 404, {"detail": "Not Found"}


@dataclasses.dataclass(frozen=True)
class SeenRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float  # fake-clock time of arrival


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _OwnedServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._answer("GET")

    def do_POST(self) -> None:
        self._answer("POST")

    def _answer(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        owner = self.server.owner
        seen = SeenRequest(method, self.path, dict(self.headers), body, owner.clock())
        owner.requests.append(seen)
        status, payload = owner.behaviour.answer(method, self.path)
        data = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _OwnedServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: ScriptedServer


class ScriptedServer:
    """A stdlib HTTP server on 127.0.0.1; until listen() the port is bound but refuses."""

    def __init__(self, listening: bool = True) -> None:
        self.behaviour = Behaviour()
        self.requests: list[SeenRequest] = []
        self.clock: Callable[[], float] = lambda: 0.0
        self._server = _OwnedServer(("127.0.0.1", 0), _Handler, bind_and_activate=False)
        self._server.owner = self
        self._server.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.server_bind()
        self.port: int = self._server.server_address[1]
        self._thread: threading.Thread | None = None
        if listening:
            self.listen()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def listen(self) -> None:
        if self._thread is None:
            self._server.server_activate()
            self._thread = threading.Thread(
                target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
            )
            self._thread.start()

    def close(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(5)
        self._server.server_close()

    def paths(self, method: str | None = None) -> list[str]:
        return [r.path for r in self.requests if method is None or r.method == method]


# ---------------------------------------------------------------------------------------------
# The host side: /proc and cgroup files on disk, systemd state in memory, all on a timeline
# ---------------------------------------------------------------------------------------------


class FakeHost:
    """A fake /proc + /sys/fs/cgroup tree and systemd unit, changed by timed events."""

    def __init__(self, root: Path, port: int, behaviour: Behaviour) -> None:
        self.proc_root = root / "proc"
        self.cgroup_root = root / "cgroup"
        (self.proc_root / "net").mkdir(parents=True)
        self.cgroup_dir = self.cgroup_root / CONTROL_GROUP.lstrip("/")
        self.cgroup_dir.mkdir(parents=True)
        self.port = port
        self.http = behaviour
        self.unit: dict[str, str] = {
            "MainPID": "0",
            "InvocationID": "",
            "ActiveState": "inactive",
            "SubState": "dead",
            "NRestarts": "0",
            "Result": "success",
            "ExecMainStatus": "0",
            "ControlGroup": CONTROL_GROUP,
            "LoadState": "loaded",
        }
        # `systemctl show -p NAME --value` text of the unit's environment properties.
        self.unit_env: dict[str, str] = {"Environment": "", "EnvironmentFiles": ""}
        self.unit_env_error: str | None = None  # systemctl show -p Environment... fails with it
        self.journal: list[str] = []
        self._unit_pids: list[int] = []
        self._listeners: dict[int, tuple[int, int]] = {}  # inode -> (pid, port)
        self._events: list[tuple[float, Callable[[], None]]] = []
        self._write_tcp()
        self._write_cgroup()

    # timeline --------------------------------------------------------------------------------

    def at(self, when: float, action: Callable[[], None]) -> None:
        self._events.append((when, action))
        self._events.sort(key=lambda item: item[0])

    def advance(self, now: float) -> None:
        while self._events and self._events[0][0] <= now:
            _, action = self._events.pop(0)
            action()

    # processes -------------------------------------------------------------------------------

    def spawn(
        self,
        pid: int,
        ppid: int = 1,
        cmdline: str = "python3 -m sglang_emulator",
        in_unit=True,
        env: Mapping[str, str] | None = None,
    ) -> None:
        pdir = self.proc_root / str(pid)
        (pdir / "fd").mkdir(parents=True, exist_ok=True)
        (pdir / "stat").write_text(f"{pid} (python3) S {ppid} {pid} {pid} 0 -1 4194560 0 0\n")
        (pdir / "cmdline").write_bytes(cmdline.replace(" ", "\0").encode() + b"\0")
        self.set_environ(pid, BASE_ENVIRON if env is None else env)
        for n in (0, 1, 2):
            link = pdir / "fd" / str(n)
            if not link.is_symlink():
                link.symlink_to("/dev/null")
        if in_unit and pid not in self._unit_pids:
            self._unit_pids.append(pid)
            self._write_cgroup()

    def kill(self, *pids: int) -> None:
        for pid in pids:
            shutil.rmtree(self.proc_root / str(pid), ignore_errors=True)
            if pid in self._unit_pids:
                self._unit_pids.remove(pid)
            for inode in [i for i, (p, _) in self._listeners.items() if p == pid]:
                del self._listeners[inode]
        self._write_cgroup()
        self._write_tcp()

    def set_environ(self, pid: int, env: Mapping[str, str] | bytes) -> None:
        """/proc/PID/environ: NUL-separated NAME=VALUE (bytes are written as they are)."""
        raw = (
            env
            if isinstance(env, bytes)
            else b"".join(f"{k}={v}".encode() + b"\0" for k, v in env.items())
        )
        (self.proc_root / str(pid) / "environ").write_bytes(raw)

    def zombie(self, pid: int) -> None:
        stat = self.proc_root / str(pid) / "stat"
        stat.write_text(stat.read_text().replace(") S ", ") Z ", 1))

    def listen(self, pid: int, inode: int, port: int | None = None) -> None:
        (self.proc_root / str(pid) / "fd" / str(10 + len(self._listeners))).symlink_to(
            f"socket:[{inode}]"
        )
        self._listeners[inode] = (pid, self.port if port is None else port)
        self._write_tcp()

    def _write_tcp(self) -> None:
        v4 = [TCP_HEADER]
        # A connected (not listening) socket on the same port must not count.
        v4.append(
            f"   0: 0100007F:{self.port:04X} 0100007F:9C40 01 00000000:00000000 00:00000000 "
            "00000000     0        0 555 1 0000000000000000 20 4 30 10 -1\n"
        )
        for n, (inode, (_, port)) in enumerate(sorted(self._listeners.items()), start=1):
            v4.append(
                f"  {n:2d}: 0100007F:{port:04X} 00000000:0000 0A 00000000:00000000 00:00000000 "
                f"00000000     0        0 {inode} 1 0000000000000000 100 0 0 10 0\n"
            )
        (self.proc_root / "net" / "tcp").write_text("".join(v4))
        (self.proc_root / "net" / "tcp6").write_text(TCP_HEADER)

    def _write_cgroup(self) -> None:
        (self.cgroup_dir / "cgroup.procs").write_text("".join(f"{p}\n" for p in self._unit_pids))

    # systemd ---------------------------------------------------------------------------------

    def set_unit(self, **props: Any) -> None:
        for key, value in props.items():
            self.unit[key] = str(value)

    def show_text(self) -> str:
        return "".join(f"{key}={value}\n" for key, value in self.unit.items())


class FakeSystemd:
    """Stands in for SystemdReader: the unit state and journal of a FakeHost."""

    def __init__(self, host: FakeHost) -> None:
        self.host = host
        self.shows = 0
        self.journal_calls: list[tuple[str, list[str], float]] = []
        self.commands: list[list[str]] = []  # the systemctl commands environment() ran

    def show(self, unit: str) -> Any:
        self.shows += 1
        return module_utils("sglang_systemd").parse_systemctl_show(self.host.show_text())

    def environment(self, unit: str) -> Any:
        """The module's real SystemdReader.environment over a fake `systemctl show -p X --value`."""

        def run(cmd: list[str]) -> tuple[int, str, str]:
            self.commands.append(cmd)
            if self.host.unit_env_error is not None:
                return 1, "", self.host.unit_env_error
            return 0, self.host.unit_env.get(cmd[cmd.index("-p") + 1], ""), ""

        return load_module().SystemdReader(run).environment(unit)

    def journal(self, unit: str, invocations: list[str], since_epoch: float) -> list[str]:
        self.journal_calls.append((unit, list(invocations), since_epoch))
        return list(self.host.journal)


class FakeClock:
    """Monotonic time that moves only when the module sleeps, running the host's timeline."""

    def __init__(self, host: FakeHost) -> None:
        self.now = 0.0
        self.host = host
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0, seconds
        self.sleeps.append(seconds)
        self.now += seconds
        self.host.advance(self.now)


# ---------------------------------------------------------------------------------------------
# Driving the module
# ---------------------------------------------------------------------------------------------


class ModuleExit(Exception):
    def __init__(self, result: dict[str, Any]) -> None:
        self.result = result


class ModuleFail(Exception):
    def __init__(self, result: dict[str, Any]) -> None:
        self.result = result


@dataclasses.dataclass
class Run:
    failed: bool
    result: dict[str, Any]  # everything exit_json/fail_json received (msg, exception included)
    clock: FakeClock
    systemd: FakeSystemd
    warnings: list[str] = dataclasses.field(default_factory=list)
    no_log_values: set[str] = dataclasses.field(default_factory=set)

    @property
    def msg(self) -> str:
        return str(self.result.get("msg", ""))


def run_module(
    args: dict[str, Any], host: FakeHost, server: ScriptedServer, check_mode: bool = False
) -> Run:
    m = load_module()
    clock = FakeClock(host)
    server.clock = clock
    host.advance(0.0)
    systemd = FakeSystemd(host)
    real_build = m.build_dependencies
    warnings: list[str] = []
    no_log_values: set[str] = set()

    def fake_build(module: Any, settings: Any) -> Any:
        deps = real_build(module, settings)  # keeps the real HttpClient (api_key, certs)
        return dataclasses.replace(
            deps,
            systemd=systemd,
            procs=m.ProcReader(str(host.proc_root), str(host.cgroup_root)),
            clock=clock,
            sleep=clock.sleep,
            wall_clock=lambda: 1_700_000_000.0,
        )

    def exit_json(self: Any, **result: Any) -> None:
        no_log_values.update(self.no_log_values)
        raise ModuleExit(result)

    def fail_json(self: Any, **result: Any) -> None:
        no_log_values.update(self.no_log_values)
        raise ModuleFail(result)

    def warn(_self: Any, warning: str) -> None:
        warnings.append(warning)

    with (
        patch_module_args({**args, "_ansible_check_mode": check_mode}),
        mock.patch.object(m, "build_dependencies", fake_build),
        mock.patch.object(m.AnsibleModule, "exit_json", exit_json),
        mock.patch.object(m.AnsibleModule, "fail_json", fail_json),
        mock.patch.object(m.AnsibleModule, "warn", warn),
    ):
        try:
            m.main()
        except ModuleExit as done:
            return Run(False, done.result, clock, systemd, warnings, no_log_values)
        except ModuleFail as failed:
            return Run(True, failed.result, clock, systemd, warnings, no_log_values)
    raise AssertionError("the module returned without exit_json or fail_json")
