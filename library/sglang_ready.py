#!/usr/bin/python
# Runs on the target host with its own /usr/bin/python3: stdlib and ansible.module_utils only;
# the unit's state and journal come from module_utils/sglang_systemd.py, who owns the port from
# module_utils/sglang_port_owner.py (AnsiballZ ships both with the module).
# Ansible wants DOCUMENTATION, EXAMPLES and RETURN before the imports.
# ruff: noqa: E402
from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_ready
short_description: Wait until a (re)started SGLang server really serves the requested configuration
description:
  - Waits after C(systemctl restart --no-block) of an SGLang unit until the NEW server process is
    ready, never reporting a draining old process (which keeps answering C(/v1/models),
    C(/server_info) and C(/generate) with the old configuration) as ready.
  - "Conditions, checked in this order on every poll: (1) the unit's main PID is new (differs from
    O(previous_pid), InvocationID differs from O(previous_invocation)) and the old PID is gone;
    (2) the listening socket of the URL's port belongs to a process of the unit (its cgroup, else
    the main PID and its descendants); (2b) with O(expect_env), that process was started with
    the expected environment; (3) C(/server_info) (or C(/get_server_info)) answers and
    matches O(expect); (4) the health endpoint chosen by O(health_check) answers 200; (5) a real
    generation through C(/generate) returns tokens (and speculation statistics with
    O(require_speculation)); (6) the main PID is still the same afterwards."
  - Between polls it reads the unit's state and fails AT ONCE, with the last journal lines of the
    new invocation, when the unit is C(failed), in C(auto-restart), C(NRestarts) rises, the main
    PID changes after it was first seen as new, or the main process exited.
  - Without O(unit) only the HTTP conditions (3) to (5) are checked, for servers not run by systemd.
  - Never reports C(changed).
version_added: "0.1.0"
author:
  - sglang-specbench project
options:
  url:
    description:
      - Base URL of the server, for example C(http://127.0.0.1:30000). Scheme C(http) or C(https).
      - The port of this URL is the one whose listening socket must belong to the unit.
    type: str
    required: true
  api_key:
    description:
      - "The server's API key, sent as C(Authorization: Bearer <key>)."
      - Never returned or logged; an empty string means no key.
      - Mutually exclusive with O(api_key_from_unit), which keeps the key off the controller.
      - "Ansible itself, not this module, may print task arguments: ansible-core 2.19 shows a failed
        ad-hoc task's arguments (C(ansible -m sglang_ready -a 'api_key=...')) in its error
        context, key included. Use O(api_key_from_unit), or a template such as
        C(api_key={{ sglang_api_key }}), whose text is what gets shown."
    type: str
  api_key_from_unit:
    description:
      - Read the API key on the target host from the environment systemd gives O(unit) instead
        of passing it in O(api_key), so the key never travels through the controller.
      - "Reads C(systemctl show -p Environment) and C(-p EnvironmentFiles) of the unit and the
        files named there (EnvironmentFile syntax: C(NAME=VALUE) lines, C(#) and C(;) comments,
        single or double quotes, backslash escapes), with systemd's precedence: files override
        C(Environment=), later files override earlier ones. Optional files (C(-) prefix,
        C(ignore_errors=yes)) may be missing."
      - The variable is O(api_key_env); an empty value means no key. A missing or unreadable
        file, or no such variable, fails with a message naming the file and the variable, never
        the value. The key is registered as a no_log value and is part of no result field.
      - Needs C(become) when the file is readable by root only.
      - Mutually exclusive with O(api_key); requires O(unit).
    type: bool
    default: false
  api_key_env:
    description:
      - The environment variable of O(unit) that holds the key, for O(api_key_from_unit).
    type: str
    default: SGLANG_API_KEY
  unit:
    description:
      - The systemd unit running the server, for example C(sglang.service).
      - When omitted, PID, unit-state and port-ownership checks are skipped (URL-only mode).
    type: str
  previous_pid:
    description:
      - MainPID of the unit recorded before the restart. The new main PID must differ from it and
        the old process must be gone (absent or a zombie).
      - Requires O(unit).
    type: int
  previous_invocation:
    description:
      - InvocationID of the unit recorded before the restart. The new InvocationID must differ.
      - Requires O(unit).
    type: str
  expect:
    description:
      - "C(/server_info) fields that must match, for example C(speculative_num_draft_tokens: 16)."
      - Values are compared with type coercion (V("16") equals V(16), V("true") equals V(true));
        nested keys may be written with dots (C(a.b), list indexes as numbers).
    type: dict
    default: {}
  expect_env:
    description:
      - "Environment variables the NEW server process must have been started with, as
        C(NAME: value), for parameters SGLang reads from its environment rather than from its
        arguments, which C(/server_info) therefore cannot show (the DDTree fork's topk is
        C(SGLANG_DDTREE_MAX_TOPK))."
      - Read from C(/proc/<pid>/environ) of the process that owns the listening port (the real
        server; the unit's main PID is only the launcher that starts it), falling back to the
        main PID; RV(environ_pid) says which was read. Only the named variables are read.
      - Values compare as exact strings; numbers are turned into strings, booleans must be
        quoted.
      - A different value or a missing variable fails at once, since a process's environment
        cannot change. Values of variables whose name contains C(KEY), C(SECRET), C(TOKEN) or
        C(PASSWORD) are compared but never shown.
      - A variable SGLang defaults internally when unset (C(SGLANG_DDTREE_MAX_TOPK) is 6) is absent
        from the environment; set it explicitly in the unit to verify it.
      - Without O(unit) no process is known; the names are returned in RV(verified) as
        C(unverified), with a warning, and do not fail the task.
      - Needs root (C(become)) to read the environment of the service user's process; without
        that permission it fails at once, saying so.
    type: dict
    default: {}
  timeout:
    description:
      - Seconds to wait for all conditions before failing. Long enough to load a very large model.
      - V(0) means a single pass.
    type: int
    default: 1800
  probe:
    description:
      - The real generation that must succeed, sent to C(/generate) with temperature 0.
    type: dict
    default:
      prompt: The capital city of France is
      max_new_tokens: 8
      timeout: 120
    suboptions:
      prompt:
        description: Prompt text of the probe generation.
        type: str
        required: true
      max_new_tokens:
        description: Tokens to generate.
        type: int
        default: 8
      timeout:
        description: HTTP time-out of the probe generation, in seconds.
        type: float
        default: 120
  require_speculation:
    description:
      - The probe's C(meta_info) must show C(spec_verify_ct > 0), proving speculative decoding is
        on.
    type: bool
    default: false
  max_poll_interval:
    description:
      - Upper bound of the poll interval in seconds. Polling starts at 0.1 s and backs off by 1.5x,
        starting again from 0.1 s whenever a condition newly passes.
    type: float
    default: 0.5
  health_check:
    description:
      - Condition (4). V(auto) asks C(/ready) (SGLang 0.5.20+, answered at once), then
        C(/health_generate), then C(/health), moving on when an endpoint answers 404.
      - V(health_generate) asks C(/health_generate), then C(/health) on 404. SGLang's
        C(/health_generate) always sleeps at least 1 s before its 200, which adds that second to
        the detection lag; C(/ready) checks the same state (start-up done, not draining) and the
        probe generation (5) covers what its one-token generation adds.
      - V(ready) and V(health) ask only that endpoint.
      - Check mode never asks C(/health_generate); it uses C(/ready), else C(/health). SGLang
        answers a bare C(/health) with a one-token health generation of its own unless
        E(SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION) is false (its default is true), which only
        builds without C(/ready) (before 0.5.20) get from check mode.
    type: str
    choices: [auto, ready, health_generate, health]
    default: auto
  validate_certs:
    description: Verify TLS certificates for C(https) URLs.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    description:
      - A single read-only pass (unit state, port, O(expect_env), C(/server_info), C(/ready) or
        C(/health));
        never waits,
        never sends the probe generation (5), returns RV(ready) and does not fail because the
        server is not ready.
  diff_mode:
    support: none
  platform:
    platforms: posix
notes:
  - Run it with C(become) when O(unit) is set, so the C(/proc/<pid>/fd) links of the service user
    can be read for the port-ownership check; without that permission it fails at once, saying so.
  - Restart with C(systemctl restart --no-block) (M(ansible.builtin.systemd_service) with
    O(ansible.builtin.systemd_service#module:no_block=true)) after recording C(MainPID) and
    C(InvocationID), so this module does the waiting with crash detection.
  - Request headers are never part of any message.
  - Run it with C(become) for O(expect_env) and O(api_key_from_unit) as well; C(/proc/<pid>/environ)
    of another user's process and a 0600 EnvironmentFile are readable by root only.
requirements:
  - systemctl and journalctl on the target when O(unit) is set
seealso:
  - module: ansible.builtin.wait_for
  - module: ansible.builtin.systemd_service
"""

EXAMPLES = r"""
- name: Record the running server
  ansible.builtin.command: systemctl show -p MainPID -p InvocationID sglang.service
  register: before
  changed_when: false

- name: Restart without waiting in systemctl
  ansible.builtin.systemd_service:
    name: sglang.service
    state: restarted
    no_block: true

- name: Wait for the NEW server with the requested DFlash configuration
  vars:
    _before: "{{ dict(before.stdout_lines | map('split', '=', 1)) }}"
  sglang_ready:
    url: http://127.0.0.1:30000
    api_key: "{{ sglang_api_key }}"
    unit: sglang.service
    previous_pid: "{{ _before.MainPID | int }}"
    previous_invocation: "{{ _before.InvocationID }}"
    expect:
      speculative_algorithm: DFLASH
      speculative_num_draft_tokens: 16
      speculative_draft_window_size: 2048
    require_speculation: true
  become: true
  register: ready

- name: DDTree server whose topk is set through the environment; the key stays on the host
  sglang_ready:
    url: http://127.0.0.1:30000
    unit: sglang.service
    api_key_from_unit: true  # SGLANG_API_KEY from the unit's EnvironmentFile, read on the host
    previous_pid: "{{ _before.MainPID | int }}"
    previous_invocation: "{{ _before.InvocationID }}"
    expect:
      speculative_algorithm: DDTREE
      speculative_ddtree_budget: 8
    expect_env:
      SGLANG_DDTREE_MAX_TOPK: "4"  # not in /server_info: read from /proc/<pid>/environ
    require_speculation: true
  vars:
    _before: "{{ dict(before.stdout_lines | map('split', '=', 1)) }}"
  become: true
  register: ready

- name: A server not run by systemd (URL-only checks)
  sglang_ready:
    url: http://gpu-node-7:30000
    expect:
      tp_size: 8
    timeout: 600
    probe:
      prompt: "def fibonacci(n):"
      max_new_tokens: 16

- name: Look without waiting (check mode)
  sglang_ready:
    url: http://127.0.0.1:30000
    unit: sglang.service
  check_mode: true
  register: seen
"""

RETURN = r"""
ready:
  description: Whether every condition held. Always true, except in check mode.
  returned: always
  type: bool
  sample: true
elapsed:
  description: Seconds from the module's start to its return.
  returned: always
  type: float
  sample: 212.4
phases:
  description:
    - Seconds since the module started at which each condition was first seen passing;
      V(null) when skipped (URL-only mode) or not reached.
  returned: always
  type: dict
  sample:
    old_gone: 2.1
    port_bound: 180.3
    env_matched: 180.3
    config_matched: 180.4
    healthy: 195.0
    first_generation: 195.2
pid:
  description: The unit's main PID (the launcher); V(null) in URL-only mode.
  returned: always
  type: int
  sample: 48213
invocation_id:
  description:
    - The unit's InvocationID; V(null) in URL-only mode.
    - Not named C(invocation), which Ansible reserves for the module's arguments.
  returned: always
  type: str
  sample: 6c1a0f2d8e8f4b56b0a6d40c1f0e2f11
restarted_from:
  description:
    - The run this call waited to see replaced (O(previous_pid), O(previous_invocation)); V(null)
      when neither was given, i.e. the call only confirmed the running server.
  returned: always
  type: dict
  sample: {pid: 48001, invocation_id: 0f3b2c8e9a7d4e21b5c6d7e8f9a0b1c2}
server_info:
  description:
    - The O(expect) keys and a fixed safe subset of C(/server_info) (version, model_path,
      served_model_name, tp_size, speculative_* fields, context_length). Secrets are redacted.
  returned: when /server_info answered
  type: dict
  sample: {version: 0.5.23, speculative_algorithm: DFLASH, speculative_num_draft_tokens: 16}
probe:
  description: The probe generation.
  returned: when the probe succeeded
  type: dict
  contains:
    latency:
      description: Seconds the probe generation took.
      type: float
    completion_tokens:
      description: Tokens generated.
      type: int
    spec_verify_ct:
      description: Verification steps (V(null) without speculation).
      type: int
    spec_accept_length:
      description: Tokens per verification step, bonus token included.
      type: float
verified:
  description:
    - Where each requested parameter was verified. C(server_info) lists the O(expect) keys
      matched in C(/server_info), C(environ) the O(expect_env) names matched in the environment of
      process RV(environ_pid), C(unverified) every requested name not (yet) verified there
      (O(expect_env) in URL-only mode, or anything not reached when not ready).
  returned: always
  type: dict
  contains:
    server_info:
      description: O(expect) keys verified in C(/server_info), sorted.
      type: list
      elements: str
    environ:
      description: O(expect_env) names verified in the process environment, sorted.
      type: list
      elements: str
    unverified:
      description: Requested names not verified, sorted.
      type: list
      elements: str
  sample:
    server_info: [speculative_algorithm, speculative_ddtree_budget]
    environ: [SGLANG_DDTREE_MAX_TOPK]
    unverified: []
environ_pid:
  description:
    - The process whose C(/proc/<pid>/environ) was read for O(expect_env); V(null) when none
      was read (no O(expect_env), URL-only mode, or the port not yet bound).
  returned: always
  type: int
  sample: 48230
environ_process:
  description:
    - Which process RV(environ_pid) is; V(port_owner), the process owning the listening socket
      (the real server), or V(main_pid), the unit's main process (the launcher), used only when
      no port owner is known; V(null) when none was read.
  returned: always
  type: str
  sample: port_owner
api_key_source:
  description:
    - Where O(api_key_from_unit) found the key, a file path or C(Environment=); never the key.
  returned: when O(api_key_from_unit) is true and the key was found
  type: str
  sample: /etc/sglang/sglang.env
health_endpoint:
  description: The endpoint that decided condition (4) (see O(health_check)).
  returned: always
  type: str
  sample: /ready
server_info_endpoint:
  description: C(/server_info), or C(/get_server_info) on builds without it.
  returned: always
  type: str
  sample: /server_info
url:
  description: The URL checked.
  returned: always
  type: str
  sample: http://127.0.0.1:30000
unmet:
  description:
    - The first condition not met (check mode, or on failure); C(env_matched) for
      O(expect_env), C(unit_state) in check mode for a unit that will not become ready.
  returned: when not ready
  type: str
  sample: config_matched
detail:
  description: The last observation for the unmet condition.
  returned: when not ready
  type: str
  sample: "speculative_num_draft_tokens is 8, expected 16"
unit_state:
  description: The last C(systemctl show) reading.
  returned: when O(unit) is set
  type: dict
  sample: {ActiveState: active, SubState: running, NRestarts: 0, MainPID: 48213}
journal:
  description: Last journal lines of the new invocation.
  returned: on failure with O(unit)
  type: list
  elements: str
"""

import dataclasses
import json
import os
import re
import socket
import ssl
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from http.client import HTTPException
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_port_owner import ProcPermissionError, socket_holders
from ansible.module_utils.sglang_port_owner import ProcReader as PortOwnerReader
from ansible.module_utils.sglang_systemd import (
    SystemdError,
    SystemdReader,
    UnitState,
    read_unit_variable,
)

CONDITIONS = (
    "old_gone",
    "port_bound",
    "env_matched",
    "config_matched",
    "healthy",
    "first_generation",
)
DEFAULT_PROMPT = "The capital city of France is"
INITIAL_POLL_INTERVAL = 0.1
POLL_BACKOFF = 1.5
HTTP_TIMEOUT = 5.0
# How long a unit may sit inactive, or failed from its previous run, before we conclude that no
# restart is coming. A restart job passes through "inactive" for milliseconds only.
STOPPED_GRACE = 10.0
MAX_BODY = 8 * 1024 * 1024
# Condition (4): endpoints tried in order, the next one only when the build answers 404.
HEALTH_CHAINS = {
    "auto": ("/ready", "/health_generate", "/health"),
    "ready": ("/ready",),
    "health_generate": ("/health_generate", "/health"),
    "health": ("/health",),
}
REDACTED = "********"
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
# Whole words only: "speculative_num_draft_tokens" is not a secret, "hf_token" is.
SECRET_KEY_RE = re.compile(
    r"(?:^|[_.-])(?:api[_-]?key|secret|token|password|passwd)(?:$|[_.-])", re.IGNORECASE
)
# Environment variables whose values are never shown (the brief's words: any name containing them).
SECRET_ENV_NAME_RE = re.compile(r"KEY|SECRET|TOKEN|PASSWORD", re.IGNORECASE)
ENV_NAME_RE = re.compile(r"^[^=\0]+$")
SECRET_FLAG_RE = re.compile(
    r"(--[\w-]*(?:api[_-]?key|secret|token|password)[\w-]*)(=|\s+)(\S+)", re.IGNORECASE
)
ARGUMENT_SPEC: dict[str, Any] = {
    "url": {"type": "str", "required": True},
    "api_key": {"type": "str", "no_log": True},
    "api_key_from_unit": {"type": "bool", "default": False},
    "api_key_env": {"type": "str", "default": "SGLANG_API_KEY"},
    "unit": {"type": "str"},
    "previous_pid": {"type": "int"},
    "previous_invocation": {"type": "str"},
    "expect": {"type": "dict", "default": {}},
    "expect_env": {"type": "dict", "default": {}},
    "timeout": {"type": "int", "default": 1800},
    "probe": {
        "type": "dict",
        "default": {"prompt": DEFAULT_PROMPT, "max_new_tokens": 8, "timeout": 120.0},
        "options": {
            "prompt": {"type": "str", "required": True},
            "max_new_tokens": {"type": "int", "default": 8},
            "timeout": {"type": "float", "default": 120.0},
        },
    },
    "require_speculation": {"type": "bool", "default": False},
    "max_poll_interval": {"type": "float", "default": 0.5},
    "health_check": {
        "type": "str",
        "default": "auto",
        "choices": ["auto", "ready", "health_generate", "health"],
    },
    "validate_certs": {"type": "bool", "default": True},
}
# api_key and api_key_from_unit exclude each other by value (settings_from_params): Ansible's
# mutually_exclusive counts a parameter that is merely present, so `api_key_from_unit: false`
# next to an api_key, or an empty api_key next to `api_key_from_unit: true`, would fail.
REQUIRED_IF = [["api_key_from_unit", True, ["unit"]]]


# ---------------------------------------------------------------------------------------------
# Secrets
# ---------------------------------------------------------------------------------------------


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


def check_api_key(key: str, where: str) -> None:
    """Refuse a key that cannot be an HTTP header value before any request is made.

    http.client would raise ValueError("Invalid header value b'Bearer <key>\\n'"): the key, escaped
    so that no redaction of the raw key would match, in an exception text. This message never
    names the value.
    """
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in key):
        raise ValueError(
            f"{where} contains a control character (a stray newline?) and cannot be sent in an "
            "HTTP header"
        )
    try:
        key.encode("latin-1")
    except UnicodeEncodeError:
        raise ValueError(
            f"{where} contains a character outside Latin-1 and cannot be sent in an HTTP header"
        ) from None


def is_secret_env_name(name: str) -> bool:
    return bool(SECRET_ENV_NAME_RE.search(name))


# ---------------------------------------------------------------------------------------------
# /proc: the server's environment, and who owns its port (module_utils/sglang_port_owner.py)
# ---------------------------------------------------------------------------------------------


def parse_environ(raw: bytes, names: Iterable[str]) -> dict[str, str]:
    """The named variables of /proc/PID/environ text (NUL-separated NAME=VALUE); nothing else."""
    wanted = set(names)
    found: dict[str, str] = {}
    for entry in raw.split(b"\0"):
        name, sep, value = entry.partition(b"=")
        key = name.decode("utf-8", "replace")
        if sep and key in wanted and key not in found:  # getenv() returns the first one
            found[key] = value.decode("utf-8", "replace")
    return found


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


class ProcReader(PortOwnerReader):
    """The port-owner facts, plus what readiness reads of a process: its environment as it was
    started, and its command line with secrets hidden."""

    def environ(self, pid: int, names: Iterable[str]) -> dict[str, str] | None:
        """The named variables of the process's environment as it was started; None when gone.

        Only the named variables are kept; the rest (the launcher's own API key among them) is
        dropped at once.
        """
        path = os.path.join(self.proc_root, str(pid), "environ")
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
        except (FileNotFoundError, ProcessLookupError, NotADirectoryError):
            return None
        except PermissionError as exc:
            raise ProcPermissionError(f"cannot read {path}: permission denied") from exc
        if not raw and self.process_state(pid) in (None, "Z"):
            return None  # a zombie's environ reads empty: gone, not "every variable unset"
        return parse_environ(raw, names)

    def describe(self, pid: int) -> str:
        cmd = self.command_line(pid)
        return f"pid {pid} ({redact_command_line(cmd)[:200]})" if cmd else f"pid {pid}"


@dataclasses.dataclass(frozen=True)
class PortObservation:
    bound: bool
    owned: bool
    detail: str
    owner: int | None = None  # the unit process holding the listening socket


def observe_port(procs: ProcReader, port: int, unit_pids: set[int]) -> PortObservation:
    """Is the port listening, and does a process of the unit own the listening socket?"""
    listening = procs.listening_inodes(port)
    if not listening:
        return PortObservation(False, False, f"nothing listens on port {port} yet")
    for pid in sorted(unit_pids):
        if procs.socket_inodes(pid) & listening:
            return PortObservation(True, True, f"port {port} is bound by unit process {pid}", pid)
    others = [pid for pid in procs.all_pids() if pid not in unit_pids]
    foreign, _ = socket_holders(procs, listening, others)
    holder = (
        ", ".join(map(procs.describe, foreign)) if foreign else "a process this module cannot see"
    )
    return PortObservation(
        True, False, f"port {port} is held by a process outside the unit: {holder}"
    )


# ---------------------------------------------------------------------------------------------
# HTTP
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class HttpResponse:
    status: int | None
    body: bytes = b""
    error: str | None = None

    def json(self) -> Any:
        try:
            return json.loads(self.body.decode("utf-8", "replace"))
        except ValueError:
            return None

    def describe(self) -> str:
        if self.status is None:
            return self.error or "no answer"
        snippet = self.body[:200].decode("utf-8", "replace").strip()
        return f"HTTP {self.status}" + (f": {snippet}" if snippet else "")


def _is_loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


class HttpClient:
    """Minimal JSON client; messages never carry request headers."""

    def __init__(self, base_url: str, api_key: str | None, validate_certs: bool) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Accept": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        handlers: list[urllib.request.BaseHandler] = []
        if base_url.startswith("https") and not validate_certs:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            handlers.append(urllib.request.HTTPSHandler(context=context))
        host = urllib.parse.urlsplit(base_url).hostname or ""
        if _is_loopback(host):
            # A proxy cannot reach this host's loopback; an http_proxy in the environment would
            # turn every poll into a proxy error.
            handlers.append(urllib.request.ProxyHandler({}))
        self._opener = urllib.request.build_opener(*handlers)

    def set_api_key(self, api_key: str | None) -> None:
        """Use this key from now on (api_key_from_unit reads it after the client exists)."""
        self._headers.pop("Authorization", None)
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"

    def get(self, path: str, timeout: float) -> HttpResponse:
        return self._send(
            urllib.request.Request(self.base_url + path, headers=self._headers), timeout
        )

    def post_json(self, path: str, payload: Any, timeout: float) -> HttpResponse:
        headers = dict(self._headers, **{"Content-Type": "application/json"})
        data = json.dumps(payload).encode()
        request = urllib.request.Request(self.base_url + path, data=data, headers=headers)
        return self._send(request, timeout)

    def _send(self, request: urllib.request.Request, timeout: float) -> HttpResponse:
        try:
            with self._opener.open(request, timeout=timeout) as resp:
                return HttpResponse(resp.status, resp.read(MAX_BODY))
        except urllib.error.HTTPError as exc:
            try:
                body = exc.read(MAX_BODY)
            except (OSError, HTTPException):
                body = b""
            return HttpResponse(exc.code, body)
        except urllib.error.URLError as exc:
            return HttpResponse(None, error=_describe_network_error(exc.reason, timeout))
        except (OSError, HTTPException) as exc:
            return HttpResponse(None, error=_describe_network_error(exc, timeout))


def _describe_network_error(reason: Any, timeout: float) -> str:
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, (socket.timeout, TimeoutError)):
        return f"no answer within {timeout:.1f} s"
    if isinstance(reason, (ConnectionResetError, HTTPException, BrokenPipeError)):
        return f"connection dropped by the server ({type(reason).__name__})"
    return str(reason)


# ---------------------------------------------------------------------------------------------
# Comparing /server_info
# ---------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------
# Journal
# ---------------------------------------------------------------------------------------------

_CAUSES = (
    ("address already in use", "the port is already in use by another process (bind failed)"),
    (
        "unrecognized arguments",
        "SGLang rejected a flag (wrong flag dialect for this SGLang build?)",
    ),
    ("out of memory", "out of memory"),
)


def explain_journal(lines: list[str]) -> list[str]:
    """Lines that name the likely cause, so it stands above the raw journal text."""
    causes: list[str] = []
    for line in lines:
        lowered = line.lower()
        for needle, meaning in _CAUSES:
            if needle in lowered:
                causes.append(f"likely cause: {meaning}: {line.strip()}")
    for index, line in enumerate(lines):
        if line.lstrip().startswith("Traceback (most recent call last)"):
            exception = next(
                (
                    later.strip()
                    for later in lines[index + 1 :]
                    if later.strip() and not later[:1].isspace() and "Traceback" not in later
                ),
                "(exception line not in the journal excerpt)",
            )
            causes.append(f"likely cause: the server raised an exception: {exception}")
    return list(dict.fromkeys(causes))


# ---------------------------------------------------------------------------------------------
# Unit watching (fatal states)
# ---------------------------------------------------------------------------------------------


class UnitFailure(Exception):
    """The unit is in a state that will not become ready: fail at once."""

    def __init__(self, msg: str, condition: str = "unit_state") -> None:
        super().__init__(msg)
        self.condition = condition  # reported as `unmet` where not the unit's state


class UnitWatcher:
    """Follows the unit between polls; raises UnitFailure on a crash, crash loop or PID change."""

    def __init__(
        self,
        unit: str,
        previous_pid: int | None,
        previous_invocation: str | None,
        clock: Callable[[], float],
    ) -> None:
        self.unit = unit
        self.previous_pid = previous_pid
        self.previous_invocation = previous_invocation
        self.clock = clock
        self.new_pid: int | None = None
        self.new_invocations: list[str] = []
        self.lowest_restarts: int | None = None
        self.stopped_since: float | None = None
        self.last: UnitState | None = None

    def is_new(self, state: UnitState) -> bool:
        if state.main_pid <= 0 or state.main_pid == self.previous_pid:
            return False
        return not (self.previous_invocation and state.invocation == self.previous_invocation)

    def observe(self, state: UnitState, procs: ProcReader) -> None:
        self.last = state
        invocation = state.invocation
        if invocation and invocation != self.previous_invocation:
            self.new_invocations += [invocation] if invocation not in self.new_invocations else []
        if state.load_state == "not-found":
            raise UnitFailure(f"unit {self.unit} not found (LoadState=not-found)")
        self._check_restarts(state)
        known_old_run = (
            bool(self.previous_invocation) and state.invocation == self.previous_invocation
        )
        if state.sub_state == "auto-restart":
            raise UnitFailure(
                f"{self.unit} crashed and systemd is restarting it (SubState=auto-restart; "
                f"{state.summary()})"
            )
        if state.active_state == "failed" and state.result == "start-limit-hit":
            # The start job never ran, so InvocationID is still the old one: no grace period.
            raise UnitFailure(
                f"{self.unit}: systemd refused to start it, start limit hit (StartLimitBurst, "
                "manual restarts count too; `systemctl reset-failed` clears it) "
                f"({state.summary()})"
            )
        if state.active_state == "failed" and not (known_old_run and self.new_pid is None):
            raise UnitFailure(f"{self.unit} failed ({state.summary()})")
        if self.new_pid is not None:
            self._check_same_main_process(state, procs)
        elif self.is_new(state):
            self.new_pid = state.main_pid
        self._check_not_stuck_stopped(state, known_old_run)

    def _check_restarts(self, state: UnitState) -> None:
        # A manual restart resets NRestarts, so compare with the lowest reading, not only the first.
        if self.lowest_restarts is not None and state.n_restarts > self.lowest_restarts:
            raise UnitFailure(
                f"{self.unit} is crash-looping: NRestarts rose from {self.lowest_restarts} to "
                f"{state.n_restarts} ({state.summary()})"
            )
        if self.lowest_restarts is None or state.n_restarts < self.lowest_restarts:
            self.lowest_restarts = state.n_restarts

    def _check_same_main_process(self, state: UnitState, procs: ProcReader) -> None:
        pid = self.new_pid
        if state.main_pid != pid:
            if state.main_pid == 0:
                raise UnitFailure(f"{self.unit}: main process {pid} exited ({state.summary()})")
            raise UnitFailure(
                f"{self.unit}: main PID changed from {pid} to {state.main_pid} after it was seen "
                f"as the new server ({state.summary()})"
            )
        proc_state = procs.process_state(pid)
        if proc_state is None or proc_state == "Z":
            gone = "is a zombie" if proc_state == "Z" else "is gone"
            raise UnitFailure(f"{self.unit}: main process {pid} {gone} ({state.summary()})")

    def _check_not_stuck_stopped(self, state: UnitState, known_old_run: bool) -> None:
        stopped = state.active_state in ("inactive", "failed")
        if not stopped:
            self.stopped_since = None
            return
        new_run_ended = (
            bool(self.previous_invocation) and bool(state.invocation) and not known_old_run
        )
        if new_run_ended:
            raise UnitFailure(f"{self.unit}: the new server exited ({state.summary()})")
        now = self.clock()
        if self.stopped_since is None:
            self.stopped_since = now
        elif now - self.stopped_since >= STOPPED_GRACE:
            raise UnitFailure(
                f"{self.unit} stays {state.active_state} and nothing starts it "
                f"(was it restarted?) ({state.summary()})"
            )


# ---------------------------------------------------------------------------------------------
# Conditions and the wait loop
# ---------------------------------------------------------------------------------------------


def _int(text: str | None, default: int = 0) -> int:
    try:
        return int(text or default)
    except ValueError:
        return default


@dataclasses.dataclass(frozen=True)
class Settings:
    url: str
    port: int
    unit: str | None
    previous_pid: int | None
    previous_invocation: str | None
    expect: dict[str, Any]
    timeout: int
    prompt: str
    max_new_tokens: int
    probe_timeout: float
    require_speculation: bool
    max_poll_interval: float
    check_mode: bool
    health_check: str = "auto"
    expect_env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    api_key_from_unit: bool = False
    api_key_env: str = "SGLANG_API_KEY"


@dataclasses.dataclass
class Dependencies:
    systemd: SystemdReader
    procs: ProcReader
    http: HttpClient
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    wall_clock: Callable[[], float] = time.time


@dataclasses.dataclass(frozen=True)
class Unmet:
    condition: str
    detail: str


class NotReady(Exception):
    def __init__(self, unmet: Unmet) -> None:
        super().__init__(unmet.detail)
        self.unmet = unmet


class ReadinessError(Exception):
    """Ends the module with fail_json."""

    def __init__(self, msg: str, result: dict[str, Any]) -> None:
        super().__init__(msg)
        self.msg = msg
        self.result = result


class ReadinessChecker:
    """Evaluates the conditions in order; the caller decides whether to poll again."""

    def __init__(self, settings: Settings, deps: Dependencies) -> None:
        self.s = settings
        self.d = deps
        self.started = deps.clock()
        self.started_wall = deps.wall_clock()
        self.watcher = (
            UnitWatcher(
                settings.unit, settings.previous_pid, settings.previous_invocation, deps.clock
            )
            if settings.unit
            else None
        )
        self.phases: dict[str, float | None] = dict.fromkeys(CONDITIONS)
        self.server_info: dict[str, Any] | None = None
        self.server_info_path = "/server_info"
        chain = HEALTH_CHAINS[settings.health_check]
        if settings.check_mode:  # /health_generate runs a generation: not read-only
            chain = tuple(p for p in chain if p != "/health_generate") or ("/health",)
        self.health_paths = list(chain)
        self.probe: dict[str, Any] | None = None
        self.deadline = self.started + settings.timeout
        self.server_pid: int | None = None  # the unit process owning the listening port
        self.environ_pid: int | None = None  # whose /proc/PID/environ was read
        self.environ_process: str | None = None  # "port_owner" or "main_pid"
        self._env_verified_pid: int | None = None
        # What the latest pass verified (reset at every pass).
        self.config_ok = False
        self.env_ok = False

    # -- helpers -----------------------------------------------------------------------------

    def now(self) -> float:
        return self.d.clock() - self.started

    def _passed(self, condition: str) -> None:
        if self.phases[condition] is None:
            self.phases[condition] = round(self.now(), 3)

    def _http_timeout(self, wanted: float) -> float:
        return max(0.5, min(wanted, self.deadline - self.d.clock()))

    # -- the conditions ----------------------------------------------------------------------

    def read_unit(self) -> UnitState | None:
        if not self.s.unit or self.watcher is None:
            return None
        try:
            state = self.d.systemd.show(self.s.unit)
        except SystemdError as exc:
            raise UnitFailure(str(exc)) from None
        self.watcher.observe(state, self.d.procs)
        return state

    def check_old_gone(self, state: UnitState) -> None:
        assert self.watcher is not None
        if not self.watcher.is_new(state):
            if state.main_pid <= 0:
                detail = f"no main process yet ({state.summary()})"
            else:
                detail = (
                    f"main PID {state.main_pid} is still the previous server "
                    f"(InvocationID={state.invocation or '?'}, {state.summary()})"
                )
            raise NotReady(Unmet("old_gone", detail))
        old = self.s.previous_pid
        if old and old > 0:
            old_state = self.d.procs.process_state(old)
            if old_state not in (None, "Z"):
                raise NotReady(
                    Unmet(
                        "old_gone",
                        f"the previous main process {old} still exists (state {old_state})",
                    )
                )
        self._passed("old_gone")

    def check_port(self, state: UnitState) -> None:
        procs = self.d.procs
        unit_pids = procs.cgroup_pids(state.control_group)
        if unit_pids is None or state.main_pid not in unit_pids:
            unit_pids = (unit_pids or set()) | {state.main_pid} | procs.descendants(state.main_pid)
        try:
            seen = observe_port(procs, self.s.port, unit_pids)
        except ProcPermissionError as exc:
            raise UnitFailure(
                f"cannot verify who owns port {self.s.port}: {exc}; run this task with become"
            ) from exc
        self.server_pid = seen.owner
        if not seen.owned:
            raise NotReady(Unmet("port_bound", seen.detail))
        self._passed("port_bound")

    def check_env(self, state: UnitState) -> None:
        """expect_env against /proc/PID/environ of the server; a mismatch is final."""
        if not self.s.expect_env:
            return
        # The main PID is the launcher; SGLang, its child, owns the port. Both normally share the
        # variables asked for, but the port owner is the process that really serves.
        if self.server_pid:
            pid, role = self.server_pid, "port_owner"
        else:
            pid, role = state.main_pid, "main_pid"
        self.environ_pid, self.environ_process = pid, role
        if pid == self._env_verified_pid:  # an environment cannot change: once per process
            self.env_ok = True
            return
        try:
            env = self.d.procs.environ(pid, self.s.expect_env)
        except ProcPermissionError as exc:
            raise UnitFailure(
                f"cannot verify expect_env: {exc}; the module must run as root on the host "
                "(become: true) to read another user's process environment",
                "env_matched",
            ) from exc
        if env is None:
            raise NotReady(
                Unmet("env_matched", f"process {pid} exited before its environment was read")
            )
        problems = env_mismatches(env, self.s.expect_env)
        if problems:
            who = (
                f"the server process {pid} (owner of port {self.s.port})"
                if role == "port_owner"
                else f"the unit's main process {pid}"
            )
            raise UnitFailure(
                f"{who} was started with the wrong environment (expect_env; an environment cannot "
                f"change, so this is final): {'; '.join(problems)}",
                "env_matched",
            )
        self._env_verified_pid = pid
        self.env_ok = True
        self._passed("env_matched")

    def check_config(self) -> None:
        resp = self.d.http.get(self.server_info_path, self._http_timeout(HTTP_TIMEOUT))
        if resp.status == 404 and self.server_info_path == "/server_info":
            self.server_info_path = "/get_server_info"
            resp = self.d.http.get(self.server_info_path, self._http_timeout(HTTP_TIMEOUT))
        info = resp.json() if resp.status == 200 else None
        if not isinstance(info, dict):
            what = resp.describe() if resp.status != 200 else "an answer that is not a JSON object"
            raise NotReady(Unmet("config_matched", f"GET {self.server_info_path}: {what}"))
        self.server_info = server_info_subset(info, self.s.expect)
        problems = expect_mismatches(info, self.s.expect)
        if problems:
            raise NotReady(Unmet("config_matched", "; ".join(problems)))
        self.config_ok = True
        self._passed("config_matched")

    def check_health(self) -> None:
        path = self.health_paths[0]
        resp = self.d.http.get(path, self._http_timeout(HTTP_TIMEOUT))
        while resp.status == 404 and len(self.health_paths) > 1:
            self.health_paths.pop(0)  # this build lacks it; remember for the next polls
            path = self.health_paths[0]
            resp = self.d.http.get(path, self._http_timeout(HTTP_TIMEOUT))
        if resp.status != 200:
            raise NotReady(Unmet("healthy", f"GET {path}: {resp.describe()}"))
        self._passed("healthy")

    def check_generation(self) -> None:
        payload = {
            "text": self.s.prompt,
            "sampling_params": {"max_new_tokens": self.s.max_new_tokens, "temperature": 0},
        }
        began = self.d.clock()
        resp = self.d.http.post_json("/generate", payload, self._http_timeout(self.s.probe_timeout))
        latency = self.d.clock() - began
        body = resp.json() if resp.status == 200 else None
        if isinstance(body, list) and body:
            body = body[0]
        meta = body.get("meta_info") if isinstance(body, dict) else None
        if not isinstance(meta, dict):
            raise NotReady(Unmet("first_generation", f"POST /generate: {resp.describe()}"))
        tokens = _int(str(meta.get("completion_tokens", 0)))
        verify = meta.get("spec_verify_ct")
        if tokens <= 0:
            raise NotReady(Unmet("first_generation", f"POST /generate returned no tokens: {meta}"))
        if self.s.require_speculation and not (isinstance(verify, (int, float)) and verify > 0):
            raise NotReady(
                Unmet(
                    "first_generation",
                    f"POST /generate shows no speculation (spec_verify_ct={verify!r}) "
                    "but require_speculation is set",
                )
            )
        accept = meta.get("spec_accept_length")
        if accept is None and isinstance(verify, (int, float)) and verify > 0:
            accept = tokens / verify
        self.probe = {
            "latency": round(latency, 4),
            "completion_tokens": tokens,
            "spec_verify_ct": verify,
            "spec_accept_length": accept,
        }
        self._passed("first_generation")

    def evaluate(self, with_generation: bool) -> UnitState | None:
        """One pass over every condition in order; raises NotReady at the first unmet one."""
        self.config_ok = self.env_ok = False
        state = self.read_unit()
        if state is not None:
            self.check_old_gone(state)
            self.check_port(state)
            self.check_env(state)
        self.check_config()
        self.check_health()
        if with_generation:
            self.check_generation()
            after = self.read_unit()  # condition 6: the watcher fails on a changed main PID
            if after is not None:
                state = after
        return state

    # -- results -----------------------------------------------------------------------------

    def restarted_from(self) -> dict[str, Any] | None:
        if self.s.previous_pid is None and not self.s.previous_invocation:
            return None
        return {"pid": self.s.previous_pid, "invocation_id": self.s.previous_invocation}

    def result(self, state: UnitState | None, ready: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "changed": False,
            "ready": ready,
            "url": self.s.url,
            "elapsed": round(self.now(), 3),
            "phases": dict(self.phases),
            "pid": state.main_pid if state else None,
            "invocation_id": state.invocation if state else None,
            "restarted_from": self.restarted_from(),
            "server_info_endpoint": self.server_info_path,
            "health_endpoint": self.health_paths[0],
            "verified": self.verified(),
            "environ_pid": self.environ_pid,
            "environ_process": self.environ_process,
        }
        if self.s.unit:
            out["unit"] = self.s.unit
        if state is not None:
            out["unit_state"] = state.as_dict()
        if self.server_info is not None:
            out["server_info"] = self.server_info
        if self.probe is not None:
            out["probe"] = self.probe
        return out

    def verified(self) -> dict[str, list[str]]:
        """Where each requested parameter was verified by the latest pass."""
        expect, env = sorted(self.s.expect), sorted(self.s.expect_env)
        unverified = ([] if self.config_ok else expect) + ([] if self.env_ok else env)
        return {
            "server_info": expect if self.config_ok else [],
            "environ": env if self.env_ok else [],
            "unverified": sorted(unverified),
        }

    def journal(self) -> list[str]:
        if not self.s.unit or self.watcher is None:
            return []
        since = self.started_wall - 10
        try:
            return self.d.systemd.journal(self.s.unit, self.watcher.new_invocations, since)
        except Exception as exc:  # the journal is an aid; never hide the real failure behind it
            return [f"(could not read the journal: {exc})"]

    def failure(self, headline: str, unmet: Unmet | None) -> ReadinessError:
        lines = self.journal()
        parts = [headline, *explain_journal(lines)]
        if lines:
            parts.append(f"--- last {len(lines)} journal lines of {self.s.unit} ---")
            parts.extend(lines)
        last = self.watcher.last if self.watcher else None
        result = self.result(last, ready=False)
        result["journal"] = lines
        if unmet is not None:
            result["unmet"] = unmet.condition
            result["detail"] = unmet.detail
        return ReadinessError("\n".join(parts), result)


def wait_until_ready(settings: Settings, deps: Dependencies) -> dict[str, Any]:
    """Poll until every condition holds; raise ReadinessError on a crash or at the time-out."""
    checker = ReadinessChecker(settings, deps)
    interval = INITIAL_POLL_INTERVAL
    progress = -1
    while True:
        try:
            state = checker.evaluate(with_generation=True)
            return checker.result(state, ready=True)
        except UnitFailure as exc:
            final = Unmet(exc.condition, str(exc)) if exc.condition != "unit_state" else None
            raise checker.failure(str(exc), final) from None
        except NotReady as exc:
            unmet = exc.unmet
        remaining = checker.deadline - deps.clock()
        if remaining <= 0:
            headline = (
                f"timed out after {settings.timeout} s waiting for the SGLang server at "
                f"{settings.url}: condition '{unmet.condition}' still unmet: {unmet.detail}"
            )
            raise checker.failure(headline, unmet)
        reached = CONDITIONS.index(unmet.condition)
        if reached > progress:
            progress, interval = reached, INITIAL_POLL_INTERVAL
        deps.sleep(min(interval, remaining))
        interval = min(interval * POLL_BACKOFF, settings.max_poll_interval)


def check_once(settings: Settings, deps: Dependencies) -> dict[str, Any]:
    """Check mode: one read-only pass, no generation, never fails for not being ready."""
    checker = ReadinessChecker(settings, deps)
    state: UnitState | None = None
    extra: dict[str, Any] = {}
    try:
        state = checker.evaluate(with_generation=False)
        ready = True
    except UnitFailure as exc:
        ready = False
        extra = {"unmet": exc.condition, "detail": str(exc)}
    except NotReady as exc:
        ready = False
        extra = {"unmet": exc.unmet.condition, "detail": exc.unmet.detail}
    if state is None and checker.watcher is not None:
        state = checker.watcher.last
    return {**checker.result(state, ready=ready), **extra}


# ---------------------------------------------------------------------------------------------
# Module entry
# ---------------------------------------------------------------------------------------------


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


def build_dependencies(module: AnsibleModule, settings: Settings) -> Dependencies:
    def run(cmd: list[str]) -> tuple[int, str, str]:
        rc, out, err = module.run_command(
            cmd, environ_update={"LC_ALL": "C", "SYSTEMD_PAGER": "", "SYSTEMD_COLORS": "0"}
        )
        return rc, out, err

    return Dependencies(
        systemd=SystemdReader(run),
        procs=ProcReader(),
        http=HttpClient(
            settings.url, module.params.get("api_key"), module.params["validate_certs"]
        ),
    )


def run_checks(module: AnsibleModule, secrets: list[str]) -> tuple[bool, dict[str, Any]]:
    """(failed, result with msg when failed); never ends the module itself, see main()."""
    try:
        settings = settings_from_params(module.params, module.check_mode)
    except ValueError as exc:
        return True, {"msg": str(exc)}
    deps = build_dependencies(module, settings)
    extra: dict[str, Any] = {}
    if settings.api_key_from_unit and settings.unit:
        try:
            key, source = read_unit_variable(deps.systemd, settings.unit, settings.api_key_env)
        except SystemdError as exc:
            return True, {"msg": f"api_key_from_unit: {exc}"}
        if key:  # registered before anything else may see it
            module.no_log_values.add(key)
            secrets.append(key)
        try:
            check_api_key(key, f"{settings.api_key_env} of {settings.unit}")
        except ValueError as exc:
            return True, {"msg": str(exc)}
        deps.http.set_api_key(key)
        extra["api_key_source"] = source
    if settings.expect_env and not settings.unit:
        module.warn(
            "expect_env not verified: without unit no server process is known (URL-only mode): "
            + ", ".join(sorted(settings.expect_env))
        )
    try:
        if settings.check_mode:
            result = check_once(settings, deps)
        else:
            result = wait_until_ready(settings, deps)
    except ReadinessError as exc:
        return True, {**exc.result, **extra, "msg": exc.msg}
    return False, {**result, **extra}


def main() -> None:
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        required_if=REQUIRED_IF,
        supports_check_mode=True,
    )
    secrets = [module.params.get("api_key") or ""]
    trace: str | None = None
    try:
        failed, result = run_checks(module, secrets)
    except Exception as exc:  # an unforeseen error must not carry a key out in its text
        failed, result = True, {"msg": f"sglang_ready: unexpected {type(exc).__name__}: {exc}"}
        trace = traceback.format_exc()
    # exit_json/fail_json are called outside any except block: fail_json would otherwise attach
    # the pending exception's traceback (with its unredacted message) when tracebacks are on.
    result = redact(result, secrets)
    if failed:
        msg = result.pop("msg")
        if trace is not None:
            module.fail_json(msg=msg, exception=redact(trace, secrets), **result)
        else:
            module.fail_json(msg=msg, **result)
        return
    module.exit_json(**result)


if __name__ == "__main__":
    main()
