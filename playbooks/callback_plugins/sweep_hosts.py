"""Tells the sweep's online planner what only the running playbook knows (playbooks/sweep.yml).

- The hosts it lost: a host that turns unreachable is named in a directory of this playbook run
  (`$SGLANG_SWEEP_LOST_DIR/<host>`), so `python -m sweep next` (sweep/cli/planner.py) hands its
  claimed point to another host, even to one that has been waiting since before the loss (a task's
  variables, ansible_play_hosts among them, are fixed when it starts; this directory is not).
- Its forks (`$SGLANG_SWEEP_FORKS`): the planner refuses more hosts than forks, which would sit
  idle while the first ones run.

Both go to the environment of this process, which every worker, and so every command a task runs
on the controller, inherits. Loaded from the playbook's adjacent callback_plugins directory, for
every playbook; it prints nothing.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

from ansible import context
from ansible.plugins.callback import CallbackBase

LOST_DIR_ENV = "SGLANG_SWEEP_LOST_DIR"  # sweep/cli/planner.py reads the same names
FORKS_ENV = "SGLANG_SWEEP_FORKS"


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "sweep_hosts"
    CALLBACK_NEEDS_ENABLED = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lost_dir: str | None = None

    def v2_playbook_on_start(self, playbook: Any) -> None:
        self._lost_dir = tempfile.mkdtemp(prefix="sglang-sweep-lost-")
        os.environ[LOST_DIR_ENV] = self._lost_dir
        forks = context.CLIARGS.get("forks")
        if isinstance(forks, int):
            os.environ[FORKS_ENV] = str(forks)

    def v2_runner_on_unreachable(self, result: Any) -> None:
        if self._lost_dir:
            name = os.path.basename(result._host.get_name())
            with open(os.path.join(self._lost_dir, name), "w", encoding="utf-8") as f:
                f.write("unreachable\n")

    def v2_playbook_on_stats(self, stats: Any) -> None:
        if self._lost_dir:
            shutil.rmtree(self._lost_dir, ignore_errors=True)
