"""Shared fixtures: the SGLang emulator as a subprocess, fake model and drafter directories."""

from __future__ import annotations

import http.client
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

EMULATOR_DIR = Path(__file__).parent / "emulator"
sys.path.insert(0, str(EMULATOR_DIR))  # lets tests import sglang_emulator's modules directly

# The emulator must run on a bare host's python3: use the system one when there is one.
SYSTEM_PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

# Log lines that mark each phase (the emulator's log contract).
PHASE_MARKERS = {
    "loading": "Load weight begin",
    "warmup": "Uvicorn running on",
    "ready": "The server is fired up and ready to roll!",
}


# Ports for the emulators tests start, below the kernel's ephemeral range: a port bound to 0 comes
# from that range, and the emulator binds it only after its load (as SGLang does), by when another
# process's outgoing connection may hold it (CI: EADDRINUSE with three pytest workers). Each xdist
# worker takes its own block, so two workers never hand out the same port (8 workers: 24768 and up,
# clear of the ports the test hosts publish from 18080 on, which a bind test cannot see).
_PORT_BLOCK = 1000
_EPHEMERAL_LOW = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
_next_port = itertools.count()


def free_port() -> int:
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    base = _EPHEMERAL_LOW - _PORT_BLOCK * (worker + 1)
    assert base > 20000, f"no block of ports below {_EPHEMERAL_LOW} for worker {worker}"
    for _ in range(_PORT_BLOCK):
        port = base + next(_next_port) % _PORT_BLOCK
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:  # a listener of another program
                continue
        return port
    raise RuntimeError(f"no free port in {base}-{base + _PORT_BLOCK - 1}")


@dataclass
class HttpResult:
    status: int
    body: bytes
    headers: dict[str, str]

    def json(self) -> Any:
        return json.loads(self.body)

    def sse(self) -> list[str]:
        """The `data:` payloads of an event stream, in order."""
        return [
            line[len("data: ") :]
            for line in self.body.decode().split("\n")
            if line.startswith("data: ")
        ]


@dataclass
class ModelDirs:
    model: Path
    drafter: Path


class EmulatorProcess:
    """One emulator subprocess; its combined output goes to a log file."""

    def __init__(self, proc: subprocess.Popen[bytes], port: int, log_path: Path) -> None:
        self.proc = proc
        self.port = port
        self.log_path = log_path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for(self, phase: str, timeout: float = 15.0) -> None:
        marker = PHASE_MARKERS[phase]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if marker in self.log():
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"emulator exited ({self.proc.returncode}):\n{self.log()}")
            time.sleep(0.02)
        raise AssertionError(f"emulator never reached {phase}:\n{self.log()}")

    def wait_exit(self, timeout: float = 15.0) -> int:
        return self.proc.wait(timeout=timeout)

    def signal(self, sig: int = signal.SIGTERM) -> None:
        self.proc.send_signal(sig)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        timeout: float = 10.0,
    ) -> HttpResult:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            data = json.dumps(body).encode() if body is not None else None
            hdrs = {"content-type": "application/json", **(headers or {})}
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            return HttpResult(resp.status, resp.read(), dict(resp.getheaders()))
        finally:
            conn.close()

    def get(self, path: str, **kw: Any) -> HttpResult:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any, **kw: Any) -> HttpResult:
        return self.request("POST", path, body, **kw)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


StartEmulator = Callable[..., EmulatorProcess]


def _make_model_dirs(root: Path, block_size: int | None = 16) -> ModelDirs:
    model = root / "model"
    drafter = root / "drafter"
    model.mkdir(parents=True, exist_ok=True)
    drafter.mkdir(parents=True, exist_ok=True)
    (model / "config.json").write_text(
        json.dumps(
            {
                "architectures": ["DeepseekV3ForCausalLM"],
                "model_type": "deepseek_v3",
                "max_position_embeddings": 16384,
                # DeepSeek-V3's: the bench's random category falls back to it without /tokenize
                "vocab_size": 129280,
            }
        )
    )
    drafter_cfg: dict[str, Any] = {"architectures": ["DFlashDraftModel"]}
    if block_size is not None:
        drafter_cfg["block_size"] = block_size
    (drafter / "config.json").write_text(json.dumps(drafter_cfg))
    return ModelDirs(model, drafter)


@pytest.fixture(scope="session")
def model_dirs(tmp_path_factory: pytest.TempPathFactory) -> ModelDirs:
    """A fake target model dir (config.json, context 16384) and a DFlash drafter (block 16)."""
    return _make_model_dirs(tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="session")
def make_model_dirs(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., ModelDirs]:
    """Factory for model dirs with a given drafter block_size (None: no block_size key)."""

    def make(block_size: int | None = 16) -> ModelDirs:
        return _make_model_dirs(tmp_path_factory.mktemp("models"), block_size)

    return make


def _launcher(tmp_dir: Path) -> tuple[StartEmulator, list[EmulatorProcess]]:
    started: list[EmulatorProcess] = []

    def start(
        flags: list[str],
        env: dict[str, str] | None = None,
        wait_for: str | None = "ready",
        port: int | None = None,
        timeout: float = 15.0,
    ) -> EmulatorProcess:
        port = port or free_port()
        full_env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": str(EMULATOR_DIR),
            "PYTHONUNBUFFERED": "1",
            "SGLANG_EMU_LOAD_SECONDS": "0.2",
            "SGLANG_EMU_WARMUP_SECONDS": "0.1",
            "SGLANG_EMU_DRAIN_SECONDS": "1",
            **(env or {}),
        }
        log_path = tmp_dir / f"emulator-{port}-{len(started)}.log"
        with open(log_path, "wb") as log_file:
            proc = subprocess.Popen(
                [SYSTEM_PYTHON, "-m", "sglang_emulator", "--port", str(port), *flags],
                env=full_env,
                stdout=log_file,
                stderr=subprocess.STDOUT,
            )
        emu = EmulatorProcess(proc, port, log_path)
        started.append(emu)
        if wait_for is not None:
            emu.wait_for(wait_for, timeout)
        return emu

    return start, started


@pytest.fixture
def start_emulator(tmp_path: Path) -> Iterator[StartEmulator]:
    """start_emulator(flags, env=..., wait_for="ready"|"warmup"|"loading"|None) -> process.

    Short phases by default (load 0.2 s, warm-up 0.1 s, drain 1 s); every process started
    is killed at the end of the test.
    """
    start, started = _launcher(tmp_path)
    yield start
    for emu in started:
        emu.stop()


@pytest.fixture(scope="module")
def start_module_emulator(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[StartEmulator]:
    """Like start_emulator, shared by the tests of one module."""
    start, started = _launcher(tmp_path_factory.mktemp("emulator"))
    yield start
    for emu in started:
        emu.stop()


# --- tests/releases: every real SGLang release (tests/releases/harness.py) ----------------------
# Marked `releases`: `make releases` runs them after building the real-SGLang test image, and
# `make unit` leaves them out. (One conftest for the tree: tests import from it as `conftest`.)
RELEASES_DIR = Path(__file__).parent / "releases"
sys.path.insert(0, str(RELEASES_DIR))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if RELEASES_DIR in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.releases)


@pytest.fixture(scope="session")
def release_facts() -> dict[str, dict[str, Any]]:
    """version -> what that release's own parser and source say (cached per wheel)."""
    import harness

    return harness.all_facts()
