"""playbooks/action_plugins/sweep_cli.py: `python -m sweep` run inside Ansible's worker answers as
the command did (rc, stdout, the error's own line), skips what writes in check mode, and survives
argparse's exits. Run through a real ansible-playbook on localhost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def play(tmp: Path, tasks: list[dict[str, Any]], *flags: str) -> list[dict[str, Any]]:
    """Runs the tasks on localhost; returns each task's result (the json callback's)."""
    book = tmp / "play.yml"
    book.write_text(json.dumps([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]))
    env = {
        **os.environ,
        "ANSIBLE_ACTION_PLUGINS": str(ROOT / "playbooks" / "action_plugins"),
        "ANSIBLE_COLLECTIONS_PATH": str(ROOT / "collections"),  # ansible.posix's json callback
        "ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0",
    }
    ansible = str(Path(sys.executable).parent / "ansible-playbook")  # the venv's
    run = subprocess.run(
        [ansible, "-i", "localhost,", "-c", "local", str(book), *flags],
        cwd=tmp,  # not the project: the plugin must find sweep/ by itself
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = json.loads(run.stdout)
    return [task["hosts"]["localhost"] for task in out["plays"][0]["tasks"]]


def test_it_answers_as_the_command_does_and_records(tmp_path: Path) -> None:
    entry = {"event": "deployed", "host": "h1", "point": "ddtree-b8-k4-w2048"}
    tasks = [{"sweep_cli": {"argv": ["deployed", str(tmp_path)], "stdin": json.dumps(entry)}}]
    (result,) = play(tmp_path, tasks)
    assert result["rc"] == 0 and result["changed"] is True, result
    line = json.loads((tmp_path / "deployments.jsonl").read_text())
    assert {k: line[k] for k in entry} == entry


def test_check_mode_skips_what_writes_and_runs_what_reads(tmp_path: Path) -> None:
    tasks = [
        {"sweep_cli": {"argv": ["deployed", str(tmp_path)], "stdin": "{}"}},
        {
            "sweep_cli": {"argv": ["check"], "stdin": json.dumps({"cli": {"budget": "x"}})},
            "ignore_errors": True,
        },
    ]
    wrote, checked = play(tmp_path, tasks, "--check")
    assert wrote.get("skipped") is True, wrote
    assert not (tmp_path / "deployments.jsonl").exists()
    # check is read-only: it ran, and refused the bad budget by name
    assert checked["rc"] == 2 and "bad sweep input" in checked["msg"], checked
    assert "budget=x" in checked["msg"], checked


def test_an_error_is_its_own_line_and_argparse_cannot_end_the_worker(tmp_path: Path) -> None:
    tasks = [
        {"sweep_cli": {"argv": ["no-such-command"]}, "ignore_errors": True},
        {"sweep_cli": {"argv": ["next", str(tmp_path / "nowhere"), "h1"]}, "ignore_errors": True},
        {"ansible.builtin.debug": {"msg": "still here"}},
    ]
    bad_word, no_sweep, after = play(tmp_path, tasks)
    assert bad_word["failed"] and bad_word["rc"] == 2, bad_word
    assert "invalid choice: 'no-such-command'" in bad_word["msg"], bad_word
    assert no_sweep["failed"] and no_sweep["rc"] != 0, no_sweep
    assert no_sweep["msg"].startswith("sweep: ") and "nowhere" in no_sweep["msg"], no_sweep
    assert after["msg"] == "still here"


def test_a_name_given_with_e_that_is_no_parameter_fails_before_the_command(
    tmp_path: Path,
) -> None:
    check = {"argv": ["check"], "stdin": json.dumps({"cli": {"budget": "8"}, "host": {}})}
    named = {**check, "parameters": ["budget", "topk", "contexts"]}
    tasks = [
        {"sweep_cli": named, "ignore_errors": True},
        # without `parameters` the action takes any name, as before
        {"sweep_cli": check, "ignore_errors": True},
    ]
    typo, plain = play(tmp_path, tasks, "-e", "budgte=8", "-e", '{"context": 512}')
    assert typo["failed"] and "rc" not in typo, typo  # the command did not run
    # the first name in order, its likely meaning, and where the parameters are listed
    assert typo["msg"].startswith("-e budgte: not a parameter of this playbook"), typo
    assert "(did you mean budget?)" in typo["msg"] and "docs/parameters.md" in typo["msg"], typo
    assert plain["rc"] == 0, plain
    # a parameter, an inventory variable (sglang_*) and Ansible's own (ansible_*) pass
    given = ["-e", "topk=2", "-e", "sglang_server_port=30001", "-e", "ansible_user=root"]
    (ok,) = play(tmp_path, [{"sweep_cli": named}], *given)
    assert ok["rc"] == 0, ok
    (other,) = play(tmp_path, [{"sweep_cli": named, "ignore_errors": True}], "-e", "zzz=1")
    assert other["failed"] and other["msg"].startswith("-e zzz: not a parameter"), other
    assert "did you mean" not in other["msg"], other
