# Keeping secrets (the API key, tokens, passwords) out of what a module returns or prints: values
# hidden in command lines, in nested results, and secret-looking names recognised.
# Used by library/sglang_ready.py and its module_utils. Runs on the target host: standard library
# only.
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "********"
# Whole words only: "speculative_num_draft_tokens" is not a secret, "hf_token" is.
SECRET_KEY_RE = re.compile(
    r"(?:^|[_.-])(?:api[_-]?key|secret|token|password|passwd)(?:$|[_.-])", re.IGNORECASE
)
# Environment variables whose values are never shown (the brief's words: any name containing them).
SECRET_ENV_NAME_RE = re.compile(r"KEY|SECRET|TOKEN|PASSWORD", re.IGNORECASE)
SECRET_FLAG_RE = re.compile(
    r"(--[\w-]*(?:api[_-]?key|secret|token|password)[\w-]*)(=|\s+)(\S+)", re.IGNORECASE
)


def redact_command_line(text: str) -> str:
    """Hide the value of every --api-key-like flag in a command line."""
    return SECRET_FLAG_RE.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)


def redact(value: Any, secrets: Iterable[str]) -> Any:
    """Replace every occurrence of a secret in strings nested anywhere inside value."""
    secrets = [s for s in secrets if s]
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, Mapping):
        return {redact(k, secrets): redact(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v, secrets) for v in value]
    return value


def is_secret_env_name(name: str) -> bool:
    return bool(SECRET_ENV_NAME_RE.search(name))
