"""Readiness soak: N restarts of the emulated SGLang server under real systemd, each judged against
the new process's own "ready" journal line, for two readiness methods:

  ours   library/sglang_ready.py run standalone on the host (previous PID/invocation, unit,
         expect, expect_env with the new topk, require_speculation, API key);
  naive  poll GET /v1/models every --naive-interval s after the restart; the first 200 is ready.

Both methods watch the SAME restart, started together right after `systemctl restart --no-block`:
every restart gives a paired observation under identical load/drain/warm-up draws, and the run is
half as long as alternating. Neither method changes anything (the module only reads and sends one
8-token probe, the naive one only reads), so they do not disturb each other.

Ground truth per restart: the "The server is fired up and ready to roll!" journal line whose
_SYSTEMD_INVOCATION_ID is the unit's new InvocationID (its __REALTIME_TIMESTAMP and _PID). A method
is false-ready when it returns before that timestamp, with a main PID other than the one that
logged the line (or the previous one), or with a server whose SGLANG_DDTREE_MAX_TOPK is not the
requested one. The topk is an environment variable only (no /server_info field; the module checks
it with expect_env), read here from /proc/PID/environ of the process a method ended on: the
module's environ_pid (the port owner), the main PID the naive method saw. Lag = method return
time minus ready line time, both read on the host's clock.

Each restart draws (seeded) load, warm-up and drain times and alternates SGLANG_DDTREE_MAX_TOPK,
all through the drop-in /etc/systemd/system/sglang.service.d/soak.conf; a drawn drain applies to the
NEXT restart (it is the stopping process's setting). A background streaming /generate loop with
the API key keeps the old process busy while it drains.

The file is stdlib-only: the controller copies it to the host, where the `host-restart` and
`host-traffic` subcommands run.

    .venv/bin/python benchmarks/readiness_soak.py [--restarts 30] [--seed 1] [--out FILE]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import dataclasses
import importlib.util
import json
import os
import random
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CONTAINER = "sglang-soak"
IMAGE = os.environ.get("TESTHOST_IMAGE", "localhost/sglang-testhost:bookworm")
UNIT = "sglang.service"
URL = "http://127.0.0.1:30000"
ENV_FILE = "/etc/sglang/sglang.env"
DROPIN = Path("/etc/systemd/system/sglang.service.d/soak.conf")
HOST_DIR = Path("/opt/soak")
HOST_SCRIPT = HOST_DIR / "readiness_soak.py"
HOST_MODULE = HOST_DIR / "sglang_ready.py"
HOST_LIB = HOST_DIR / "lib"
HOST_RUN = HOST_DIR / "run"
TRAFFIC_STATS = HOST_DIR / "traffic.json"
TRAFFIC_UNIT = "soak-traffic"
READY_LINE = "The server is fired up and ready to roll!"
# Fixed server configuration (benchmarks/soak_setup.yml); only the topk alternates.
ALGORITHM = "DDTREE"
BUDGET = 32
WINDOW = 1024
INITIAL_TOPK = 6
TOPKS = (4, 8)
TOPK_ENV = "SGLANG_DDTREE_MAX_TOPK"  # the DDTree fork reads topk from its environment only


# ---------------------------------------------------------------------------------------------
# Shared by both sides
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RestartPlan:
    seq: int
    load_s: float
    warmup_s: float
    drain_s: float  # written now; the process started by THIS restart drains this long
    topk: int
    module_timeout: int
    naive_interval: float

    def expect(self) -> dict[str, Any]:
        return {
            "speculative_algorithm": ALGORITHM,
            "speculative_ddtree_budget": BUDGET,
            "speculative_draft_window_size": WINDOW,
        }

    def expect_env(self) -> dict[str, str]:
        return {TOPK_ENV: str(self.topk)}


def make_plans(n: int, seed: int, module_timeout: int, naive_interval: float) -> list[RestartPlan]:
    rng = random.Random(seed)
    return [
        RestartPlan(
            seq=i,
            load_s=round(rng.uniform(1.0, 5.0), 2),
            warmup_s=round(rng.uniform(0.5, 2.0), 2),
            drain_s=round(rng.uniform(0.5, 4.0), 2),
            topk=TOPKS[i % len(TOPKS)],
            module_timeout=module_timeout,
            naive_interval=naive_interval,
        )
        for i in range(n)
    ]


# ---------------------------------------------------------------------------------------------
# Host side (stdlib only, runs as root inside the test host)
# ---------------------------------------------------------------------------------------------

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http_call(
    path: str, key: str, body: dict[str, Any] | None = None, timeout: float = 2.0
) -> tuple[int, bytes]:
    """One request; HTTP errors are returned as their status, connection errors raise OSError."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(URL + path, data=data, method="POST" if data else "GET")
    req.add_header("Authorization", f"Bearer {key}")
    if data:
        req.add_header("Content-Type", "application/json")
    try:
        with _OPENER.open(req, timeout=timeout) as resp:
            return int(resp.status), resp.read()
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read()


def read_api_key() -> str:
    for line in Path(ENV_FILE).read_text().splitlines():
        if line.startswith("SGLANG_API_KEY="):
            return line.split("=", 1)[1].strip()
    raise SystemExit(f"no SGLANG_API_KEY in {ENV_FILE}")


def environ_topk(pid: int | None) -> int | None:
    """TOPK_ENV in the environment the process was started with; None when unset or gone."""
    if not pid:
        return None
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    for entry in raw.split(b"\0"):
        name, _, value = entry.partition(b"=")
        if name.decode(errors="replace") == TOPK_ENV:
            with contextlib.suppress(ValueError):
                return int(value)
            return None
    return None


def systemctl_show(unit: str) -> dict[str, str]:
    out = subprocess.run(
        ["systemctl", "show", unit, "-p", "MainPID", "-p", "InvocationID", "-p", "NRestarts"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def write_dropin(plan: RestartPlan) -> None:
    DROPIN.parent.mkdir(parents=True, exist_ok=True)
    text = (
        f"# benchmarks/readiness_soak.py, restart {plan.seq}\n[Service]\n"
        f"Environment=SGLANG_EMU_LOAD_SECONDS={plan.load_s}\n"
        f"Environment=SGLANG_EMU_WARMUP_SECONDS={plan.warmup_s}\n"
        f"Environment=SGLANG_EMU_DRAIN_SECONDS={plan.drain_s}\n"
        f"Environment=SGLANG_DDTREE_MAX_TOPK={plan.topk}\n"
    )
    tmp = DROPIN.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(DROPIN)
    subprocess.run(["systemctl", "daemon-reload"], check=True)


def run_module(plan: RestartPlan, key: str, before: dict[str, str]) -> dict[str, Any]:
    """Method A: the readiness module, exactly as Ansible would run it, timed at its exit."""
    args = {
        "url": URL,
        "api_key": key,
        "unit": UNIT,
        "previous_pid": int(before["MainPID"]),
        "previous_invocation": before["InvocationID"],
        "expect": plan.expect(),
        "expect_env": plan.expect_env(),
        "timeout": plan.module_timeout,
        "require_speculation": True,
    }
    HOST_RUN.mkdir(mode=0o700, exist_ok=True)
    args_file = HOST_RUN / f"args-{plan.seq}.json"
    fd = os.open(args_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"ANSIBLE_MODULE_ARGS": args}, f)
    env = {**os.environ, "PYTHONPATH": str(HOST_LIB)}
    try:
        proc = subprocess.run(
            [sys.executable, str(HOST_MODULE), str(args_file)],
            capture_output=True,
            text=True,
            env=env,
            timeout=plan.module_timeout + 60,
        )
        t_return = time.time()
    finally:
        args_file.unlink(missing_ok=True)
    try:
        result = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        result = {"failed": True, "msg": f"rc={proc.returncode}: {proc.stderr[-2000:]}"}
    ok = proc.returncode == 0 and not result.get("failed")
    info = result.get("server_info") or {}
    return {
        "ok": ok,
        "t_return": t_return,
        "pid": result.get("pid"),
        "invocation": result.get("invocation_id"),
        "environ_pid": result.get("environ_pid"),
        "topk_seen": environ_topk(result.get("environ_pid") or result.get("pid")),
        "verified": result.get("verified"),
        "server_info": info,
        "phases": result.get("phases"),
        "elapsed": result.get("elapsed"),
        "probe": result.get("probe"),
        "error": None if ok else result.get("msg"),
    }


def run_naive(plan: RestartPlan, key: str) -> dict[str, Any]:
    """Method B: the first 200 from /v1/models is 'ready'. What it then sees is recorded."""
    started = time.time()
    polls = 0
    while time.time() - started < plan.module_timeout:
        polls += 1
        try:
            status, _ = http_call("/v1/models", key)
        except OSError:
            status = 0
        if status == 200:
            t_return = time.time()
            main_pid = int(systemctl_show(UNIT)["MainPID"])
            return {
                "ok": True,
                "t_return": t_return,
                "pid": main_pid,
                "topk_seen": environ_topk(main_pid),
                "polls": polls,
                "error": None,
            }
        time.sleep(plan.naive_interval)
    return {"ok": False, "t_return": time.time(), "pid": None, "topk_seen": None,
            "polls": polls, "error": "no 200 from /v1/models"}  # fmt: skip


def journal_message(entry: dict[str, Any]) -> str:
    msg = entry.get("MESSAGE", "")
    if isinstance(msg, list):  # journalctl -o json writes non-UTF-8 messages as byte arrays
        return bytes(msg).decode("utf-8", "replace")
    return str(msg)


def find_ready_line(invocation: str, since: float, wait_s: float) -> dict[str, Any] | None:
    """The ready line of this invocation (the ground truth), waiting briefly for journald."""
    deadline = time.time() + wait_s
    while True:
        out = subprocess.run(
            ["journalctl", "-u", UNIT, "-o", "json", "--no-pager", f"--since=@{int(since) - 1}"],
            capture_output=True,
            text=True,
        ).stdout
        for raw in out.splitlines():
            entry = json.loads(raw)
            if READY_LINE not in journal_message(entry):
                continue
            if entry.get("_SYSTEMD_INVOCATION_ID") == invocation:
                return {
                    "t": int(entry["__REALTIME_TIMESTAMP"]) / 1e6,
                    "pid": int(entry.get("_PID", 0)),
                    "invocation": invocation,
                }
        if time.time() >= deadline:
            return None
        time.sleep(0.2)


def host_restart(plan: RestartPlan) -> dict[str, Any]:
    key = read_api_key()
    write_dropin(plan)
    before = systemctl_show(UNIT)
    # Deliberate restarts count against StartLimitBurst too (the role's handler does the same).
    subprocess.run(["systemctl", "reset-failed", UNIT], check=False)
    t_restart = time.time()
    subprocess.run(["systemctl", "restart", "--no-block", UNIT], check=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        ours_f = pool.submit(run_module, plan, key, before)
        naive_f = pool.submit(run_naive, plan, key)
        ours, naive = ours_f.result(), naive_f.result()
    after = systemctl_show(UNIT)
    truth = find_ready_line(after["InvocationID"], t_restart, wait_s=10.0)
    return {
        "plan": dataclasses.asdict(plan),
        "t_restart": t_restart,
        "before": {"pid": int(before["MainPID"]), "invocation": before["InvocationID"]},
        "after": {
            "pid": int(after["MainPID"]),
            "invocation": after["InvocationID"],
            "n_restarts": int(after.get("NRestarts") or 0),
        },
        "truth": truth,
        "ours": ours,
        "naive": naive,
    }


def host_traffic(workers: int, max_tokens: int) -> None:
    """Streaming /generate requests back to back until SIGTERM; counts outcomes."""
    key = read_api_key()
    stop = threading.Event()
    counts: dict[str, int] = {}
    lock = threading.Lock()

    def bump(what: str) -> None:
        with lock:
            counts[what] = counts.get(what, 0) + 1

    def worker(n: int) -> None:
        rng = random.Random(n)
        while not stop.is_set():
            body = {
                "text": "def quicksort(items):",
                "stream": True,
                "sampling_params": {"max_new_tokens": rng.randint(max_tokens // 4, max_tokens)},
            }
            req = urllib.request.Request(URL + "/generate", data=json.dumps(body).encode())
            req.add_header("Authorization", f"Bearer {key}")
            req.add_header("Content-Type", "application/json")
            chunks = 0
            try:
                with _OPENER.open(req, timeout=30) as resp:
                    for line in resp:
                        if line.startswith(b"data: [DONE]"):
                            bump("completed")
                            break
                        chunks += line.startswith(b"data: ")
                    else:
                        bump("cut_mid_stream" if chunks else "empty")
            except urllib.error.HTTPError as exc:
                bump(f"http_{exc.code}")
                time.sleep(0.2)
            except (OSError, ValueError) as exc:
                reason = getattr(exc, "reason", exc)
                bump("refused" if isinstance(reason, ConnectionRefusedError) else "broken")
                time.sleep(0.2)

    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    for n in range(workers):
        threading.Thread(target=worker, args=(n,), daemon=True).start()
    while not stop.wait(1.0):
        with lock:
            TRAFFIC_STATS.write_text(json.dumps(counts))
    with lock:
        TRAFFIC_STATS.write_text(json.dumps(counts))


# ---------------------------------------------------------------------------------------------
# Judging and summary (controller side, pure)
# ---------------------------------------------------------------------------------------------


def false_ready_reasons(method: dict[str, Any], row: dict[str, Any]) -> list[str]:
    """Why a method's 'ready' was a lie; [] when it was true. Assumes the method answered."""
    truth, plan = row["truth"], row["plan"]
    reasons = []
    if method["t_return"] < truth["t"]:
        reasons.append("before_ready_line")
    if method["pid"] == row["before"]["pid"]:
        reasons.append("old_main_pid")
    elif method["pid"] != truth["pid"]:
        reasons.append("other_main_pid")
    if method["topk_seen"] is not None and method["topk_seen"] != plan["topk"]:
        reasons.append("old_config")
    return reasons


def judge_row(row: dict[str, Any]) -> None:
    for name in ("ours", "naive"):
        method = row[name]
        if not method["ok"] or row.get("truth") is None:
            method["verdict"], method["reasons"], method["lag_s"] = "error", [], None
            continue
        method["reasons"] = false_ready_reasons(method, row)
        method["verdict"] = "false_ready" if method["reasons"] else "true_ready"
        method["lag_s"] = round(method["t_return"] - row["truth"]["t"], 4)


def percentile(values: list[float], pct: int) -> float:
    """Linear interpolation between closest ranks (statistics.quantiles, inclusive)."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[pct - 1]


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"restarts": len(rows)}
    for name in ("ours", "naive"):
        verdicts = [r[name]["verdict"] for r in rows]
        true_lags = [r[name]["lag_s"] for r in rows if r[name]["verdict"] == "true_ready"]
        false_lags = [r[name]["lag_s"] for r in rows if r[name]["verdict"] == "false_ready"]
        reasons: dict[str, int] = {}
        for r in rows:
            for reason in r[name]["reasons"]:
                reasons[reason] = reasons.get(reason, 0) + 1
        out[name] = {
            "true_ready": verdicts.count("true_ready"),
            "false_ready": verdicts.count("false_ready"),
            "errors": verdicts.count("error"),
            "false_ready_reasons": reasons,
            "lag_true_ready_s": {
                "n": len(true_lags),
                "median": round(statistics.median(true_lags), 4) if true_lags else None,
                "p95": round(percentile(true_lags, 95), 4) if true_lags else None,
                "max": round(max(true_lags), 4) if true_lags else None,
            },
            "lag_false_ready_s": {
                "n": len(false_lags),
                "median": round(statistics.median(false_lags), 4) if false_lags else None,
                "min": round(min(false_lags), 4) if false_lags else None,
            },
        }
    return out


def fmt_s(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f} s"


def print_summary(summary: dict[str, Any], traffic: dict[str, int]) -> None:
    print(f"\nrestarts: {summary['restarts']}")
    for name, label in (("ours", "ours (sglang_ready)"), ("naive", "naive (/v1/models)")):
        s = summary[name]
        lag, early = s["lag_true_ready_s"], s["lag_false_ready_s"]
        print(
            f"{label:22} false-ready {s['false_ready']:3d}  true-ready {s['true_ready']:3d}  "
            f"errors {s['errors']:3d}  reasons {s['false_ready_reasons'] or '-'}"
        )
        print(
            f"{'':22} lag (true-ready, n={lag['n']}): median {fmt_s(lag['median'])}, "
            f"p95 {fmt_s(lag['p95'])}, max {fmt_s(lag['max'])}"
        )
        if early["n"]:
            print(
                f"{'':22} false-ready answers came {fmt_s(early['median'])} (median) relative "
                f"to the ready line, earliest {fmt_s(early['min'])}"
            )
    print(f"background /generate streams: {traffic or 'no figures'}")


# ---------------------------------------------------------------------------------------------
# Controller side
# ---------------------------------------------------------------------------------------------


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
    """This script, the module, and ansible.module_utils (all the module imports) for the host."""
    spec = importlib.util.find_spec("ansible")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "ansible is not importable: run this with the controller's .venv/bin/python"
        )
    module_utils = Path(next(iter(spec.submodule_search_locations))) / "module_utils"

    def no_cache(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        return None if "__pycache__" in info.name else info

    with tarfile.open(path, "w:gz") as tar:
        tar.add(Path(__file__).resolve(), arcname=HOST_SCRIPT.name)
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


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    sub = parser.add_subparsers(dest="command")
    parser.add_argument("--restarts", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", help="JSON with every row (default results/soak/...)")
    parser.add_argument("--naive-interval", type=float, default=0.2, help="seconds between polls")
    parser.add_argument("--module-timeout", type=int, default=120)
    parser.add_argument("--traffic-workers", type=int, default=2, help="0 = no traffic")
    parser.add_argument("--traffic-tokens", type=int, default=256)
    parser.add_argument("--keep-container", action="store_true", help="leave sglang-soak up")
    parser.add_argument(
        "--skip-setup", action="store_true", help="reuse a running sglang-soak as it is"
    )
    restart = sub.add_parser(
        "host-restart", help="(on the host) one restart, one JSON row", allow_abbrev=False
    )
    restart.add_argument("plan")
    traffic = sub.add_parser(
        "host-traffic", help="(on the host) streaming load until SIGTERM", allow_abbrev=False
    )
    traffic.add_argument("--workers", type=int, default=2)
    traffic.add_argument("--max-tokens", type=int, default=256)
    args = parser.parse_args(argv)
    if args.command == "host-restart":
        print(json.dumps(host_restart(RestartPlan(**json.loads(args.plan)))))
        return 0
    if args.command == "host-traffic":
        host_traffic(args.workers, args.max_tokens)
        return 0
    if args.restarts < 1:
        parser.error("--restarts must be >= 1")
    return soak(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
