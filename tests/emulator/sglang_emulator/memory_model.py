"""GPU memory model: does a configuration fit on its cards, and if not, how SGLang fails.

Pure functions, no I/O (lifecycle.py calls `memory_verdict` after the weights load and prints
the failure; tests call it directly). All figures are per card, in GiB (what SGLang's logs call
"GB": bytes / 2**30). The constants are illustrative: sized so that an H200 (the default card)
and an RTX PRO 6000 Blackwell behave plausibly, not measured. tests/emulator/README.md
("GPU memory") has the formula, the constants and the demo grids that fit and that do not.

SGLang 0.5.23's accounting (mem_cache/kv_cache_configurator.py `_profile_available_bytes`):
`pre` = free memory before the weights load; the KV pool gets what the weights leave of
`pre x --mem-fraction-static`; the rest, `pre x (1 - mem_fraction_static)`, is left for
activations, CUDA graphs and the speculative buffers, which are allocated afterwards.

1. KV pool: rest = pre x mfs - weights (target / tp + drafter).
   rest <= 0                    -> "weights": ValueError, kv_cache_configurator.py:3050.
   rest < one token's KV cell   -> "kv_pool": RuntimeError "Not enough memory. ...",
                                   pool_configurator.py:96 (the pool gets 0 tokens).
2. Graph capture: activations + CUDA graphs + speculative buffers > pre x (1 - mfs)
                                -> "cuda_graph": torch.OutOfMemoryError inside
                                   "Capture cuda graph failed: ..."
                                   (decode_cuda_graph_runner.py:602).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

GIB = float(1 << 30)
MIB = 1.0 / 1024  # GiB
KIB = 1.0 / (1024 * 1024)  # GiB

# The card. H200: 143771 MiB (nvidia-smi memory.total, /work/shared/fixtures/nvidia-smi-h200);
# the CUDA context takes ~0.9 GiB before SGLang's first "avail mem" (139.52 GB on an H200).
DEFAULT_GPU_MEMORY_GB = 143771 / 1024
CUDA_CONTEXT_GB = 0.88
# The emulated model: a target of DEFAULT_MODEL_GB in all (split over --tp-size cards), small
# enough that the tests' single card (tp 1) holds it; a DFlash/EAGLE drafter on every card.
DEFAULT_MODEL_GB = 64.0
DRAFTER_GB = 1.90
# KV cache bytes per token per card (MLA: 576 values x 2 bytes x 61 layers, not split by TP).
KV_CELL_BYTES = 576 * 2 * 61
# Outside the static part (per card):
ACT_BASE_GB = 1.5  # activations, NCCL and allocator workspace
ACT_GB_PER_PREFILL_TOKEN = 0.125 * MIB  # x --chunked-prefill-size
GRAPH_BASE_GB = 0.5  # the captured graphs' private pool
GRAPH_GB_PER_VERIFY_TOKEN = 1.0 * MIB  # x max batch x verify width (logits, hidden states)
TREE_GB_PER_NODE = 0.125 * MIB  # x max batch x verify width x tree width (candidates, masks)
WINDOW_GB_PER_NODE_TOKEN = 0.375 * KIB  # x max batch x verify width x window (draft attention)
WINDOW_GB_PER_TOKEN = 56 * KIB  # x max batch x window (the drafter's window ring)
# torch's caching allocator: what it reports as reserved but unallocated at the failure.
RESERVED_UNALLOCATED_GB = 0.31


@dataclass(frozen=True)
class MemoryInputs:
    """What the model reads: the card, the emulated model and the resolved server args."""

    gpu_memory_gb: float = DEFAULT_GPU_MEMORY_GB
    model_gb: float = DEFAULT_MODEL_GB
    tp_size: int = 1
    mem_fraction_static: float = 0.88
    chunked_prefill_size: int = 8192
    max_bs: int = 256  # --cuda-graph-max-bs(-decode): the largest batch captured
    algorithm: str | None = None
    drafter: bool = False  # a draft model is loaded (its weights count)
    verify_width: int = 1  # tokens verified per sequence per step (DDTREE: budget + 1)
    tree_width: int = 1  # candidates per position (DDTREE: as built; EAGLE: topk)
    window: int = 0  # the drafter's window (0: none set)

    @classmethod
    def from_args(
        cls,
        args: dict[str, Any],
        *,
        gpu_memory_gb: float = DEFAULT_GPU_MEMORY_GB,
        model_gb: float = DEFAULT_MODEL_GB,
        ddtree_max_topk: int = 6,
    ) -> MemoryInputs:
        from .perf_model import SpecShape  # the same verify width and tree width as the timing

        spec = SpecShape.from_args(args, ddtree_max_topk)
        algo = args.get("speculative_algorithm")
        max_bs = args.get("cuda_graph_max_bs_decode") or args.get("cuda_graph_max_bs")
        tp = args.get("tp_size") or args.get("tensor_parallel_size") or 1
        return cls(
            gpu_memory_gb=gpu_memory_gb,
            model_gb=model_gb,
            tp_size=max(int(tp), 1),
            mem_fraction_static=float(args.get("mem_fraction_static") or 0.88),
            chunked_prefill_size=int(args.get("chunked_prefill_size") or 8192),
            max_bs=int(max_bs or args.get("max_running_requests") or 256),
            algorithm=algo,
            drafter=bool(algo and algo != "NGRAM" and args.get("speculative_draft_model_path")),
            verify_width=spec.verify_width,
            tree_width=spec.width if spec.enabled else 1,
            window=int(spec.window or 0) if spec.uses_window else 0,
        )


@dataclass(frozen=True)
class MemoryVerdict:
    """The figures (GiB per card) and the outcome: kind is None (fits), "weights", "kv_pool"
    (both SGLang's KV-pool failures) or "cuda_graph"."""

    kind: str | None
    total_gb: float  # the card
    pre_gb: float  # free before the weights load (SGLang's first avail mem)
    static_gb: float  # pre x mem_fraction_static: weights + KV pool
    target_weights_gb: float
    draft_weights_gb: float
    kv_pool_gb: float  # what the KV pool gets (<= 0: none)
    kv_tokens: int
    reserve_gb: float  # pre x (1 - mem_fraction_static): activations, graphs, spec buffers
    activations_gb: float
    graphs_gb: float
    spec_buffers_gb: float

    @property
    def fits(self) -> bool:
        return self.kind is None

    @property
    def weights_gb(self) -> float:
        return self.target_weights_gb + self.draft_weights_gb

    @property
    def dynamic_gb(self) -> float:
        """Activations + CUDA graphs + speculative buffers (what graph capture needs)."""
        return self.activations_gb + self.graphs_gb + self.spec_buffers_gb


def memory_verdict(m: MemoryInputs) -> MemoryVerdict:
    """Whether `m` fits, and the figures. Deterministic; monotone non-decreasing demand in the
    verify width (budget), tree width (topk), window and max batch."""
    pre = m.gpu_memory_gb - CUDA_CONTEXT_GB
    static = pre * m.mem_fraction_static
    reserve = pre - static
    target_w = m.model_gb / m.tp_size
    draft_w = DRAFTER_GB if m.drafter else 0.0
    rest = static - target_w - draft_w
    kv_tokens = max(int(rest * GIB) // KV_CELL_BYTES, 0)
    bs, v = m.max_bs, m.verify_width
    activations = ACT_BASE_GB + m.chunked_prefill_size * ACT_GB_PER_PREFILL_TOKEN
    graphs = GRAPH_BASE_GB + bs * v * GRAPH_GB_PER_VERIFY_TOKEN
    spec = 0.0
    if m.algorithm is not None:
        spec = bs * v * m.tree_width * TREE_GB_PER_NODE
        spec += bs * v * m.window * WINDOW_GB_PER_NODE_TOKEN + bs * m.window * WINDOW_GB_PER_TOKEN
    if rest <= 0:
        kind: str | None = "weights"
    elif kv_tokens <= 0:
        kind = "kv_pool"
    elif activations + graphs + spec > reserve:
        kind = "cuda_graph"
    else:
        kind = None
    return MemoryVerdict(
        kind=kind,
        total_gb=m.gpu_memory_gb,
        pre_gb=pre,
        static_gb=static,
        target_weights_gb=target_w,
        draft_weights_gb=draft_w,
        kv_pool_gb=max(rest, 0.0),
        kv_tokens=kv_tokens,
        reserve_gb=reserve,
        activations_gb=activations,
        graphs_gb=graphs,
        spec_buffers_gb=spec,
    )


# ---------------------------------------------------------------------------------------------
# SGLang's (and torch's) words. Real 0.5.23 wheel, paths under sglang/srt/.
# ---------------------------------------------------------------------------------------------

# model_executor/pool_configurator.py:96 (MemoryPoolConfig.__post_init__; DefaultPoolConfigurator
# builds it without mem_fraction_static, so no " Current value: ..." suffix).
NOT_ENOUGH_MEMORY = "Not enough memory. Please try to increase --mem-fraction-static."
# model_executor/runner_backend_utils/__init__.py:14 CUDA_GRAPH_CAPTURE_FAILED_MSG
CUDA_GRAPH_CAPTURE_FAILED_MSG = (
    "Possible solutions:\n"
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
    "2. set --cuda-graph-max-bs-decode to a smaller value (e.g., 16)\n"
    "3. disable decode CUDA graph by --cuda-graph-backend-decode=disabled. "
    "(Not recommended. Huge performance loss)\n"
    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n"
)


def weights_message(v: MemoryVerdict, mem_fraction_static: float) -> str:
    """mem_cache/kv_cache_configurator.py:3050-3060: the ValueError when the loaded weights
    leave nothing of the static budget (available = pre - weights)."""
    minimum = 1 - (v.pre_gb - v.weights_gb) / v.pre_gb
    suggested = math.ceil(minimum * 1000) / 1000
    return (
        f"Loaded weights leave no GPU memory for the KV cache under "
        f"--mem-fraction-static={mem_fraction_static}. "
        f"Raise --mem-fraction-static above "
        f"{suggested:.3f} "
        f"(minimum viable = 1 - available/pre = "
        f"{minimum:.4f}). If using speculative "
        f"decoding, draft weights are now counted."
    )


def _format_size(gib: float) -> str:
    """c10's format_size: bytes, KiB, MiB or GiB with two decimals."""
    size = gib * GIB
    if size <= 1024:
        return f"{int(size)} bytes"
    if size <= 1048576:
        return f"{size / 1024:.2f} KiB"
    if size <= 1073741824:
        return f"{size / 1048576:.2f} MiB"
    return f"{size / GIB:.2f} GiB"


def torch_oom_message(v: MemoryVerdict) -> str:
    """torch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp, torch >= 2.8 wording;
    not in the CPU wheel the project caches): the allocation that fails is the largest graph's
    speculative buffers, the rest is what the process holds at that moment."""
    in_use = v.static_gb + v.activations_gb + v.graphs_gb
    free = max(v.total_gb - in_use, 0.0)
    want = max(v.spec_buffers_gb, v.dynamic_gb - v.reserve_gb, 2 * MIB)
    private = v.graphs_gb
    allocated = max(in_use - RESERVED_UNALLOCATED_GB, 0.0)
    return (
        f"CUDA out of memory. Tried to allocate {_format_size(want)}. GPU 0 has a total capacity "
        f"of {_format_size(v.total_gb)} of which {_format_size(free)} is free. Including "
        f"non-PyTorch memory, this process has {_format_size(in_use)} memory in use. Of the "
        f"allocated memory {_format_size(allocated)} is allocated by PyTorch, with "
        f"{_format_size(private)} allocated in private pools (e.g., CUDA Graphs), and "
        f"{_format_size(RESERVED_UNALLOCATED_GB)} is reserved by PyTorch but unallocated. If "
        "reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
        "documentation for Memory Management  "
        "(https://docs.pytorch.org/docs/stable/notes/cuda.html"
        "#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)"
    )


def capture_failed_message(v: MemoryVerdict) -> str:
    """model_executor/runner/decode_cuda_graph_runner.py:602-604."""
    return f"Capture cuda graph failed: {torch_oom_message(v)}\n{CUDA_GRAPH_CAPTURE_FAILED_MSG}"


# Traceback frames: (path under site-packages, line, function, source line, the column Python
# 3.11's ^^^ marks start at, to the line's end, or None),
# as the real 0.5.23 scheduler prints them (Python 3.11; tests/fixtures/real_sglang/0.5.23/
# failures.json `out_of_memory` is a recorded one).
Frame = tuple[str, int, str, str, "int | None"]
_SCHED = "sglang/srt/managers/scheduler.py"
_KVC = "sglang/srt/mem_cache/kv_cache_configurator.py"
_POOL_FRAMES: list[Frame] = [
    (_SCHED, 6362, "run_scheduler_process", "scheduler = Scheduler(server_args, port_args)", 12),
    (_SCHED, 568, "__init__", "self.init_model_worker()", None),
    (_SCHED, 1137, "init_model_worker", "self.init_memory_pools()", None),
    (_SCHED, 1100, "init_memory_pools", "self.init_target_memory_pool()", None),
    (_SCHED, 1090, "init_target_memory_pool", "self.tp_worker.alloc_memory_pool(", None),
    (
        "sglang/srt/managers/tp_worker.py",
        409,
        "alloc_memory_pool",
        "self.model_runner.alloc_memory_pool(",
        None,
    ),
    (
        "sglang/srt/model_executor/model_runner.py",
        982,
        "alloc_memory_pool",
        "result = self.kv_cache_configurator.configure(",
        9,
    ),
    (_KVC, 476, "configure", "config = self._resolve_memory_pool_config(pre_model_load_memory)", 9),
]
_WEIGHTS_FRAMES: list[Frame] = [
    *_POOL_FRAMES,
    (
        _KVC,
        3182,
        "_resolve_memory_pool_config",
        "available_bytes = self._profile_available_bytes(pre_model_load_memory)",
        18,
    ),
    (_KVC, 3050, "_profile_available_bytes", "raise ValueError(", None),
]
_NOT_ENOUGH_FRAMES: list[Frame] = [
    *_POOL_FRAMES,
    (
        _KVC,
        3183,
        "_resolve_memory_pool_config",
        "config = self.config_from_budget(available_bytes)",
        9,
    ),
    (_KVC, 3204, "config_from_budget", "config = configurator.calculate_pool_sizes(", 9),
    (
        "sglang/srt/model_executor/pool_configurator.py",
        647,
        "calculate_pool_sizes",
        "return MemoryPoolConfig(max_total_num_tokens=max_total_num_tokens)",
        7,
    ),
    ("<string>", 14, "__init__", "", None),
    (
        "sglang/srt/model_executor/pool_configurator.py",
        99,
        "__post_init__",
        "raise RuntimeError(msg)",
        None,
    ),
]
_DECODE_RUNNER = "sglang/srt/model_executor/runner/decode_cuda_graph_runner.py"
_CAPTURE_INNER: list[Frame] = [(_DECODE_RUNNER, 600, "__init__", "self.capture()", None)]
_CAPTURE_FRAMES: list[Frame] = [
    (_SCHED, 6362, "run_scheduler_process", "scheduler = Scheduler(server_args, port_args)", 12),
    (_SCHED, 568, "__init__", "self.init_model_worker()", None),
    (_SCHED, 1146, "init_model_worker", "self.init_all_cuda_graphs()", None),
    ("torch/utils/_contextlib.py", 124, "decorate_context", "return func(*args, **kwargs)", 7),
    (_SCHED, 1124, "init_all_cuda_graphs", "self.tp_worker.init_cuda_graphs()", None),
    (
        "sglang/srt/managers/tp_worker.py",
        435,
        "init_cuda_graphs",
        "self.model_runner.init_cuda_graphs(",
        None,
    ),
    (
        "sglang/srt/model_executor/model_runner.py",
        1192,
        "init_cuda_graphs",
        "capture = capture_cuda_graphs(",
        10,
    ),
    (
        "sglang/srt/model_executor/model_runner_components/cuda_graph_setup.py",
        437,
        "capture_cuda_graphs",
        "decode = capture_decode_graph(model_runner=model_runner)",
        9,
    ),
    (
        "sglang/srt/model_executor/model_runner_components/cuda_graph_setup.py",
        780,
        "capture_decode_graph",
        "runner = GraphRunnerCls(model_runner)",
        9,
    ),
    (_DECODE_RUNNER, 602, "__init__", "raise Exception(", None),
]


def _frames(frames: list[Frame], site: str) -> list[str]:
    out = ["Traceback (most recent call last):"]
    for path, line, func, source, caret in frames:
        where = path if path.startswith("<") else f"{site}/{path}"
        out.append(f'  File "{where}", line {line}, in {func}')
        if source:
            out.append(f"    {source}")
            if caret:
                # Python 3.11 underlines the call, which here always runs to the line's end
                out.append("    " + " " * caret + "^" * (len(source) - caret))
    return out


def failure_traceback(v: MemoryVerdict, mem_fraction_static: float, site: str) -> str:
    """The traceback SGLang's scheduler logs after "Scheduler hit an exception: " (the text of
    traceback.format_exception, ending in a newline). `site`: the site-packages directory."""
    if v.kind == "weights":
        lines = _frames(_WEIGHTS_FRAMES, site)
        lines.append(f"ValueError: {weights_message(v, mem_fraction_static)}")
    elif v.kind == "kv_pool":
        lines = _frames(_NOT_ENOUGH_FRAMES, site)
        lines.append(f"RuntimeError: {NOT_ENOUGH_MEMORY}")
    elif v.kind == "cuda_graph":
        lines = _frames(_CAPTURE_INNER, site)
        lines += [f"torch.OutOfMemoryError: {torch_oom_message(v)}", ""]
        lines += ["During handling of the above exception, another exception occurred:", ""]
        lines += _frames(_CAPTURE_FRAMES, site)
        lines.append(f"Exception: {capture_failed_message(v)}")
    else:
        raise ValueError("the configuration fits: no failure")
    return "\n".join(lines) + "\n"
