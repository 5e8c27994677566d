"""The controller side of benchmarks/readiness_soak.py: the test host's container (podman), the
bundle the host runs (build_bundle) and the role applied to it (apply_role), the background
traffic, and the soak itself (soak): every restart run on the host, judged and summed up."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import secrets
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from soak_judge import judge_row, print_summary, summarize
from soak_plan import (
    ALGORITHM,
    BUDGET,
    CONTAINER,
    HOST_MODULE,
    HOST_SCRIPT,
    HOST_SCRIPT_MODULES,
    IMAGE,
    ROOT,
    TOPKS,
    TRAFFIC_STATS,
    TRAFFIC_UNIT,
    WINDOW,
    make_plans,
)


def podman_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("CONTAINERS_CONF", str(ROOT / "tests" / "podman" / "containers.conf"))
    return env


def podman(*args: str, check: bool = True, timeout: float | None = None) -> str:
    proc = subprocess.run(
        ["podman", *args], capture_output=True, text=True, env=podman_env(), timeout=timeout
    )
    if check and proc.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args[:3])}... failed: {proc.stderr.strip()}")
    return proc.stdout


def start_container() -> None:
    if subprocess.run(["podman", "image", "exists", IMAGE], env=podman_env()).returncode != 0:
        print(f"building the test image {IMAGE} (scripts/test-image.sh)", flush=True)
        subprocess.run(["bash", str(ROOT / "scripts" / "test-image.sh")], check=True, cwd=ROOT)
    podman("rm", "-f", "-t", "5", CONTAINER, check=False)
    # CAP_SYS_PTRACE: the module reads /proc/<pid>/fd of the service user to see who owns the port.
    podman("run", "-d", "--name", CONTAINER, "--hostname", CONTAINER, "--cap-add", "SYS_PTRACE",
           "--systemd=always", IMAGE, "/sbin/init")  # fmt: skip
    deadline = time.time() + 90
    state = ""
    while time.time() < deadline:
        state = podman("exec", CONTAINER, "systemctl", "is-system-running", check=False).strip()
        if state in ("running", "degraded"):
            return
        time.sleep(1)
    raise RuntimeError(f"systemd in {CONTAINER} not running after 90 s (state {state!r})")


def build_bundle(path: Path) -> None:
    """The script and its modules, the readiness module, and ansible.module_utils (all the module
    imports) for the host."""
    spec = importlib.util.find_spec("ansible")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "ansible is not importable: run this with the controller's .venv/bin/python"
        )
    module_utils = Path(next(iter(spec.submodule_search_locations))) / "module_utils"

    def no_cache(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        return None if "__pycache__" in info.name else info

    with tarfile.open(path, "w:gz") as tar:
        for name in (HOST_SCRIPT.name, *HOST_SCRIPT_MODULES):
            tar.add(Path(__file__).resolve().with_name(name), arcname=name)
        tar.add(ROOT / "library" / "sglang_ready.py", arcname=HOST_MODULE.name)
        # An empty ansible/__init__.py: the real one pulls in the controller-only packages.
        empty = tarfile.TarInfo("lib/ansible/__init__.py")
        empty.size = 0
        tar.addfile(empty)
        tar.add(module_utils, arcname="lib/ansible/module_utils", filter=no_cache)
        for ours in sorted((ROOT / "module_utils").glob("sglang_*.py")):
            tar.add(ours, arcname=f"lib/ansible/module_utils/{ours.name}", filter=no_cache)


def apply_role(workdir: Path, log_path: Path) -> None:
    inventory = workdir / "hosts.yml"
    inventory.write_text(
        "sglang_soak:\n  hosts:\n"
        f"    {CONTAINER}:\n"
        "      ansible_connection: containers.podman.podman\n"
        "      ansible_python_interpreter: /usr/bin/python3\n"
    )
    bundle = workdir / "soak-bundle.tar.gz"
    build_bundle(bundle)
    extra = workdir / "extra-vars.json"
    fd = os.open(extra, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        # A fresh key per run: the benchmark host is thrown away, nothing to keep in a vault.
        json.dump({"sglang_server_api_key": secrets.token_hex(16), "soak_bundle": str(bundle)}, f)
    playbook = shutil.which("ansible-playbook", path=str(Path(sys.executable).parent)) or (
        "ansible-playbook"
    )
    cmd = [playbook, "-i", str(inventory), "-e", f"@{extra}", "benchmarks/soak_setup.yml"]
    began = time.time()
    with log_path.open("w") as log:
        rc = subprocess.run(cmd, cwd=ROOT, env=podman_env(), stdout=log, stderr=subprocess.STDOUT)
    if rc.returncode != 0:
        tail = log_path.read_text().splitlines()[-40:]
        raise RuntimeError("ansible-playbook failed:\n" + "\n".join(tail))
    print(f"role applied in {time.time() - began:.1f} s (log {log_path})", flush=True)


def host_exec(*args: str, timeout: float | None = None) -> str:
    return podman("exec", CONTAINER, "/usr/bin/python3", str(HOST_SCRIPT), *args, timeout=timeout)


def start_traffic(workers: int, max_tokens: int) -> None:
    podman("exec", CONTAINER, "systemd-run", f"--unit={TRAFFIC_UNIT}", "--collect", "--quiet",
           "/usr/bin/python3", str(HOST_SCRIPT), "host-traffic",
           f"--workers={workers}", f"--max-tokens={max_tokens}")  # fmt: skip


def stop_traffic() -> dict[str, int]:
    podman("exec", CONTAINER, "systemctl", "stop", TRAFFIC_UNIT, check=False)
    raw = podman("exec", CONTAINER, "cat", str(TRAFFIC_STATS), check=False)
    try:
        return dict(json.loads(raw))
    except ValueError:
        return {}


def progress_line(row: dict[str, Any], total: int) -> str:
    plan = row["plan"]

    def part(name: str) -> str:
        m = row[name]
        if m["verdict"] == "error":
            return f"{name} ERROR"
        flag = "ok" if m["verdict"] == "true_ready" else "FALSE " + ",".join(m["reasons"])
        return f"{name} {m['lag_s']:+7.3f} s {flag}"

    return (
        f"[{plan['seq'] + 1:3d}/{total}] load {plan['load_s']:.2f} warm {plan['warmup_s']:.2f} "
        f"old-drain {row['old_drain_s']:.2f} topk {plan['topk']} | {part('ours')} | "
        f"{part('naive')}"
    )


def soak(args: argparse.Namespace) -> int:
    out = Path(args.out) if args.out else (
        ROOT / "results" / "soak" / f"readiness-soak-{time.strftime('%Y%m%d-%H%M%S')}.json"
    )  # fmt: skip
    out.parent.mkdir(parents=True, exist_ok=True)
    plans = make_plans(args.restarts, args.seed, args.module_timeout, args.naive_interval)
    rows: list[dict[str, Any]] = []
    traffic: dict[str, int] = {}
    began = time.time()
    try:
        if not args.skip_setup:
            print(f"starting {CONTAINER} from {IMAGE}", flush=True)
            start_container()
            with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
                apply_role(Path(tmp), out.with_suffix(".setup.log"))
        if args.traffic_workers > 0:
            start_traffic(args.traffic_workers, args.traffic_tokens)
        old_drain = 2.0  # the playbook's SGLANG_EMU_DRAIN_SECONDS
        for plan in plans:
            raw = host_exec("host-restart", json.dumps(dataclasses.asdict(plan)),
                            timeout=2 * plan.module_timeout + 120)  # fmt: skip
            row = json.loads(raw.strip().splitlines()[-1])
            row["old_drain_s"] = old_drain
            old_drain = plan.drain_s
            judge_row(row)
            rows.append(row)
            print(progress_line(row, len(plans)), flush=True)
        if args.traffic_workers > 0:
            traffic = stop_traffic()
    finally:
        if not args.keep_container and not args.skip_setup:
            podman("rm", "-f", "-t", "5", CONTAINER, check=False)
    summary = summarize(rows)
    summary["wall_s"] = round(time.time() - began, 1)
    record = {
        "command": [Path(sys.argv[0]).name, *sys.argv[1:]],
        "seed": args.seed,
        "naive_interval_s": args.naive_interval,
        "server": {"algorithm": ALGORITHM, "budget": BUDGET, "window": WINDOW, "topks": TOPKS},
        "summary": summary,
        "traffic": traffic,
        "rows": rows,
    }
    out.write_text(json.dumps(record, indent=1) + "\n")
    print_summary(summary, traffic)
    print(f"wall time {summary['wall_s']} s; rows written to {out}")
    ours = summary["ours"]
    if ours["false_ready"] or ours["errors"]:
        print(
            f"FAIL: sglang_ready had {ours['false_ready']} false-ready and {ours['errors']} errors",
            file=sys.stderr,
        )
        return 1
    return 0
