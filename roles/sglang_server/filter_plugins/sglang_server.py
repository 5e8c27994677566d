"""Turns the role's logical configuration into SGLang command-line flags for one flag dialect.

The dialect table (vars/dialects.yml) is data; this filter only interprets it, so a new fork's
dialect needs no code. Validation with user-facing messages lives in tasks/preflight.yml.
"""

from __future__ import annotations

from typing import Any

SPEC_PARAMS = ("budget", "topk", "window")


def _base_flags(cfg: dict[str, Any]) -> list[list[str]]:
    flags: list[list[str]] = [["--model-path", str(cfg["model_path"])]]
    if cfg.get("served_model_name"):
        flags.append(["--served-model-name", str(cfg["served_model_name"])])
    flags += [
        ["--tp-size", str(cfg["tp_size"])],
        ["--host", str(cfg["host"])],
        ["--port", str(cfg["port"])],
    ]
    optional = (
        ("context_length", "--context-length"),
        ("mem_fraction_static", "--mem-fraction-static"),
        ("cuda_graph_max_bs", "--cuda-graph-max-bs"),
        ("max_running_requests", "--max-running-requests"),
    )
    for key, flag in optional:
        value = cfg.get(key) or 0
        if float(value) > 0:
            flags.append([flag, str(value)])
    if cfg.get("enable_metrics"):
        flags.append(["--enable-metrics"])
    return flags


def sglang_server_launch(cfg: dict[str, Any], dialect: dict[str, Any]) -> dict[str, Any]:
    """Returns {flags: [[flag, value?]...], env: {NAME: value}, expect: {info key: value}}."""
    flags = _base_flags(cfg)
    env: dict[str, str] = {}
    expect: dict[str, Any] = {
        "model_path": str(cfg["model_path"]),
        "tp_size": int(cfg["tp_size"]),
        "port": int(cfg["port"]),
    }
    algorithm = str(cfg["speculative_algorithm"]).upper()
    if algorithm == "NONE":
        expect["speculative_algorithm"] = None
    else:
        spec = dialect["algorithms"][algorithm]
        flags.append(["--speculative-algorithm", spec["value"]])
        expect["speculative_algorithm"] = spec["value"]
        if spec.get("needs_drafter"):
            flags.append(["--speculative-draft-model-path", str(cfg["draft_model_path"])])
        for param in SPEC_PARAMS:
            rule = spec.get(param)
            if not rule:
                continue
            value = int(cfg[param])
            if rule.get("flag"):
                flags.append([rule["flag"], str(value)])
            elif rule.get("env"):
                env[rule["env"]] = str(value)
            if rule.get("info"):
                expect[rule["info"]] = value
    for extra in cfg.get("extra_flags") or []:
        flags.append([str(extra)])
    return {"flags": flags, "env": env, "expect": expect}


def systemd_quote(value: Any) -> str:
    """Quotes one ExecStart word so systemd passes it through verbatim."""
    text = str(value)
    for raw, escaped in (("\\", "\\\\"), ('"', '\\"'), ("%", "%%"), ("$", "$$")):
        text = text.replace(raw, escaped)
    return f'"{text}"'


def sglang_dialect_for_version(version: str, fallback: str) -> str:
    """Maps an installed SGLang version string to a built-in dialect name."""
    text = (version or "").strip()
    if not text:
        return fallback
    if "ddtree" in text.lower():
        return "ddtree"
    numbers: list[int] = []
    for part in text.split("+")[0].split(".")[:3]:
        digits = "".join(ch for ch in part if ch.isdigit())
        if not digits:
            break
        numbers.append(int(digits))
    if len(numbers) < 3:
        return fallback
    release = tuple(numbers)
    if release >= (0, 5, 20):
        return "0.5.20+"
    if release >= (0, 5, 19):
        return "0.5.19"
    if release >= (0, 5, 11):
        return "0.5.11"
    return f"unsupported:{text}"


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "sglang_server_launch": sglang_server_launch,
            "systemd_quote": systemd_quote,
            "sglang_dialect_for_version": sglang_dialect_for_version,
        }
