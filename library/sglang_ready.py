#!/usr/bin/python
# Runs on the target host with its own /usr/bin/python3: stdlib and ansible.module_utils only.
# This file holds the documentation, the arguments and main. The arguments' checks are
# module_utils/sglang_ready_settings.py; the conditions and the poll loop are
# module_utils/sglang_readiness.py, built on the other sglang_* module_utils (unit watcher, /proc,
# expectations, journal, HTTP, secrets); AnsiballZ ships every one the module imports.
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
cause:
  description:
    - Why the server did not become ready, read from RV(journal) by the classifier the sweep's
      controller uses too (C(module_utils/sglang_failure_cause.py)). The message's
      C(likely cause) lines come from the same needles.
    - "V(out of memory): SGLang's C(Not enough memory. Please try to increase
      --mem-fraction-static.), C(Loaded weights leave no GPU memory for the KV cache),
      C(Capture cuda graph failed) with torch's C(CUDA out of memory), C(OutOfMemoryError),
      torch's C(DefaultCPUAllocator: can't allocate memory), systemd's OOM kill."
    - "V(rejected flag): argparse's C(unrecognized arguments), C(argument --x: invalid choice)
      (or any other C(error: argument --x:)), C(ambiguous option), SGLang's C(Unknown
      speculative algorithm name)."
    - "V(crash): a traceback, a bind failure, or a unit that failed before the deadline.
      V(readiness timeout): the deadline passed and the journal shows none of the above."
    - Out of memory and a rejected flag beat a crash (their servers end in a traceback or an
      exit too); a crash beats a readiness timeout.
    - The sweep adds V(host lost) for a host that became unreachable; this module never returns
      it.
  returned: when the wait failed (not in check mode, nor for bad arguments or an unreadable key)
  type: str
  sample: out of memory
cause_detail:
  description:
    - The journal line that shows RV(cause) (for a crash, the exception of the last traceback);
      empty when no line does (a unit that failed silently, a time-out).
  returned: when RV(cause) is
  type: str
  sample: "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
cause_flags:
  description:
    - For V(rejected flag), the flags the build refused as the journal names them (without
      values; every alias argparse names; C(--speculative-algorithm) for an unknown algorithm);
      empty otherwise or when none is named.
  returned: when RV(cause) is
  type: list
  elements: str
  sample: [--no-such-flag]
"""

import traceback
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_http import HttpClient, check_api_key
from ansible.module_utils.sglang_readiness import (
    Dependencies,
    ReadinessError,
    Settings,
    check_once,
    wait_until_ready,
)
from ansible.module_utils.sglang_ready_settings import settings_from_params
from ansible.module_utils.sglang_secrets import redact
from ansible.module_utils.sglang_server_process import ProcReader
from ansible.module_utils.sglang_systemd import SystemdError, SystemdReader, read_unit_variable

DEFAULT_PROMPT = "The capital city of France is"
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


def build_dependencies(module: AnsibleModule, settings: Settings) -> Dependencies:
    def run(cmd: list[str]) -> tuple[int, str, str]:
        return module.run_command(
            cmd, environ_update={"LC_ALL": "C", "SYSTEMD_PAGER": "", "SYSTEMD_COLORS": "0"}
        )

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
        result = (check_once if settings.check_mode else wait_until_ready)(settings, deps)
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
    if trace is not None:
        result["exception"] = redact(trace, secrets)
    if failed:
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
