"""Start-up, warm-up and shutdown, in SGLang's order: load, bind, warm up, ready, drain."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from typing import Any

from . import memory_model
from .api import WARMUP_HEADER, Emulator
from .http import bind_socket, serve_connection
from .logs import log
from .phases import Phase
from .settings import Settings

SHARDS = 8
DEFAULT_CONTEXT_LENGTH = 32768
WARMUP_PROMPT = "The capital city of France is"


def _read_model_config(path: str) -> dict[str, Any]:
    cfg_file = os.path.join(path, "config.json")
    if not os.path.isdir(path) or not os.path.isfile(cfg_file):
        raise OSError(
            f"Can't load the configuration of '{path}'. If you were trying to load it from "
            "'https://huggingface.co/models', make sure you don't have a local directory with "
            f"the same name. Otherwise, make sure '{path}' is the correct path to a directory "
            "containing a config.json file"
        )
    with open(cfg_file) as f:
        return dict(json.load(f))


def gpu_memory_gb(settings: Settings) -> float:
    """One card's memory (GiB): SGLANG_EMU_GPU_MEMORY_GB, else the smallest memory.total that
    nvidia-smi reports (a test host's fake one answers for its hardware class), else an H200's."""
    if settings.gpu_memory_gb is not None:
        return settings.gpu_memory_gb
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run(
                [smi, "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                capture_output=True,
                text=True,
                timeout=10,
                check=True,
            ).stdout
            mib = [float(line.split()[0]) for line in out.splitlines() if line.strip()]
            if mib:
                return min(mib) / 1024
        except (OSError, subprocess.SubprocessError, ValueError, IndexError):
            pass
    return memory_model.DEFAULT_GPU_MEMORY_GB


def memory_verdict(emu: Emulator) -> memory_model.MemoryVerdict:
    s = emu.settings
    inputs = memory_model.MemoryInputs.from_args(
        emu.args,
        gpu_memory_gb=gpu_memory_gb(s),
        model_gb=s.model_gb,
        ddtree_max_topk=s.ddtree_max_topk,
    )
    return memory_model.memory_verdict(inputs)


def die_out_of_memory(emu: Emulator, verdict: memory_model.MemoryVerdict) -> None:
    """As SGLang 0.5.23 ends: the scheduler logs its exception (managers/scheduler.py:6372, one
    logging record: the first line stamped, the traceback's lines as they are) and SIGQUITs the
    launcher, whose handler (entrypoints/engine.py:1976-1980) logs and kills its process tree,
    itself included (utils/common.py:2523, SIGKILL: status -9, 137 from a shell)."""
    site = sysconfig.get_paths()["purelib"]
    mfs = float(emu.args.get("mem_fraction_static") or 0.88)
    text = memory_model.failure_traceback(verdict, mfs, site)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    sys.stderr.write(f"[{stamp}] Scheduler hit an exception: {text}\n")
    sys.stderr.flush()
    log("Received sigquit from a child process. It usually means the child failed.")
    pid = os.getpid()
    log(f"kill_process_tree called: parent_pid={pid}, include_parent=True, pid={pid}")
    os.kill(pid, signal.SIGKILL)


def load(emu: Emulator) -> None:
    """The loading phase: the port is not bound; SGLang logs weight loading and graph capture.
    A configuration over the card's memory (memory_model.py) fails as SGLang does: after the
    weights load (KV pool), or after the graph capture time (CUDA graphs)."""
    s, args = emu.settings, emu.args
    t0 = time.monotonic()
    mem = memory_verdict(emu)
    weights_s, graph_s = 0.7 * s.load_seconds, 0.3 * s.load_seconds
    emu.model_config = _read_model_config(str(args["model_path"]))
    # SGLang keeps server_args.context_length as given (null in /server_info when unset) and
    # takes the model's own limit from config.json.
    emu.model_context_length = int(
        emu.model_config.get("max_position_embeddings") or DEFAULT_CONTEXT_LENGTH
    )
    log(f"Load weight begin. avail mem={mem.pre_gb:.2f} GB")
    for i in range(SHARDS + 1):
        pct = 100 * i // SHARDS
        log(f"Loading safetensors checkpoint shards: {pct:3d}% Completed | {i}/{SHARDS}")
        if s.fault.kind == "crash_loading" and i == SHARDS // 2:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        if i < SHARDS:
            time.sleep(weights_s / SHARDS)
    after_target = mem.pre_gb - mem.target_weights_gb
    log(
        "Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, "
        f"avail mem={after_target:.2f} GB, mem usage={mem.target_weights_gb:.2f} GB."
    )
    draft = args.get("speculative_draft_model_path")
    if args.get("speculative_algorithm") and draft:
        if not os.path.isdir(draft):
            raise OSError(f"Can't load the configuration of '{draft}'.")
        log(f"Load weight begin (draft model {draft}). avail mem={after_target:.2f} GB")
        log(f"Load weight end (draft model). mem usage={mem.draft_weights_gb:.2f} GB.")
    load_weight = time.monotonic() - t0
    if mem.kind in ("weights", "kv_pool"):
        time.sleep(graph_s)  # the rest of the load time: the failure comes at its end
        die_out_of_memory(emu, mem)
    log(f"KV Cache is allocated. #tokens: {mem.kv_tokens}, KV size: {mem.kv_pool_gb:.2f} GB")
    before_graphs = mem.pre_gb - mem.weights_gb - mem.kv_pool_gb
    log(
        "Capture cuda graph begin. This can take up to several minutes. "
        f"avail mem={before_graphs:.2f} GB"
    )
    t1 = time.monotonic()
    time.sleep(graph_s)
    graph = time.monotonic() - t1
    if mem.kind == "cuda_graph":
        die_out_of_memory(emu, mem)
    # what the capture took: the graphs' pool with the activations of their warm-up and the
    # speculative buffers (the allocation that fails when it does: memory_model.torch_oom_message)
    log(
        f"Capture cuda graph end. Time elapsed: {graph:.2f} s. mem usage={mem.dynamic_gb:.2f} GB. "
        f"avail mem={before_graphs - mem.dynamic_gb:.2f} GB."
    )
    emu.startup_time = {
        "load_weight": load_weight,
        "kv_cache_allocation": 0.0,
        "scheduler_e2e": time.monotonic() - t0,
        # SGLang 0.5.23's keys (draft_* are 0 without a drafter)
        "cuda_graph": {
            "prefill": 0.0,
            "decode": graph,
            "target_verify": 0.0,
            "draft_prefill": 0.0,
            "draft_decode": 0.0,
            "draft_extend": 0.0,
        },
        "tokenizer_e2e": time.monotonic() - t0,
    }


async def _http(
    host: str, port: int, method: str, path: str, body: dict[str, Any] | None, api_key: str | None
) -> int:
    reader, writer = await asyncio.open_connection(host, port)
    data = json.dumps(body).encode() if body is not None else b""
    # The header keeps the server's own warm-up out of /emulator/requests (client ground truth).
    head = f"{method} {path} HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n"
    head += f"{WARMUP_HEADER}: 1\r\n"
    if api_key:
        head += f"authorization: Bearer {api_key}\r\n"
    head += f"content-type: application/json\r\ncontent-length: {len(data)}\r\n\r\n"
    writer.write(head.encode() + data)
    await writer.drain()
    status_line = await reader.readline()
    await reader.read()
    writer.close()
    return int(status_line.split()[1])


async def warm_up(emu: Emulator, host: str) -> None:
    """Like SGLang's warm-up thread: poll /model_info, then one real /generate."""
    s, args = emu.settings, emu.args
    await asyncio.sleep(s.warmup_seconds)
    if not args.get("skip_server_warmup"):
        key = args.get("api_key")
        port = int(args["port"])
        try:
            if s.fault.kind == "warmup_fail":
                raise RuntimeError("CUDA error: device-side assert triggered")
            while await _http(host, port, "GET", "/model_info", None, key) != 200:
                await asyncio.sleep(1)
            body = {
                "text": WARMUP_PROMPT,
                "sampling_params": {"temperature": 0, "max_new_tokens": 8},
            }
            status = await asyncio.wait_for(
                _http(host, port, "POST", "/generate", body, key), s.warmup_timeout
            )
            if status != 200:
                raise RuntimeError(f"warm-up /generate returned HTTP {status}")
        except Exception as e:  # SGLang logs the failure and kills its process tree
            log(f"Initialization failed. warmup error: {e!r}", sys.stderr)
            os.kill(os.getpid(), signal.SIGKILL)
            return
    if emu.phase == Phase.WARMUP:
        emu.phase = Phase.READY
        log("The server is fired up and ready to roll!")


async def serve(emu: Emulator) -> int:
    args = emu.args
    host, port = str(args["host"]), int(args["port"])
    sock = bind_socket(host, port)  # after loading, like SGLang: a taken port fails only now
    emu.phase = Phase.WARMUP
    emu.start_scheduler()
    await asyncio.start_server(
        lambda r, w: serve_connection(r, w, emu.handle), sock=sock, limit=1 << 20
    )
    log(f"Uvicorn running on http://{host}:{port} (Press CTRL+C to quit)")
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    drain_tasks: list[asyncio.Task[None]] = []

    def on_signal(signame: str) -> None:
        if emu.phase == Phase.DRAINING:
            return
        emu.phase = Phase.DRAINING
        log(f"{signame} received. Draining requests and shutting down...")
        drain_tasks.append(loop.create_task(drain(emu, stop)))

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal, sig.name)
    warm_host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    warm_task = loop.create_task(warm_up(emu, warm_host))
    await stop.wait()
    warm_task.cancel()
    return 0


async def drain(emu: Emulator, stop: asyncio.Event) -> None:
    """SGLang's sigterm_watchdog: every interval (SGLang: 5 s; SGLANG_EMU_DRAIN_SECONDS here)
    count the requests still in flight, new ones included (they are still accepted), and exit
    at the first check that finds none, or at once when a health check has failed. SGLang's
    first check comes at its watchdog's next 5 s tick (0-5 s after the signal); the emulator
    takes the worst case, one full interval after the signal."""
    interval = max(emu.settings.drain_seconds, 0.0)
    while True:
        await asyncio.sleep(interval)
        sched = emu.sched
        # Health probes leave rid_to_state when their check ends; they never hold the drain.
        pending = (*sched.running, *sched.waiting, *sched.hung)
        remaining = [r.rid for r in pending if not r.is_health]
        if emu.unhealthy:
            log("Signal SIGTERM received while health check failed. Force exiting.")
            break
        log(
            f"Gracefully exiting... Remaining number of requests {len(remaining)}. "
            f"Remaining requests remaining_rids={remaining}."
        )
        if not remaining:
            break
    stop.set()
