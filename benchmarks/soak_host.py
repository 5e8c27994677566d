"""The host side of benchmarks/readiness_soak.py (stdlib only, runs as root inside the test
host): one restart (host_restart), timed by both readiness methods at once (run_module, the
readiness module; run_naive, the first 200 from /v1/models) against the new process's ready
line in the journal (find_ready_line), and the background streaming load (host_traffic)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from soak_plan import (
    DROPIN,
    ENV_FILE,
    HOST_LIB,
    HOST_MODULE,
    HOST_RUN,
    READY_LINE,
    TOPK_ENV,
    TRAFFIC_STATS,
    UNIT,
    URL,
    RestartPlan,
)

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
