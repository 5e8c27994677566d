# The sglang_ready module's parameters checked into the readiness Settings: what its argument spec
# cannot express (a URL with a host and no credentials, the previous run's pid and invocation only
# with a unit, the key from the command line or from the unit, never both), each refusal naming
# the bad value. Runs on the target host: standard library only.
from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

from ansible.module_utils.sglang_http import check_api_key
from ansible.module_utils.sglang_readiness import Settings

ENV_NAME_RE = re.compile(r"^[^=\0]+$")


def settings_from_params(params: Mapping[str, Any], check_mode: bool) -> Settings:
    """Validate what the argument spec cannot express; ValueError names the bad value."""
    url = params["url"].strip()
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"url must be an http:// or https:// URL with a host, got {url!r}")
    if parts.username or parts.password:
        raise ValueError("url must not carry credentials; pass the key as api_key")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise ValueError(f"url has an invalid port: {url!r}") from exc
    unit = params.get("unit") or None
    previous_pid = params.get("previous_pid")
    previous_invocation = params.get("previous_invocation") or None
    if (previous_pid is not None or previous_invocation) and not unit:
        raise ValueError("previous_pid and previous_invocation need unit")
    if params.get("api_key_from_unit") and not unit:
        raise ValueError("api_key_from_unit needs unit, whose environment holds the key")
    if previous_pid is not None and previous_pid < 0:
        raise ValueError(f"previous_pid must be >= 0, got {previous_pid}")
    if params["timeout"] < 0:
        raise ValueError(f"timeout must be >= 0 seconds, got {params['timeout']}")
    if params["max_poll_interval"] <= 0:
        raise ValueError(f"max_poll_interval must be > 0, got {params['max_poll_interval']}")
    probe = params["probe"]
    if not (probe.get("prompt") or "").strip():
        raise ValueError("probe.prompt must be a non-empty string")
    if probe["max_new_tokens"] < 1:
        raise ValueError(f"probe.max_new_tokens must be >= 1, got {probe['max_new_tokens']}")
    if probe["timeout"] <= 0:
        raise ValueError(f"probe.timeout must be > 0, got {probe['timeout']}")
    if params.get("api_key") and params.get("api_key_from_unit"):
        raise ValueError(
            "parameters are mutually exclusive: api_key|api_key_from_unit "
            "(api_key_from_unit reads the key on the host)"
        )
    check_api_key(params.get("api_key") or "", "api_key")
    api_key_env = (params.get("api_key_env") or "").strip()
    if params.get("api_key_from_unit") and not ENV_NAME_RE.match(api_key_env):
        raise ValueError(f"api_key_env must be a variable name, got {api_key_env!r}")
    return Settings(
        url=url,
        port=port,
        unit=unit,
        previous_pid=previous_pid,
        previous_invocation=previous_invocation,
        expect=dict(params.get("expect") or {}),
        timeout=params["timeout"],
        prompt=probe["prompt"],
        max_new_tokens=probe["max_new_tokens"],
        probe_timeout=float(probe["timeout"]),
        require_speculation=params["require_speculation"],
        max_poll_interval=params["max_poll_interval"],
        check_mode=check_mode,
        health_check=params["health_check"],
        expect_env=expect_env_from_params(params.get("expect_env") or {}),
        api_key_from_unit=bool(params.get("api_key_from_unit")),
        api_key_env=api_key_env,
    )


def expect_env_from_params(raw: Mapping[str, Any]) -> dict[str, str]:
    """NAME -> exact string; numbers become strings, booleans are ambiguous ("1"? "true"?)."""
    env: dict[str, str] = {}
    for name, value in raw.items():
        name = str(name)
        if not ENV_NAME_RE.match(name):
            raise ValueError(f"expect_env: {name!r} is not an environment variable name")
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ValueError(
                f"expect_env.{name} must be a string or a number, got {type(value).__name__}; "
                "quote it as the exact text the variable holds"
            )
        env[name] = value if isinstance(value, str) else str(value)
    return env
