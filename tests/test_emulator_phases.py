"""What each endpoint says in each phase (tests/emulator/README.md), and faults."""

from __future__ import annotations

import signal
import socket
import time

import pytest
from conftest import EmulatorProcess, ModelDirs, StartEmulator
from sglang_emulator.settings import Settings

INFO = ("/v1/models", "/model_info", "/server_info")
HEALTH = ("/health", "/health_generate", "/ready")
GEN = {"text": "Tell me about Paris", "sampling_params": {"max_new_tokens": 4}}


def dflash(dirs: ModelDirs, window: int = 2048) -> list[str]:
    return [
        "--model-path", str(dirs.model),
        "--speculative-algorithm", "DFLASH",
        "--speculative-draft-model-path", str(dirs.drafter),
        "--speculative-draft-window-size", str(window),
    ]  # fmt: skip


def refused(emu: EmulatorProcess) -> bool:
    try:
        socket.create_connection(("127.0.0.1", emu.port), timeout=1).close()
    except ConnectionRefusedError:
        return True
    return False


def test_loading_refuses_connections(start_emulator: StartEmulator, model_dirs: ModelDirs):
    emu = start_emulator(
        dflash(model_dirs), env={"SGLANG_EMU_LOAD_SECONDS": "2"}, wait_for="loading"
    )
    assert refused(emu)
    emu.wait_for("ready")
    assert not refused(emu)
    log = emu.log()
    for line in ("Load weight end", "Capture cuda graph begin", "Capture cuda graph end"):
        assert line in log
    assert log.index("Load weight end") < log.index("Uvicorn running on")


def test_warmup_then_ready(start_emulator: StartEmulator, model_dirs: ModelDirs):
    emu = start_emulator(
        dflash(model_dirs), env={"SGLANG_EMU_WARMUP_SECONDS": "3"}, wait_for="warmup"
    )
    for path in INFO:
        assert emu.get(path).status == 200, path
    for path in HEALTH:
        assert emu.get(path).status == 503, path
    assert emu.post("/generate", GEN).status == 200  # accepted during warm-up
    emu.wait_for("ready")
    for path in (*INFO, *HEALTH):
        assert emu.get(path).status == 200, path
    # The server's own warm-up generation ran (6 prompt tokens) before the ready line, and
    # stays out of the client-side ground truth.
    log = emu.log()
    assert log.index("#new-token: 6,") < log.index("fired up")
    records = emu.get("/emulator/requests").json()["requests"]
    assert [r["prompt_tokens"] for r in records] == [4]  # "Tell me about Paris"


def test_ready_endpoint_only_from_0_5_20(start_emulator: StartEmulator, model_dirs: ModelDirs):
    old = start_emulator(["--model-path", str(model_dirs.model)],
                         env={"SGLANG_EMU_VERSION": "0.5.11"})  # fmt: skip
    assert old.get("/ready").status == 404
    assert old.get("/health").status == 200
    assert old.get("/server_info").json()["version"] == "0.5.11"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_draining_serves_old_config_then_exits_0(
    start_emulator: StartEmulator, model_dirs: ModelDirs, sig: int
):
    emu = start_emulator(dflash(model_dirs, window=4096), env={"SGLANG_EMU_DRAIN_SECONDS": "3"})
    emu.signal(sig)
    deadline = time.monotonic() + 2
    while emu.get("/health").status != 503 and time.monotonic() < deadline:
        time.sleep(0.05)
    for path in HEALTH:
        assert emu.get(path).status == 503, path
    assert emu.get("/v1/models").status == 200
    info = emu.get("/server_info").json()
    assert info["speculative_draft_window_size"] == 4096
    assert info["speculative_algorithm"] == "DFLASH"
    gen = emu.post("/generate", GEN)
    assert gen.status == 200
    assert gen.json()["meta_info"]["completion_tokens"] == 4
    assert emu.post("/v1/completions", {"prompt": "hi", "max_tokens": 2}).status == 200
    assert emu.wait_exit(timeout=10) == 0


def test_bind_failure_comes_after_loading(start_emulator: StartEmulator, model_dirs: ModelDirs):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        emu = start_emulator(dflash(model_dirs), port=port, wait_for=None)
        assert emu.wait_exit() == 1
    log = emu.log()
    assert "[Errno 98] Address already in use" in log
    assert "Traceback (most recent call last)" in log
    assert log.index("Load weight end") < log.index("Traceback")


def test_server_args_logged_with_api_key(start_emulator: StartEmulator, model_dirs: ModelDirs):
    emu = start_emulator(["--model-path", str(model_dirs.model), "--api-key", "s3cret-key"],
                         wait_for="loading")  # fmt: skip
    line = next(ln for ln in emu.log().splitlines() if "server_args=" in ln)
    assert "'api_key': 's3cret-key'" in line
    assert line.startswith("[20")  # [YYYY-MM-DD HH:MM:SS]


def test_crash_while_loading(start_emulator: StartEmulator, model_dirs: ModelDirs):
    emu = start_emulator(dflash(model_dirs), env={"SGLANG_EMU_FAULT": "crash_loading"},
                         wait_for=None)  # fmt: skip
    assert emu.wait_exit() == 1
    log = emu.log()
    assert "Traceback (most recent call last)" in log
    assert "Load weight begin" in log and "Load weight end" not in log
    assert refused(emu)


def test_warmup_failure(start_emulator: StartEmulator, model_dirs: ModelDirs):
    emu = start_emulator(dflash(model_dirs), env={"SGLANG_EMU_FAULT": "warmup_fail"},
                         wait_for=None)  # fmt: skip
    assert emu.wait_exit() != 0
    log = emu.log()
    assert "Initialization failed. warmup error" in log
    assert "fired up" not in log


def test_hang_after_n_requests(start_emulator: StartEmulator, model_dirs: ModelDirs):
    emu = start_emulator(
        dflash(model_dirs),
        env={"SGLANG_EMU_FAULT": "hang_after:2", "SGLANG_HEALTH_CHECK_TIMEOUT": "2",
             "SGLANG_EMU_TIME_SCALE": "0", "SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION": "false"},
    )  # fmt: skip
    assert emu.post("/generate", GEN).status == 200  # the 2nd, counting the warm-up
    assert emu.get("/health").status == 200
    with pytest.raises(TimeoutError):
        emu.post("/generate", GEN, timeout=1.5)
    assert emu.get("/health").status == 200  # generation off: still "healthy"
    start = time.monotonic()
    assert emu.get("/health_generate", timeout=10).status == 503
    assert time.monotonic() - start >= 1.9  # only after SGLANG_HEALTH_CHECK_TIMEOUT


def test_health_generates_by_default_like_sglang(
    start_emulator: StartEmulator, model_dirs: ModelDirs
):
    # SGLang's SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION is an EnvBool defaulting to true: a bare
    # /health waits for a generated token, so a hung scheduler turns it 503.
    emu = start_emulator(
        dflash(model_dirs),
        env={"SGLANG_EMU_FAULT": "hang_after:1", "SGLANG_HEALTH_CHECK_TIMEOUT": "2",
             "SGLANG_EMU_TIME_SCALE": "0"},
    )  # fmt: skip
    start = time.monotonic()
    assert emu.get("/health", timeout=10).status == 503
    assert time.monotonic() - start >= 1.9


def test_health_generation_flag_values(start_emulator: StartEmulator, model_dirs: ModelDirs):
    emu = start_emulator(
        dflash(model_dirs),
        env={"SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION": "sometimes"},
    )
    # SGLang's EnvField.get(): a value that does not parse warns and falls back to the default
    # (true), so /health still generates and takes its one-second poll.
    start = time.monotonic()
    assert emu.get("/health", timeout=10).status == 200
    assert time.monotonic() - start >= 0.9
    assert (
        'Invalid value for SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION: "sometimes" is not a valid'
        ' boolean value, using default "True"' in emu.log()
    )


def test_drain_waits_for_hung_requests_until_a_health_check_fails(
    start_emulator: StartEmulator, model_dirs: ModelDirs
):
    # SGLang's sigterm_watchdog waits while requests remain, hung ones included, but exits at
    # its next check once a health check has failed ("Force exiting").
    emu = start_emulator(
        dflash(model_dirs),
        env={"SGLANG_EMU_FAULT": "hang_after:1", "SGLANG_HEALTH_CHECK_TIMEOUT": "1",
             "SGLANG_EMU_TIME_SCALE": "0", "SGLANG_EMU_DRAIN_SECONDS": "0.3",
             "SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION": "false"},
    )  # fmt: skip
    with pytest.raises(TimeoutError):
        emu.post("/generate", GEN, timeout=0.5)  # hangs, stays in flight
    emu.signal(signal.SIGTERM)
    time.sleep(1.2)  # four checks
    assert emu.proc.poll() is None
    assert "Remaining number of requests 1." in emu.log()
    # Again, with a health check that fails (hung scheduler) before the signal.
    emu.signal(signal.SIGKILL)
    emu.wait_exit()
    emu = start_emulator(
        dflash(model_dirs),
        env={"SGLANG_EMU_FAULT": "hang_after:1", "SGLANG_HEALTH_CHECK_TIMEOUT": "1",
             "SGLANG_EMU_TIME_SCALE": "0", "SGLANG_EMU_DRAIN_SECONDS": "0.3"},
    )  # fmt: skip
    with pytest.raises(TimeoutError):
        emu.post("/generate", GEN, timeout=0.5)
    assert emu.get("/ready").status == 200
    assert emu.get("/health_generate", timeout=5).status == 503  # the check fails
    # ServerStatus.UnHealthy: TokenizerManager.is_ready() is false from now on.
    assert emu.get("/ready").status == 503
    emu.signal(signal.SIGTERM)
    assert emu.wait_exit(timeout=5) == 0
    assert "Signal SIGTERM received while health check failed. Force exiting." in emu.log()


@pytest.mark.parametrize("raw", ["0", "-1"])
def test_warmup_timeout_not_positive_means_600_s(
    start_emulator: StartEmulator, model_dirs: ModelDirs, raw: str
):
    # SGLANG_WARMUP_TIMEOUT is an EnvFloat(-1); the warm-up request takes it only when > 0,
    # else 600 s (0.5.23 entrypoints/http_server.py:2491-2498).
    assert Settings.from_env({"SGLANG_WARMUP_TIMEOUT": raw}).warmup_timeout == 600.0
    assert Settings.from_env({"SGLANG_WARMUP_TIMEOUT": "30"}).warmup_timeout == 30.0
    emu = start_emulator(dflash(model_dirs), env={"SGLANG_WARMUP_TIMEOUT": raw})
    assert emu.get("/ready").status == 200
    assert "Initialization failed" not in emu.log()
