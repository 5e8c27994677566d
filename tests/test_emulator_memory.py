"""The emulator's GPU memory model (sglang_emulator/memory_model.py): monotone, the demo grid
fits, the over-the-edge grid fails where tests/emulator/README.md says, SGLang's own words."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import ModelDirs
from sglang_emulator import memory_model as mm
from sglang_emulator.flags import build_parser, resolve
from sglang_emulator.settings import Settings

FIXTURE = Path(__file__).parent / "fixtures" / "real_sglang" / "0.5.23" / "failures.json"
RTX_PRO_GB = 97887 / 1024  # tests/fakes/nvidia-smi rtx-pro-6000-8x memory_mib

# The real SGLang 0.5.23 wheel's words (cache/real-sglang-wheelhouse/sglang-0.5.23-*.whl):
# sglang/srt/model_executor/pool_configurator.py:96
REAL_NOT_ENOUGH = "Not enough memory. Please try to increase --mem-fraction-static."
# sglang/srt/model_executor/runner_backend_utils/__init__.py:14-21 CUDA_GRAPH_CAPTURE_FAILED_MSG
REAL_CAPTURE_HINT = (
    "Possible solutions:\n"
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
    "2. set --cuda-graph-max-bs-decode to a smaller value (e.g., 16)\n"
    "3. disable decode CUDA graph by --cuda-graph-backend-decode=disabled. "
    "(Not recommended. Huge performance loss)\n"
    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n"
)
# sglang/srt/model_executor/runner/decode_cuda_graph_runner.py:602-604
#   raise Exception(f"Capture cuda graph failed: {e}\n{CUDA_GRAPH_CAPTURE_FAILED_MSG}")
REAL_CAPTURE_PREFIX = "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate "
# sglang/srt/mem_cache/kv_cache_configurator.py:3050-3060 (the weights exceed the static part)
REAL_WEIGHTS_PREFIX = (
    "ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static="
)
# sglang/srt/managers/scheduler.py:6372, entrypoints/engine.py:1977-1979, utils/common.py:2523
REAL_SCHED = "Scheduler hit an exception: Traceback (most recent call last):"
REAL_SIGQUIT = "Received sigquit from a child process. It usually means the child failed."

DEMO = {"tp_size": "8"}  # inventory/demo: tp 8, no nvidia-smi (an H200 by default)
OVER_EDGE = {"budget": [8, 16, 32, 64], "window": [1024, 2048, 4096], "topk": [1, 2, 4]}
# Where the over-the-edge grid fails (tests/emulator/README.md), (budget, topk, window).
OVER_EDGE_FAILS = {(b, k, 4096) for b in (32, 64) for k in (1, 2, 4)}


def args_for(
    model_dirs: ModelDirs,
    algorithm: str | None = "DDTREE",
    budget: int | None = 16,
    window: int | None = 2048,
    extra: list[str] | None = None,
    version: str = "ddtree",
) -> dict[str, Any]:
    argv = ["--model-path", str(model_dirs.model)]
    if algorithm:
        argv += ["--speculative-algorithm", algorithm]
        argv += ["--speculative-draft-model-path", str(model_dirs.drafter)]
        if window is not None:
            argv += ["--speculative-draft-window-size", str(window)]
        if algorithm == "DDTREE" and budget is not None:
            argv += ["--speculative-ddtree-budget", str(budget)]
    argv += extra or []
    settings = Settings.from_env({"SGLANG_EMU_VERSION": version})
    return resolve(build_parser(version).parse_args(argv), settings, argv)


def verdict(
    model_dirs: ModelDirs,
    topk: int = 6,
    gpu: float = mm.DEFAULT_GPU_MEMORY_GB,
    model_gb: float = mm.DEFAULT_MODEL_GB,
    **kw: Any,
) -> mm.MemoryVerdict:
    args = args_for(model_dirs, **kw)
    inputs = mm.MemoryInputs.from_args(
        args, gpu_memory_gb=gpu, model_gb=model_gb, ddtree_max_topk=topk
    )
    return mm.memory_verdict(inputs)


def test_monotone_in_budget_topk_window_and_batch(model_dirs: ModelDirs) -> None:
    """Demand never falls as budget, topk, window or max batch rise; so the failures form an
    upper set (sweep/store/failures.py relies on it)."""
    budgets, topks = (4, 8, 15, 16, 31, 32, 48, 64, 128), (1, 2, 3, 4, 6, 8, 16)
    windows, batches = (16, 512, 1024, 2048, 4096, 8192), (1, 8, 48, 64, 256)
    grid = list(itertools.product(budgets, topks, windows, batches))
    need = {}
    for b, k, w, bs in grid:
        v = verdict(
            model_dirs, topk=k, budget=b, window=w, extra=["--cuda-graph-max-bs-decode", str(bs)]
        )
        need[(b, k, w, bs)] = (v.dynamic_gb, v.weights_gb - v.kv_pool_gb, v.fits)
    for (b, k, w, bs), (dyn, static, fits) in need.items():
        for axis in range(4):
            up = [b, k, w, bs]
            values = (budgets, topks, windows, batches)[axis]
            i = values.index(up[axis])
            if i + 1 == len(values):
                continue
            up[axis] = values[i + 1]
            dyn2, static2, fits2 = need[tuple(up)]  # type: ignore[index]
            assert dyn2 >= dyn and static2 >= static, ((b, k, w, bs), up)
            assert fits or not fits2, ((b, k, w, bs), up)


def test_eagle_topk_and_deterministic(model_dirs: ModelDirs) -> None:
    def eagle(topk: int) -> mm.MemoryVerdict:
        return verdict(
            model_dirs,
            algorithm="EAGLE3",
            window=None,
            extra=["--speculative-eagle-topk", str(topk), "--speculative-num-draft-tokens", "8"],
        )

    assert eagle(4).spec_buffers_gb > eagle(1).spec_buffers_gb
    assert eagle(4) == eagle(4)


def test_demo_default_grid_fits(model_dirs: ModelDirs) -> None:
    """inventory/demo: DDTREE budget [32, 48] x topk [2, 4], window 2048, tp 8, the baseline,
    and main.yml's own DFLASH point; the tests' own configurations (tp 1) too."""
    tp8 = ["--tp-size", "8"]
    for budget, topk in itertools.product((32, 48), (2, 4)):
        v = verdict(model_dirs, topk=topk, budget=budget, extra=tp8)
        assert v.fits, (budget, topk, v)
        assert verdict(model_dirs, topk=topk, budget=budget, gpu=RTX_PRO_GB, extra=[
            *tp8, "--mem-fraction-static", "0.85"]).fits  # fmt: skip
    assert verdict(model_dirs, algorithm=None, extra=tp8).fits
    assert verdict(model_dirs, algorithm="DFLASH", extra=tp8).fits
    # tests/test_emulator_*: DDTREE 64 (topk 6, window 2048 or none), DFLASH window 4096, tp 1
    assert verdict(model_dirs, budget=64).fits
    assert verdict(model_dirs, budget=64, window=None).fits
    assert verdict(model_dirs, algorithm="DFLASH", window=4096).fits
    assert verdict(model_dirs, algorithm=None).fits
    # molecule's hosts with the fake nvidia-smi (RTX PRO 6000): small budgets, window 2048
    for budget in (4, 8, 16):
        assert verdict(model_dirs, topk=4, budget=budget, gpu=RTX_PRO_GB).fits


def test_over_the_edge_grid_fails_where_documented(model_dirs: ModelDirs) -> None:
    failed = set()
    for b, w, k in itertools.product(*OVER_EDGE.values()):
        v = verdict(model_dirs, topk=k, budget=b, window=w, extra=["--tp-size", "8"])
        if not v.fits:
            assert v.kind == "cuda_graph"
            failed.add((b, k, w))
    assert failed == OVER_EDGE_FAILS
    readme = (Path(__file__).parent / "emulator" / "README.md").read_text()
    assert "## Over the edge: a demo grid that runs out of memory" in readme
    assert json.dumps(OVER_EDGE, separators=(",", ":")) in readme


def test_kv_pool_failures(model_dirs: ModelDirs) -> None:
    tp8 = ["--tp-size", "8"]
    assert verdict(model_dirs, model_gb=1000, extra=tp8).kind == "weights"
    assert verdict(model_dirs, extra=[*tp8, "--mem-fraction-static", "0.05"]).kind == "weights"
    # rest > 0 but under one token's KV cell: the pool gets 0 tokens
    v = verdict(model_dirs, extra=tp8)
    exact = (v.static_gb - v.draft_weights_gb - 1e-6) * 8
    assert verdict(model_dirs, model_gb=exact, extra=tp8).kind == "kv_pool"


def test_messages_are_the_real_ones(model_dirs: ModelDirs) -> None:
    assert mm.NOT_ENOUGH_MEMORY == REAL_NOT_ENOUGH
    assert mm.CUDA_GRAPH_CAPTURE_FAILED_MSG == REAL_CAPTURE_HINT
    tp8 = ["--tp-size", "8"]
    site = "/opt/sglang/venv/lib/python3.11/site-packages"
    graph = verdict(model_dirs, topk=4, budget=64, window=4096, extra=tp8)
    text = mm.failure_traceback(graph, 0.88, site)
    assert f"\n{REAL_CAPTURE_PREFIX}" in text
    assert text.endswith(REAL_CAPTURE_HINT + "\n")
    assert "\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate " in text
    weights = verdict(model_dirs, model_gb=1000, extra=tp8)
    assert f"\n{REAL_WEIGHTS_PREFIX}0.88. Raise --mem-fraction-static above " in (
        mm.failure_traceback(weights, 0.88, site)
    )
    # The "Not enough memory" traceback: frame for frame the recorded real one where the paths
    # agree (the real server took the token-cap path, calculate_pool_sizes_from_max_tokens).
    v = verdict(model_dirs, extra=tp8)
    kv = verdict(model_dirs, model_gb=(v.static_gb - v.draft_weights_gb - 1e-6) * 8, extra=tp8)
    ours = mm.failure_traceback(kv, 0.88, site).splitlines()
    real = json.loads(FIXTURE.read_text())["out_of_memory"]
    start = next(i for i, line in enumerate(real) if "Scheduler hit an exception" in line)
    real_tb = [real[start].split("Scheduler hit an exception: ", 1)[1], *real[start + 1 :]]
    assert ours[:23] == real_tb[:23]  # down to kv_cache_configurator.py:3183 and its carets
    end = real_tb.index(f"RuntimeError: {REAL_NOT_ENOUGH}") + 1
    assert ours[-5:] == real_tb[end - 5 : end]  # <string> __init__, __post_init__, the error
    assert real_tb[end] == ""  # logging's newline after the traceback's own: a blank line
    assert REAL_SIGQUIT in "\n".join(real)


def ddtree_tp8(model_dirs: ModelDirs, budget: int, window: int) -> list[str]:
    """The demo host's launch (DDTREE, tp 8) at a budget and window."""
    return [
        "--model-path", str(model_dirs.model), "--tp-size", "8",
        "--speculative-algorithm", "DDTREE",
        "--speculative-draft-model-path", str(model_dirs.drafter),
        "--speculative-ddtree-budget", str(budget), "--speculative-draft-window-size", str(window),
    ]  # fmt: skip


def test_over_the_edge_server_fails_after_loading(
    start_emulator: Any, model_dirs: ModelDirs
) -> None:
    """A point of the over-the-edge grid: loads for its load time, never binds, dies as SGLang
    does (SIGKILL from its own kill_process_tree)."""
    flags = ddtree_tp8(model_dirs, budget=64, window=4096)
    env = {
        "SGLANG_EMU_VERSION": "ddtree",
        "SGLANG_DDTREE_MAX_TOPK": "4",
        "SGLANG_EMU_LOAD_SECONDS": "1.5",
        "SGLANG_EMU_TIME_SCALE": "0",
    }
    t0 = time.monotonic()
    emu = start_emulator(flags, env=env, wait_for=None)
    code = emu.proc.wait(timeout=30)
    elapsed = time.monotonic() - t0
    log = emu.log_path.read_text()
    assert code == -9, log
    assert elapsed >= 1.5, elapsed
    assert REAL_SCHED in log and f"\n{REAL_CAPTURE_PREFIX}" in log and REAL_SIGQUIT in log
    assert "Capture cuda graph begin" in log and "Capture cuda graph end" not in log
    assert "Uvicorn running" not in log and "fired up" not in log


def test_a_server_that_fits_logs_the_share_of_its_reserve_it_used(
    start_emulator: Any, model_dirs: ModelDirs
) -> None:
    """What the model search fits (sweep/search/memory.py memory_share): the share of the memory
    free before graph capture that the capture took, read from the log as the sweep reads the
    journal, is the model's A + G + B over R, which reaches 1 where the start fails."""
    from sweep.search.memory import memory_share

    flags = ddtree_tp8(model_dirs, budget=32, window=2048)
    env = {"SGLANG_EMU_VERSION": "ddtree", "SGLANG_DDTREE_MAX_TOPK": "4"}
    emu = start_emulator(flags, env=env)
    v = verdict(model_dirs, topk=4, budget=32, window=2048, extra=["--tp-size", "8"])
    share = memory_share(emu.log_path.read_text())
    assert v.fits and share is not None
    assert share == pytest.approx(v.dynamic_gb / v.reserve_gb, abs=0.002)


@pytest.mark.parametrize("raw", ["0", "-3"])
def test_gpu_memory_knob_must_be_positive(raw: str) -> None:
    with pytest.raises(ValueError, match="SGLANG_EMU_GPU_MEMORY_GB"):
        Settings.from_env({"SGLANG_EMU_GPU_MEMORY_GB": raw})
