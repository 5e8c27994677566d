"""Writes one JSON line per task result to $TASK_LOG_PATH (benchmarks/sweep_overhead.py reads it).

    ANSIBLE_CALLBACK_PLUGINS=benchmarks/callback_plugins ANSIBLE_CALLBACKS_ENABLED=task_log \\
    TASK_LOG_PATH=/tmp/tasks.jsonl ansible-playbook ...

Each line: task name, action, host, whether it was delegated, whether it is a handler, start/end.
Nothing else is recorded (no arguments, no results: a key cannot end up here).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: task_log
type: aggregate
short_description: one JSON line per task result, for benchmarks/sweep_overhead.py
description:
  - Appends name, action, host, delegation, handler flag and timestamps of every task result to
    the file named by the environment variable TASK_LOG_PATH.
requirements:
  - enable in ANSIBLE_CALLBACKS_ENABLED
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "task_log"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self) -> None:
        super().__init__()
        self._path = os.environ.get("TASK_LOG_PATH", "")
        self._started: dict[str, float] = {}

    def _start(self, task: Any) -> None:
        self._started[task._uuid] = time.time()

    def v2_playbook_on_task_start(self, task: Any, is_conditional: bool) -> None:
        self._start(task)

    def v2_playbook_on_handler_task_start(self, task: Any) -> None:
        self._start(task)

    def _log(self, result: Any, status: str) -> None:
        if not self._path:
            return
        task = result._task
        delegated = task.delegate_to
        line = {
            "task": task.get_name(),
            "action": task.action,
            "host": result._host.get_name(),
            "delegated": str(delegated) if delegated else "",
            "handler": type(task).__name__ == "Handler",
            "status": status,
            "start": self._started.get(task._uuid, time.time()),
            "end": time.time(),
        }
        with open(self._path, "a", encoding="utf-8") as sink:
            sink.write(json.dumps(line) + "\n")

    def v2_runner_on_ok(self, result: Any) -> None:
        self._log(result, "ok")

    def v2_runner_on_failed(self, result: Any, ignore_errors: bool = False) -> None:
        self._log(result, "failed")

    def v2_runner_on_skipped(self, result: Any) -> None:
        self._log(result, "skipped")
