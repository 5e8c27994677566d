# What systemd says about a unit, read through systemctl and journalctl: its state (MainPID,
# InvocationID, ActiveState, ...), the last lines of its journal, and the environment it gives
# the unit's processes (Environment= and EnvironmentFile=, parsed as systemd parses them).
# Used by library/sglang_ready.py and its module_utils. Runs on the target host inside the module:
# standard library only.
from __future__ import annotations

import dataclasses
import glob
import re
import shlex
from collections.abc import Callable
from typing import Any

JOURNAL_LINES = 40
SHOW_PROPERTIES = (
    "MainPID",
    "InvocationID",
    "ActiveState",
    "SubState",
    "NRestarts",
    "Result",
    "ExecMainStatus",
    "ControlGroup",
    "LoadState",
)


class SystemdError(Exception):
    """systemctl failed, or the unit's environment could not be read; messages name commands,
    files and variables, never a variable's value."""


@dataclasses.dataclass(frozen=True)
class UnitState:  # one field per SHOW_PROPERTIES entry, in its order (as_dict)
    main_pid: int
    invocation: str
    active_state: str
    sub_state: str
    n_restarts: int
    result: str
    exec_main_status: str
    control_group: str
    load_state: str

    def summary(self) -> str:
        return (
            f"ActiveState={self.active_state}/{self.sub_state}, MainPID={self.main_pid}, "
            f"NRestarts={self.n_restarts}, Result={self.result}, "
            f"ExecMainStatus={self.exec_main_status}"
        )

    def as_dict(self) -> dict[str, Any]:
        """By systemd's property names: the fields are SHOW_PROPERTIES, in the same order."""
        return dict(zip(SHOW_PROPERTIES, dataclasses.astuple(self), strict=True))


def parse_int(text: str | None, default: int = 0) -> int:
    """The integer in text (a property value, a JSON count); default when empty or not one."""
    try:
        return int(text or default)
    except ValueError:
        return default


def parse_systemctl_show(text: str) -> UnitState:
    props: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            props[key.strip()] = value.strip()
    return UnitState(
        main_pid=parse_int(props.get("MainPID")),
        invocation=props.get("InvocationID", ""),
        active_state=props.get("ActiveState", ""),
        sub_state=props.get("SubState", ""),
        n_restarts=parse_int(props.get("NRestarts")),
        result=props.get("Result", ""),
        exec_main_status=props.get("ExecMainStatus", ""),
        control_group=props.get("ControlGroup", ""),
        load_state=props.get("LoadState", ""),
    )


_ENV_FILE_WS = " \t\n\r"
_ENV_FILE_NEWLINE = "\n\r"
_SHELL_NEED_ESCAPE = '"\\`$'


def parse_env_file(text: str) -> dict[str, str]:
    """EnvironmentFile= text as systemd reads it (the state machine of src/basic/env-file.c).

    NAME=VALUE lines; lines starting with # or ; are comments; whitespace around the name and
    before the value is dropped, trailing whitespace of an unquoted value too; single quotes keep
    everything, double quotes unescape \\" \\\\ \\` \\$ and keep other backslashes; a backslash
    at the end of a line continues it. A later assignment of the same name wins.
    """
    env: dict[str, str] = {}
    state = "pre_key"
    key: list[str] = []
    value: list[str] = []
    key_ws: int | None = None  # where the key's trailing whitespace starts
    value_ws: int | None = None

    def push(strip_value: bool) -> None:
        name = "".join(key[:key_ws] if key_ws is not None else key)
        text = "".join(value[:value_ws] if strip_value and value_ws is not None else value)
        env[name] = text

    for c in text:
        if state == "pre_key":
            if c in "#;":
                state = "comment"
            elif c not in _ENV_FILE_WS:
                state, key, key_ws = "key", [c], None
        elif state == "key":
            if c in _ENV_FILE_NEWLINE:
                state, key = "pre_key", []  # a line without '=' is ignored
            elif c == "=":
                state, value, value_ws = "pre_value", [], None
            else:
                if c not in _ENV_FILE_WS:
                    key_ws = None
                elif key_ws is None:
                    key_ws = len(key)
                key.append(c)
        elif state == "pre_value":
            if c in _ENV_FILE_NEWLINE:
                push(strip_value=False)
                state, key = "pre_key", []
            elif c == "'":
                state = "single"
            elif c == '"':
                state = "double"
            elif c == "\\":
                state = "value_escape"
            elif c not in _ENV_FILE_WS:
                state = "value"
                value.append(c)
        elif state == "value":
            if c in _ENV_FILE_NEWLINE:
                push(strip_value=True)
                state, key = "pre_key", []
            elif c == "\\":
                state, value_ws = "value_escape", None
            else:
                if c not in _ENV_FILE_WS:
                    value_ws = None
                elif value_ws is None:
                    value_ws = len(value)
                value.append(c)
        elif state == "value_escape":
            state = "value"
            if c not in _ENV_FILE_NEWLINE:  # an escaped newline continues the line
                value.append(c)
        elif state == "single":
            if c == "'":
                state = "pre_value"
            else:
                value.append(c)
        elif state == "double":
            if c == '"':
                state = "pre_value"
            elif c == "\\":
                state = "double_escape"
            else:
                value.append(c)
        elif state == "double_escape":
            state = "double"
            if c in _SHELL_NEED_ESCAPE:
                value.append(c)
            elif c != "\n":
                value += ["\\", c]
        elif state == "comment":
            if c == "\\":
                state = "comment_escape"
            elif c in _ENV_FILE_NEWLINE:
                state = "pre_key"
        elif state == "comment_escape":
            state = "pre_key" if c in _ENV_FILE_NEWLINE else "comment"
    if state in ("pre_value", "value", "value_escape", "single", "double", "double_escape"):
        push(strip_value=state == "value")
    return env


def parse_environment_property(text: str) -> dict[str, str]:
    """`systemctl show -p Environment --value`: NAME=VALUE words, shell-quoted where needed."""
    text = text.strip()
    if not text:
        return {}
    try:
        words = shlex.split(text)
    except ValueError:  # systemd before v246 printed the words unquoted
        words = text.split()
    env: dict[str, str] = {}
    for word in words:
        name, sep, value = word.partition("=")
        if sep and name:
            env[name] = value
    return env


_ENV_FILES_LINE_RE = re.compile(r"^(.*) \(ignore_errors=(yes|no)\)$")


def parse_environment_files_property(text: str) -> list[tuple[str, bool]]:
    """`systemctl show -p EnvironmentFiles --value`: one 'PATH (ignore_errors=yes|no)' a line.

    A leading '-' (the unit-file spelling of an optional file) is understood too.
    """
    files: list[tuple[str, bool]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        match = _ENV_FILES_LINE_RE.match(line)
        path, optional = (match.group(1), match.group(2) == "yes") if match else (line, False)
        if path.startswith("-"):
            path, optional = path[1:], True
        files.append((path, optional))
    return files


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8", errors="surrogateescape") as fh:
        return fh.read()


def read_unit_variable(
    systemd: SystemdReader, unit: str, name: str, read_text: Callable[[str], str] = _read_text
) -> tuple[str, str]:
    """(value, where) of variable `name` in the environment systemd gives `unit`.

    systemd's precedence: EnvironmentFile= overrides Environment=, a later file an earlier one.
    """
    inline, files = systemd.environment(unit)
    value: str | None = inline.get(name)
    source = "Environment="
    for pattern, optional in files:
        paths = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        if not paths and not optional:
            raise SystemdError(
                f"cannot read {name}: EnvironmentFile {pattern} of {unit} matches no file"
            )
        for path in paths:
            try:
                text = read_text(path)
            except FileNotFoundError:
                if optional:
                    continue
                raise SystemdError(
                    f"cannot read {name}: EnvironmentFile {path} of {unit} does not exist"
                ) from None
            except PermissionError:
                raise SystemdError(
                    f"cannot read {name}: EnvironmentFile {path} of {unit} is not "
                    "readable (permission denied); run this task as root on the host "
                    "(become: true)"
                ) from None
            except (OSError, ValueError) as exc:
                reason = getattr(exc, "strerror", None) or type(exc).__name__
                raise SystemdError(
                    f"cannot read {name}: EnvironmentFile {path} of {unit}: {reason}"
                ) from None
            parsed = parse_env_file(text)
            if name in parsed:
                value, source = parsed[name], path
    if value is None:
        listed = ", ".join(path for path, _ in files) or "none"
        raise SystemdError(
            f"{name} is set neither in Environment= nor in any EnvironmentFile= of {unit} "
            f"(files: {listed})"
        )
    return value, source


RunCommand = Callable[[list[str]], tuple[int, str, str]]


class SystemdReader:
    """Reads a unit's state, environment and journal through systemctl/journalctl; `run` runs a
    command and returns (rc, stdout, stderr), as AnsibleModule.run_command does."""

    def __init__(self, run: RunCommand) -> None:
        self._run = run

    def show(self, unit: str) -> UnitState:
        cmd = ["systemctl", "show", unit, "-p", ",".join(SHOW_PROPERTIES)]
        rc, out, err = self._run(cmd)
        if rc != 0:
            raise SystemdError(f"systemctl show {unit} failed (rc={rc}): {err.strip()}")
        return parse_systemctl_show(out)

    def environment(self, unit: str) -> tuple[dict[str, str], list[tuple[str, bool]]]:
        """The unit's Environment= assignments and its EnvironmentFile= entries (path, optional)."""
        texts: list[str] = []
        for prop in ("Environment", "EnvironmentFiles"):
            rc, out, err = self._run(["systemctl", "show", "-p", prop, "--value", unit])
            if rc != 0:
                raise SystemdError(
                    f"systemctl show -p {prop} {unit} failed (rc={rc}): {err.strip()}"
                )
            texts.append(out)
        return parse_environment_property(texts[0]), parse_environment_files_property(texts[1])

    def journal(self, unit: str, invocations: list[str], since_epoch: float) -> list[str]:
        """The unit's last JOURNAL_LINES lines, oldest first: those of the given invocations,
        else (none logged, or an old journald) those since since_epoch."""
        base = ["journalctl", "-u", unit, "-n", str(JOURNAL_LINES), "-o", "cat", "--no-pager"]
        if invocations:
            matches = [f"_SYSTEMD_INVOCATION_ID={i}" for i in invocations]
            rc, out, _ = self._run(base + matches)
            if rc == 0 and out.strip():
                return out.splitlines()
        # Older journald lacks _SYSTEMD_INVOCATION_ID, or the invocation is unknown. With --since,
        # journald's -n keeps the OLDEST lines: ask newest first and turn them back.
        rc, out, err = self._run([*base, "--since", f"@{int(since_epoch)}", "--reverse"])
        if rc != 0:
            return [f"(journalctl failed, rc={rc}: {err.strip()})"]
        return out.splitlines()[::-1]
