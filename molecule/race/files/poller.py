"""Polls the server during a restart and records who answered what (JSON lines): race scenario.

Stops 2 s after the first answer with the new DDTree budget, or after `seconds`.
"""

import json
import sys
import time
import urllib.error
import urllib.request

url, key, seconds, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
new_budget = int(sys.argv[5])
headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}


def call(path: str, body: dict | None = None) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url + path, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, {}
    except OSError:
        return 0, {}


deadline = time.time() + seconds
first_new = None
with open(out, "w") as sink:
    while time.time() < deadline and (first_new is None or time.time() - first_new < 2):
        started = time.time()
        status, info = call("/server_info")
        gen_status, _ = call("/generate", {"text": "x", "sampling_params": {"max_new_tokens": 2}})
        row = {
            "t": started,
            "info": status,
            "budget": info.get("speculative_ddtree_budget"),
            "generate": gen_status,
        }
        if row["budget"] == new_budget and first_new is None:
            first_new = started
        sink.write(json.dumps(row) + "\n")
        sink.flush()
        time.sleep(0.1)
