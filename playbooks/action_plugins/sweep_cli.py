"""Runs a `python -m sweep` command on the controller inside Ansible's own worker process.

    - name: Ask the planner
      sweep_cli:
        argv: [next, "{{ _plan.root }}", "{{ inventory_hostname }}", --wait, "30"]
        stdin: "{{ info | to_json }}"   # optional: what the command reads on stdin
      register: answer  # rc, stdout, stdout_lines, stderr: as ansible.builtin.command has

`parameters` (a list of names): the playbook's -e parameters. A name given with -e that is none of
them, nor an inventory variable (sglang_*, ansible_*), fails the task before the command runs:
Ansible would ignore it, so a typo (-e budgte=8) would sweep or deploy what was not asked.
`settings` (a list of names, such as sglang_sweep_grid and sglang_bench_contexts): the inventory
settings the playbook reads. A variable of a play host (or of each of `hosts`, names) under one of
their prefixes (sglang_sweep_, sglang_bench_) that is none of them fails the task the same way:
sglang_sweep_gird would sweep the default grid.

The same entry point as the command line (sweep/__main__.py main), with the same output and exit
status, so the playbooks read its result as they would a command's. Why not ansible.builtin.command:
a sweep asks the planner and records a point several times per point, and each such command cost a
module packed and run by AnsiballZ plus a second interpreter started for `-m sweep` (0.9-1.3 s a
task on the demo host; 0.26 s here). Loaded from the playbooks' adjacent action_plugins
directory; the sweep package is imported here, at load time, which the strategy does once in the
playbook's own process before it forks the workers (free and linear both load the action class to
read BYPASS_HOST_LOOP), so every worker inherits it already imported.
"""

from __future__ import annotations

import difflib
import io
import os
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.vars import load_extra_vars

ROOT = Path(__file__).resolve().parents[2]  # the project: sweep/ lives here
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sweep.__main__ import main as sweep_main  # noqa: E402  (needs ROOT on sys.path)

# The commands that write nothing on the controller, and any with --dry-run (plan's): the only
# ones run in check mode (the rest are skipped, as ansible.builtin.command skips a command there)
# and never "changed" (the rest are, unless the task's changed_when says otherwise).
READ_ONLY = frozenset(("check", "winner", "status"))


def _hint(name: str, known: list[str], prefix: str = "") -> str:
    """What follows an unknown `name`: the closest of `known` as " (did you mean ...?)", or "".
    Names are compared past their shared `prefix` (which would make every name look close)."""
    rest = {k.removeprefix(prefix): k for k in known if k.startswith(prefix)}
    close = difflib.get_close_matches(name.removeprefix(prefix), list(rest), 1)
    return f" (did you mean {rest[close[0]]}?)" if close else ""


def _unknown_settings(
    task_vars: dict[str, Any], settings: list[str], hosts: list[str] | None
) -> list[str]:
    """Every variable of a host (`hosts`, else the play's) under a prefix of `settings` that is
    none of them."""
    prefixes = tuple({"_".join(name.split("_")[:2]) + "_" for name in settings})
    return [
        f"{host}: {name}{_hint(name, settings, next(p for p in prefixes if name.startswith(p)))}"
        for host in hosts or task_vars.get("ansible_play_hosts_all") or []
        for name in sorted(task_vars["hostvars"][host])
        if name.startswith(prefixes) and name not in settings
    ]


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("argv", "stdin", "parameters", "settings", "hosts"))
    _supports_check_mode = True

    def run(
        self, tmp: str | None = None, task_vars: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        result: dict[str, Any] = super().run(tmp, task_vars)
        argv = self._task.args.get("argv")
        if not isinstance(argv, list) or not argv:
            raise AnsibleActionFail(f"sweep_cli: argv must be a non-empty list, got {argv!r}")
        words = [str(word) for word in argv]
        known = [str(name) for name in self._task.args.get("parameters") or []]
        for name in sorted(load_extra_vars(self._loader)) if known else []:
            if name not in known and not name.startswith(("sglang_", "ansible_")):
                raise AnsibleActionFail(
                    f"-e {name}: not a parameter of this playbook{_hint(name, known)}; its"
                    " parameters: docs/parameters.md. An inventory variable given with -e is named"
                    " sglang_* or ansible_*."
                )
        settings = [str(name) for name in self._task.args.get("settings") or []]
        hosts = [str(h) for h in self._task.args.get("hosts") or []]
        unknown = _unknown_settings(task_vars or {}, settings, hosts) if settings else []
        if unknown:
            raise AnsibleActionFail(
                "; ".join(unknown) + ": no setting of this playbook or its roles, so it would"
                " change nothing."
            )
        reads = words[0] in READ_ONLY or "--dry-run" in words
        if self._task.check_mode and not reads:
            result.update(skipped=True, msg=f"sweep {words[0]} writes: skipped in check mode")
            return result
        stdin = self._task.args.get("stdin")
        out, err = io.StringIO(), io.StringIO()
        saved_stdin, saved_cwd = sys.stdin, os.getcwd()
        # Relative paths (results/, cache/) mean the project root, as the command's chdir did.
        os.chdir(ROOT)
        sys.stdin = io.StringIO("" if stdin is None else str(stdin))
        try:
            with redirect_stdout(out), redirect_stderr(err):
                try:
                    rc = sweep_main(words)
                except SystemExit as e:  # argparse's own errors and --help
                    rc = e.code if isinstance(e.code, int) else 1
        finally:
            sys.stdin = saved_stdin
            os.chdir(saved_cwd)
        stdout, stderr = out.getvalue().rstrip("\n"), err.getvalue().rstrip("\n")
        result.update(
            cmd=["python", "-m", "sweep", *words],
            rc=rc,
            stdout=stdout,
            stdout_lines=stdout.splitlines(),
            stderr=stderr,
            stderr_lines=stderr.splitlines(),
            changed=rc == 0 and not reads,
        )
        if rc != 0:
            result["failed"] = True
            result["msg"] = stderr or f"python -m sweep {words[0]} exited {rc}"
        return result
