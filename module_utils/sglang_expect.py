# What the restarted server must show: `expect` compared with its /server_info (dotted keys, values
# compared with type coercion), `expect_env` with its process environment (exact strings), and the
# safe subset of /server_info a result may carry.
# Used by library/sglang_ready.py. Runs on the target host: standard library only.
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ansible.module_utils.sglang_secrets import (
    REDACTED,
    SECRET_KEY_RE,
    is_secret_env_name,
    redact_command_line,
)

SAFE_SERVER_INFO_KEYS = (
    "version",
    "model_path",
    "served_model_name",
    "tp_size",
    "speculative_algorithm",
    "speculative_num_draft_tokens",
    "speculative_eagle_topk",
    "speculative_draft_window_size",
    "speculative_dflash_draft_window_size",
    "speculative_ddtree_budget",
    "speculative_ddtree_max_topk",
    "context_length",
)

_MISSING = object()
_TRUE_WORDS = {"true", "yes", "on"}
_FALSE_WORDS = {"false", "no", "off"}
_NONE_WORDS = {"none", "null", "~"}


def lookup(data: Any, dotted: str) -> Any:
    """data['a']['b'] for 'a.b' (list indexes as numbers); the exact key wins over a dotted path."""
    if isinstance(data, Mapping) and dotted in data:
        return data[dotted]
    current = data
    for part in dotted.split("."):
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return _MISSING
    return current


def _coerce(value: Any) -> Any:
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE_WORDS:
            return True
        if word in _FALSE_WORDS:
            return False
        if word in _NONE_WORDS:
            return None
        try:
            number = float(value)
        except ValueError:
            return value
        return int(number) if number.is_integer() else number
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def values_match(actual: Any, expected: Any) -> bool:
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        return actual.keys() == expected.keys() and all(
            values_match(actual[k], expected[k]) for k in actual
        )
    if isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple)):
        return len(actual) == len(expected) and all(map(values_match, actual, expected))
    a, e = _coerce(actual), _coerce(expected)
    # True == 1 in Python; a flag that is a bool must not match a count.
    if isinstance(a, bool) != isinstance(e, bool):
        return False
    return bool(a == e)


def expect_mismatches(info: Mapping[str, Any], expect: Mapping[str, Any]) -> list[str]:
    problems = []
    for key, wanted in expect.items():
        actual = lookup(info, key)
        if actual is _MISSING:
            problems.append(f"{key} is missing, expected {wanted!r}")
        elif not values_match(actual, wanted):
            problems.append(f"{key} is {actual!r}, expected {wanted!r}")
    return problems


def server_info_subset(info: Mapping[str, Any], expect_keys: Iterable[str]) -> dict[str, Any]:
    subset: dict[str, Any] = {}
    for key in (*SAFE_SERVER_INFO_KEYS, *expect_keys):
        value = lookup(info, key)
        if value is _MISSING:
            continue
        if SECRET_KEY_RE.search(key) and value not in (None, ""):
            value = REDACTED
        elif key == "launch_command" and isinstance(value, str):
            value = redact_command_line(value)
        subset[key] = value
    return subset


def env_mismatches(actual: Mapping[str, str], expected: Mapping[str, str]) -> list[str]:
    """What differs, never showing a value of a secret-like variable."""
    problems: list[str] = []
    for name in sorted(expected):
        wanted = expected[name]
        secret = is_secret_env_name(name)
        if name not in actual:
            shown = "a value (not shown)" if secret else repr(wanted)
            problems.append(f"{name} is not set, expected {shown}")
        elif actual[name] != wanted:
            problems.append(
                f"{name} differs from the expected value (not shown: a secret-like name)"
                if secret
                else f"{name} is {actual[name]!r}, expected {wanted!r}"
            )
    return problems
