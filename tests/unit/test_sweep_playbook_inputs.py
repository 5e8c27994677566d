"""sweep.yml refuses bad traffic parameters before any host is contacted: its first play (the
controller's `sweep check`) names the bad value, and the playbook ends there. The inventory's
host is unreachable on purpose: had any play reached for it, the output would say so. (An
unreadable file's message is tested in test_sweep_workload.py: CI runs as root, who reads any.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
HOST = "never-contacted"


def inventory(tmp: Path, **more: Any) -> Path:
    path = tmp / "hosts.yml"
    host = {
        "ansible_host": "192.0.2.1",  # TEST-NET-1: nothing answers there
        "ansible_ssh_common_args": "-o ConnectTimeout=1",
        "sglang_server_dialect": "ddtree",
        "sglang_server_speculative_algorithm": "DDTREE",
        "sglang_bench_contexts": [512],
        "sglang_bench_concurrency": [1],
        **more,
    }
    path.write_text(json.dumps({"all": {"children": {"sglang_servers": {"hosts": {HOST: host}}}}}))
    return path


def sweep(
    tmp: Path, extra: dict[str, Any], host: dict[str, Any] | None = None
) -> subprocess.CompletedProcess[str]:
    ansible = str(Path(sys.executable).parent / "ansible-playbook")  # the venv's
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_CALLBACK_RESULT_FORMAT": "json"}
    args = [ansible, "-i", str(inventory(tmp, **(host or {}))), str(ROOT / "sweep.yml")]
    args += ["-e", json.dumps({"results_dir": str(tmp / "results"), "budget": 8, **extra})]
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def chat(text: str) -> str:
    return json.dumps({"messages": [{"role": "user", "content": text}]})


CASES: dict[str, tuple[Any, dict[str, Any], str]] = {
    # name: (file lines or None, extra vars ({file} is the dataset's path), the message)
    "missing": (None, {"dataset": "{dir}/nope.jsonl"}, "nope.jsonl: no such file"),
    "empty": ([], {}, "empty"),
    "malformed line": ([chat("ok"), '{"messages": [', chat("ok")], {}, "line 2"),
    "unknown format": ([chat("ok")], {"dataset_format": "csv"}, "csv"),
    "not role/content": ([json.dumps({"messages": [{"text": "hi"}]})], {}, "line 1"),
    "too short": ([chat("short?")], {"contexts": "4096"}, "no request of the dataset is long"),
    "sample too big": ([chat("a?"), chat("b?")], {"dataset_sample": 3}, "dataset_sample=3"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_traffic_is_named_and_no_host_is_contacted(tmp_path: Path, case: str) -> None:
    lines, extra, says = CASES[case]
    extra = dict(extra)
    data = tmp_path / "traffic.jsonl"
    if lines is not None:
        data.write_text("".join(line + "\n" for line in lines))
    extra = {"dataset": str(data), **{k: str(v).format(dir=tmp_path) for k, v in extra.items()}}
    run = sweep(tmp_path, extra)
    out = run.stdout + run.stderr
    assert run.returncode != 0, out[-2000:]
    assert says.lower() in out.lower(), out[-2000:]
    # the check ran on the controller for the play (`[host -> localhost]`); nothing reached the host
    assert f"[{HOST}]" not in out and "UNREACHABLE" not in out, out[-2000:]
    assert "sglang_server : " not in out  # the hosts' checks never started
    assert not (tmp_path / "results").exists() or not [
        p for p in (tmp_path / "results").iterdir() if p.name != ".workloads"
    ]


def test_good_traffic_passes_the_check_and_goes_on_to_the_hosts(tmp_path: Path) -> None:
    data = tmp_path / "traffic.jsonl"
    data.write_text(chat("a question long enough to be a real request") + "\n")
    run = sweep(tmp_path, {"dataset": str(data)})
    out = run.stdout + run.stderr
    assert "dataset: 1 of 1 requests (chat; sources dataset; 0 skipped)" in out, out[-2000:]
    assert "UNREACHABLE" in out  # and then the unreachable host fails its check
    assert run.returncode != 0


LOAD_CASES: dict[str, tuple[dict[str, Any], str]] = {
    "rate 0": ({"request_rate": "2,0"}, "request_rate must be a positive number, got 0.0"),
    "negative rate": ({"request_rate": "-1"}, "request_rate must be a positive number, got -1.0"),
    "burstiness 0": (
        {"request_rate": "2", "burstiness": 0},
        "burstiness must be a positive number",
    ),
    "SLO without capacity or goodput": (
        {"slo_tpot_ms": 50},
        "an SLO is used only by load=capacity",
    ),
    "capacity without an SLO": ({"load": "capacity"}, "a capacity search needs an SLO"),
    "unbracketable bound": (
        {"load": "capacity", "slo_tpot_ms": 50, "capacity_max_trials": 1},
        "capacity_max_trials 1 cannot bracket a capacity",
    ),
    "unknown load": ({"load": "open"}, "load=open: choose one of closed, capacity"),
    "capacity objective without capacity": ({"objective": "capacity"}, "give load=capacity"),
}


@pytest.mark.parametrize("case", list(LOAD_CASES))
def test_bad_load_is_named_and_no_host_is_contacted(tmp_path: Path, case: str) -> None:
    extra, says = LOAD_CASES[case]
    run = sweep(tmp_path, extra)
    out = run.stdout + run.stderr
    assert run.returncode != 0, out[-2000:]
    assert says.lower() in out.lower(), out[-2000:]
    assert f"[{HOST}]" not in out and "UNREACHABLE" not in out, out[-2000:]
    assert "sglang_server : " not in out
    assert not (tmp_path / "results").exists()


RETIRED_CASES: dict[str, tuple[dict[str, Any], str]] = {
    "search=halving": ({"search": "halving"}, "search=halving was retired"),
    "search=descent": ({"search": "descent"}, "search=descent was retired"),
    # the playbook passes a retired search's settings on (vars/sweep_inputs.yml), not ignores them
    "halving_run_on": (
        {"search": "model", "halving_run_on": True},
        "halving_run_on=True: a setting of search=halving, which was retired",
    ),
}


@pytest.mark.parametrize("case", list(RETIRED_CASES))
def test_a_retired_search_is_refused_by_name_and_no_host_is_contacted(
    tmp_path: Path, case: str
) -> None:
    extra, says = RETIRED_CASES[case]
    run = sweep(tmp_path, {"budget": "8,16", **extra})
    out = run.stdout + run.stderr
    assert run.returncode != 0, out[-2000:]
    assert says in out and "Use search=model" in out, out[-2000:]
    assert f"[{HOST}]" not in out and "UNREACHABLE" not in out, out[-2000:]
    assert "sglang_server : " not in out
    assert not (tmp_path / "results").exists()


# Ansible ignores an extra var nothing reads: a typo, or the other playbook's name (deploy.yml's
# context), would run the inventory's grid or cell instead of the one asked for.
@pytest.mark.parametrize(("name", "meant"), [("budgte", "budget"), ("context", "contexts")])
def test_a_name_that_is_no_parameter_is_refused_and_no_host_is_contacted(
    tmp_path: Path, name: str, meant: str
) -> None:
    run = sweep(tmp_path, {name: "8"})
    out = run.stdout + run.stderr
    assert run.returncode != 0, out[-2000:]
    says = f"-e {name}: not a parameter of this playbook (did you mean {meant}?)"
    assert says in out, out[-2000:]
    assert f"[{HOST}]" not in out and "UNREACHABLE" not in out, out[-2000:]
    assert not (tmp_path / "results").exists()


# The role's variables are its options (meta/argument_specs.yml): one misspelt in the inventory,
# or given with -e (the playbook lets sglang_* names through to the roles), would change nothing.
@pytest.mark.parametrize("where", ["inventory", "extra vars"])
def test_a_role_variable_that_is_no_option_fails_the_hosts_check_before_any_contact(
    tmp_path: Path, where: str
) -> None:
    typo = {"sglang_server_windw": 4096}
    inv = where == "inventory"
    run = sweep(tmp_path, {} if inv else typo, typo if inv else {})
    out = run.stdout + run.stderr
    assert run.returncode != 0, out[-2000:]
    says = "sglang_server_windw (did you mean sglang_server_window?): not an option of role"
    assert says in out, out[-2000:]
    # the first of the host's checks, run on the controller
    assert "UNREACHABLE" not in out, out[-2000:]


@pytest.mark.parametrize(
    ("typo", "meant"),
    [("sglang_sweep_gird", "sglang_sweep_grid"), ("sglang_bench_context", "sglang_bench_contexts")],
)
def test_a_sweep_or_bench_setting_that_is_none_is_refused_and_no_host_is_contacted(
    tmp_path: Path, typo: str, meant: str
) -> None:
    run = sweep(tmp_path, {}, {typo: [512]})
    out = run.stdout + run.stderr
    assert run.returncode != 0, out[-2000:]
    says = f"{HOST}: {typo} (did you mean {meant}?): no setting of this playbook or its roles"
    assert says in out, out[-2000:]
    assert f"[{HOST}]" not in out and "UNREACHABLE" not in out, out[-2000:]


DEPLOY_CASES: dict[str, tuple[dict[str, Any], str]] = {
    "a typo": (
        {"concurency": 8},
        "-e concurency: not a parameter of this playbook (did you mean concurrency?)",
    ),
    # Ansible's serial takes 0 (and a percentage through | int) as every host at once
    "no canary": ({"deploy_canary": 0}, "deploy_canary=0: give a whole number of hosts, 1 or more"),
    "a share": ({"deploy_serial": "25%"}, "deploy_serial=25%: give a whole number of hosts"),
    "not a boolean": ({"deploy_unmeasured": "maybe"}, "deploy_unmeasured=maybe: not a boolean"),
}


def deploy(
    tmp: Path, extra: dict[str, Any], host: dict[str, Any] | None = None
) -> subprocess.CompletedProcess[str]:
    ansible = str(Path(sys.executable).parent / "ansible-playbook")
    env = {**os.environ, "ANSIBLE_NOCOLOR": "1"}
    given = {"sweep": str(tmp / "nosweep"), "context": 512, "concurrency": 8, **extra}
    args = [ansible, "-i", str(inventory(tmp, **(host or {}))), str(ROOT / "deploy.yml"), "-e"]
    return subprocess.run(
        [*args, json.dumps(given)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("case", list(DEPLOY_CASES))
def test_deploy_refuses_a_bad_parameter_before_it_reads_the_sweep(
    tmp_path: Path, case: str
) -> None:
    extra, says = DEPLOY_CASES[case]
    run = deploy(tmp_path, extra)
    out = run.stdout + run.stderr
    assert run.returncode != 0, out[-2000:]
    assert says in out, out[-2000:]
    # refused before the sweep is read (the sweep named does not exist either)
    assert "no sweep there" not in out and "UNREACHABLE" not in out, out[-2000:]


# The canary's bench reads the fleet's sglang_bench_* variables: a misspelt one would leave the
# default in force on the canary's verification run, as it would have in a sweep.
def test_deploy_names_a_bench_setting_of_the_fleet_that_is_none_before_it_reads_the_sweep(
    tmp_path: Path,
) -> None:
    run = deploy(tmp_path, {}, {"sglang_bench_request_timout": 600})
    out = run.stdout + run.stderr
    assert run.returncode != 0, out[-2000:]
    says = (
        f"{HOST}: sglang_bench_request_timout (did you mean sglang_bench_request_timeout?): no"
        " setting of this playbook or its roles"
    )
    assert says in out, out[-2000:]
    assert "no sweep there" not in out and "UNREACHABLE" not in out, out[-2000:]
