"""Continuous streaming traffic and a naive readiness poll across a restart (real-sglang race part).

Runs on the test host with the system python3 (stdlib only). WORKERS threads keep a streaming
/generate in flight each; they stop starting new ones STOP_AFTER seconds after the unit started
deactivating (real SGLang keeps accepting requests while it drains, so endless traffic would drain
forever). Another thread polls /v1/models every 0.2 s, the way the seeds' sweep script did, and
records which served model name answered. Writes one JSON object to OUT:
  {"streams": [{start, end, status, tokens, finish, error}], "polls": [{t, status, model}],
   (a stream cut after its 200: status 200, fewer tokens, its error)
   "deactivating_at": t}
Times are time.time() epoch seconds. The API key comes from $SGLANG_API_KEY.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import threading
import time
from typing import Any

host, port = sys.argv[1], int(sys.argv[2])
workers, max_new, stop_after = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
poll_until_model, deadline, out = sys.argv[6], time.time() + float(sys.argv[7]), sys.argv[8]
headers = {
    "Authorization": f"Bearer {os.environ['SGLANG_API_KEY']}",
    "Content-Type": "application/json",
}
lock = threading.Lock()
streams: list[dict[str, Any]] = []
polls: list[dict[str, Any]] = []
state: dict[str, float | None] = {"deactivating_at": None}
done = threading.Event()


def one_stream(n: int) -> dict[str, Any]:
    body = {
        "text": f"Request {n}: the server restarts, loads its weights and answers again.",
        "sampling_params": {"max_new_tokens": max_new, "ignore_eos": True, "temperature": 0},
        "stream": True,
    }
    rec: dict[str, Any] = {
        "start": time.time(),
        "status": 0,
        "tokens": 0,
        "finish": None,
        "error": None,
    }
    try:
        conn = http.client.HTTPConnection(host, port, timeout=120)
        conn.request("POST", "/generate", json.dumps(body), headers)
        resp = conn.getresponse()
        rec["status"] = resp.status
        for raw in resp:
            line = raw.decode().strip()
            if not line.startswith("data:") or line == "data: [DONE]":
                continue
            meta = json.loads(line[5:]).get("meta_info", {})
            rec["tokens"] = meta.get("completion_tokens", rec["tokens"])
            if meta.get("finish_reason"):
                rec["finish"] = meta["finish_reason"].get("type")
        conn.close()
        # the server exited with the response begun: the body just ends (no error raised)
        if resp.status == 200 and rec["finish"] is None:
            rec["error"] = f"cut: the stream ended after {rec['tokens']} token(s), no finish_reason"
    except (OSError, http.client.HTTPException, ValueError) as exc:
        rec["error"] = f"{type(exc).__name__}: {exc}"
    rec["end"] = time.time()
    return rec


def worker(w: int) -> None:
    n = 0
    while time.time() < deadline:
        at = state["deactivating_at"]
        if at is not None and time.time() > at + stop_after:
            return
        rec = one_stream(w * 100000 + n)
        n += 1
        with lock:
            streams.append(rec)
        if rec["status"] != 200:
            time.sleep(0.2)


def poller() -> None:
    while time.time() < deadline and not done.is_set():
        rec: dict[str, Any] = {"t": time.time(), "status": 0, "model": None}
        try:
            conn = http.client.HTTPConnection(host, port, timeout=5)
            conn.request("GET", "/v1/models", headers=headers)
            resp = conn.getresponse()
            rec["status"] = resp.status
            data = json.loads(resp.read() or b"{}")
            rec["model"] = (data.get("data") or [{}])[0].get("id")
            conn.close()
        except (OSError, ValueError) as exc:
            rec["error"] = type(exc).__name__
        polls.append(rec)
        if rec["model"] == poll_until_model:
            done.set()
        if state["deactivating_at"] is None:
            active = subprocess.run(
                ["systemctl", "show", "-P", "ActiveState", "sglang.service"],
                capture_output=True,
                text=True,
                check=False,
            ).stdout.strip()
            if active == "deactivating":
                state["deactivating_at"] = time.time()
        time.sleep(0.2)


threads = [threading.Thread(target=worker, args=(w,)) for w in range(workers)]
threads.append(threading.Thread(target=poller))
for t in threads:
    t.start()
for t in threads:
    t.join()
with open(out, "w") as f:
    json.dump({"streams": streams, "polls": polls, **state}, f)
