"""Behaviour knobs of the emulator: environment variables only (never flags)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from . import VERSIONS, release


def _float(env: dict[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    return float(raw) if raw else default


def _opt_float(env: dict[str, str], name: str) -> float | None:
    raw = env.get(name, "").strip()
    return float(raw) if raw else None


def _positive(env: dict[str, str], name: str) -> float | None:
    value = _opt_float(env, name)
    if value is not None and value <= 0:
        raise ValueError(f"{name}: {value} is not a positive number of GB")
    return value


def _fraction(env: dict[str, str], name: str) -> float:
    value = _float(env, name, 0.0)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name}: {value} is not a fraction between 0 and 1")
    return value


def _env_bool(env: dict[str, str], name: str, default: bool) -> tuple[bool, str | None]:
    """SGLang's EnvBool read through EnvField.get(): unset is the default, and so is a value
    other than these words, with a warning. Returns the value and that warning, if any."""
    raw = env.get(name)
    if raw is None:
        return default, None
    value = raw.lower()
    if value in ("true", "1", "yes", "y"):
        return True, None
    if value in ("false", "0", "no", "n"):
        return False, None
    return default, (
        f'Invalid value for {name}: "{value}" is not a valid boolean value, using default'
        f' "{default}"'
    )


def emulated_version(env: dict[str, str] | None = None) -> str:
    """SGLANG_EMU_VERSION (a key of VERSIONS; 0.5.23 when unset)."""
    e = os.environ if env is None else env
    version = e.get("SGLANG_EMU_VERSION", "").strip() or "0.5.23"
    if version not in VERSIONS:
        raise ValueError(f"SGLANG_EMU_VERSION: unknown version {version!r}")
    return version


def _warmup_timeout(raw: float) -> float:
    return raw if raw > 0 else 600.0


@dataclass(frozen=True)
class Fault:
    kind: str = "none"  # none | crash_loading | warmup_fail | hang_after
    hang_after: int = 0

    @classmethod
    def parse(cls, raw: str) -> Fault:
        raw = raw.strip() or "none"
        if raw in ("none", "crash_loading", "warmup_fail"):
            return cls(kind=raw)
        if raw.startswith("hang_after:"):
            return cls(kind="hang_after", hang_after=int(raw.split(":", 1)[1]))
        raise ValueError(f"SGLANG_EMU_FAULT: unknown fault {raw!r}")


@dataclass(frozen=True)
class Settings:
    version: str = "0.5.23"
    load_seconds: float = 3.0
    warmup_seconds: float = 1.0
    drain_seconds: float = 2.0
    fault: Fault = Fault()
    seed: int = 0
    time_scale: float = 1.0
    fixed_ttft_ms: float | None = None
    fixed_step_ms: float | None = None
    fixed_accept: float | None = None
    # With speculation on, the share of requests (chosen by their prompt ids) whose output
    # turns to other tokens from token diverge_after on: a broken drafter.
    diverge: float = 0.0
    diverge_after: int = 4
    health_check_timeout: float = 20.0
    # SGLANG_WARMUP_TIMEOUT: EnvFloat(-1); the warm-up request uses it when > 0, else 600 s
    # (0.5.23 environ.py:324, entrypoints/http_server.py:2491-2498).
    warmup_timeout: float = 600.0
    # SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION: true by default in SGLang 0.5.11 to
    # 0.5.23. SGLang reads it on a /health request, so its warning for a bad value comes then.
    health_endpoint_generation: bool = True
    health_endpoint_generation_warning: str | None = None
    # SGLANG_DDTREE_MAX_TOPK: the DDTree fork's cap on the tree width (an environment variable
    # only, never a server argument, so /server_info does not show it).
    ddtree_max_topk: int = 6
    # The memory model (memory_model.py): SGLANG_EMU_GPU_MEMORY_GB, one card's memory in GiB
    # (None: nvidia-smi's memory.total where there is one, else an H200's), and
    # SGLANG_EMU_MODEL_GB, the emulated target's weights in GiB, split over --tp-size cards.
    gpu_memory_gb: float | None = None
    model_gb: float = 64.0

    @property
    def version_string(self) -> str:
        return VERSIONS[self.version]

    @property
    def release(self) -> tuple[int, ...]:
        """The upstream release emulated (ddtree: 0.5.23)."""
        return release(self.version)

    @property
    def version_at_least_0_5_23(self) -> bool:
        return self.release >= (0, 5, 23)

    @property
    def has_ready_endpoint(self) -> bool:
        return self.release >= (0, 5, 20)  # /ready: 0.5.20 http_server.py:663

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        e = dict(os.environ if env is None else env)
        version = emulated_version(e)
        health_gen, health_gen_warning = _env_bool(
            e, "SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION", default=True
        )
        return cls(
            version=version,
            load_seconds=_float(e, "SGLANG_EMU_LOAD_SECONDS", 3.0),
            warmup_seconds=_float(e, "SGLANG_EMU_WARMUP_SECONDS", 1.0),
            drain_seconds=_float(e, "SGLANG_EMU_DRAIN_SECONDS", 2.0),
            fault=Fault.parse(e.get("SGLANG_EMU_FAULT", "none")),
            seed=int(_float(e, "SGLANG_EMU_SEED", 0)),
            time_scale=_float(e, "SGLANG_EMU_TIME_SCALE", 1.0),
            fixed_ttft_ms=_opt_float(e, "SGLANG_EMU_FIXED_TTFT_MS"),
            fixed_step_ms=_opt_float(e, "SGLANG_EMU_FIXED_STEP_MS"),
            fixed_accept=_opt_float(e, "SGLANG_EMU_FIXED_ACCEPT"),
            diverge=_fraction(e, "SGLANG_EMU_DIVERGE"),
            diverge_after=int(_float(e, "SGLANG_EMU_DIVERGE_AFTER", 4)),
            health_check_timeout=_float(e, "SGLANG_HEALTH_CHECK_TIMEOUT", 20.0),
            warmup_timeout=_warmup_timeout(_float(e, "SGLANG_WARMUP_TIMEOUT", -1.0)),
            health_endpoint_generation=health_gen,
            health_endpoint_generation_warning=health_gen_warning,
            ddtree_max_topk=int(_float(e, "SGLANG_DDTREE_MAX_TOPK", 6)),
            gpu_memory_gb=_positive(e, "SGLANG_EMU_GPU_MEMORY_GB"),
            model_gb=_float(e, "SGLANG_EMU_MODEL_GB", 64.0),
        )
