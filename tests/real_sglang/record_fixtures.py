"""Record a real SGLang server's answers to every request the project makes.

Writes `tests/fixtures/real_sglang/<version>/requests.json` (one entry per request) and
`drain.json` (what the server answers after SIGTERM while a long stream is in flight).
`tests/test_emulator_conformance.py` replays the same requests against the emulator.

    SGLANG_USE_CPU_ENGINE=1 /tmp/sglv/bin/python ...  # see --help; by default this script
    .venv/bin/python tests/real_sglang/record_fixtures.py   # starts its own server

Volatile values (ids, times, token text, token ids, seeds) are replaced by placeholders of the
same JSON type, so the fixtures keep the key structure and stay stable between recordings.
Standard library only.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "real_sglang"
CPU_SERVER = ROOT / "tests" / "real_sglang" / "cpu_server.json"
API_KEY = "SOMEKEY"
PROMPT = "The capital city of France is"

# Keys whose values change from run to run; replaced by a placeholder of the same JSON type.
VOLATILE_KEYS = frozenset(
    {
        "id",
        "rid",
        "created",
        "text",
        "content",
        "output_ids",
        "random_seed",
        "launch_command",
        "port",
        "nccl_port",
        "tokenizer_path",
        "model_path",
        "served_model_name",
        "model",
        "root",
        "max_total_num_tokens",
        "max_req_input_len",
        "weight",
        "kvcache",
        "token_capacity",
        "last_gen_throughput",
    }
)

# Each request: name, method, path, JSON body (or raw bytes), auth ("key", "none", "wrong").
Req = tuple[str, str, str, Any, str]

GEN_SAMPLING = {"max_new_tokens": 4, "ignore_eos": True, "temperature": 0}
# Chat-shaped traffic (bench/chat.py): a conversation rendered by the server's chat template
# (/tokenize with messages), then /generate without ignore_eos, ending at the model's end of
# turn or at max_new_tokens.
MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": PROMPT},
]
# The same conversation as the tiny model's ChatML template renders it (special tokens in the
# text are single tokens for its tokenizer, as for /generate with the rendered input_ids).
CHATML_PROMPT = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in MESSAGES)
CHATML_PROMPT += "<|im_start|>assistant\n"
NATURAL_SAMPLING = {"max_new_tokens": 128, "temperature": 0}
REQUESTS: list[Req] = [
    ("health", "GET", "/health", None, "key"),
    ("health_generate", "GET", "/health_generate", None, "key"),
    ("ready", "GET", "/ready", None, "key"),
    ("health_no_key", "GET", "/health", None, "none"),
    ("ready_no_key", "GET", "/ready", None, "none"),
    ("metrics_no_key", "GET", "/metrics", None, "none"),
    ("v1_models", "GET", "/v1/models", None, "key"),
    ("model_info", "GET", "/model_info", None, "key"),
    ("get_model_info", "GET", "/get_model_info", None, "key"),
    ("server_info", "GET", "/server_info", None, "key"),
    ("get_server_info", "GET", "/get_server_info", None, "key"),
    ("metrics", "GET", "/metrics", None, "key"),
    ("flush_cache", "POST", "/flush_cache", None, "key"),
    (
        "tokenize_list",
        "POST",
        "/tokenize",
        {"prompt": [PROMPT], "add_special_tokens": False},
        "key",
    ),
    ("tokenize_one", "POST", "/tokenize", {"prompt": PROMPT, "add_special_tokens": False}, "key"),
    ("v1_tokenize", "POST", "/v1/tokenize", {"prompt": PROMPT, "add_special_tokens": False}, "key"),
    ("tokenize_messages", "POST", "/tokenize", {"messages": MESSAGES}, "key"),
    ("v1_tokenize_messages", "POST", "/v1/tokenize", {"messages": MESSAGES}, "key"),
    (
        "tokenize_messages_no_generation_prompt",
        "POST",
        "/tokenize",
        {
            "messages": [*MESSAGES, {"role": "assistant", "content": "Paris."}],
            "add_generation_prompt": False,
        },
        "key",
    ),
    ("tokenize_messages_empty", "POST", "/tokenize", {"messages": []}, "key"),
    (
        "tokenize_messages_bad_role",
        "POST",
        "/tokenize",
        {"messages": [{"role": "wizard", "content": PROMPT}]},
        "key",
    ),
    ("tokenize_neither", "POST", "/tokenize", {"add_special_tokens": False}, "key"),
    (
        "generate_text",
        "POST",
        "/generate",
        {"text": PROMPT, "sampling_params": GEN_SAMPLING, "return_logprob": False},
        "key",
    ),
    (
        "generate_ids",
        "POST",
        "/generate",
        {"input_ids": [10, 11, 12, 13], "sampling_params": GEN_SAMPLING},
        "key",
    ),
    (
        "generate_probe",  # library/sglang_ready.py's generation check
        "POST",
        "/generate",
        {"text": PROMPT, "sampling_params": {"max_new_tokens": 4, "temperature": 0}},
        "key",
    ),
    (
        "generate_stream_text",  # bench/client.py's payload
        "POST",
        "/generate",
        {"text": PROMPT, "sampling_params": GEN_SAMPLING, "stream": True, "rid": "bench-1"},
        "key",
    ),
    (
        "generate_stream_ids",
        "POST",
        "/generate",
        {"input_ids": [10, 11, 12, 13], "sampling_params": GEN_SAMPLING, "stream": True},
        "key",
    ),
    (
        "completions",
        "POST",
        "/v1/completions",
        {"model": "default", "prompt": PROMPT, "max_tokens": 4, "temperature": 0},
        "key",
    ),
    (
        "completions_stream",
        "POST",
        "/v1/completions",
        {
            "model": "default",
            "prompt": PROMPT,
            "max_tokens": 4,
            "temperature": 0,
            "stream": True,
            "stream_options": {"include_usage": True},
        },
        "key",
    ),
    (
        "chat",
        "POST",
        "/v1/chat/completions",
        {
            "model": "default",
            "messages": [{"role": "user", "content": PROMPT}],
            "max_tokens": 4,
            "temperature": 0,
        },
        "key",
    ),
    (
        "chat_stream",
        "POST",
        "/v1/chat/completions",
        {
            "model": "default",
            "messages": [{"role": "user", "content": PROMPT}],
            "max_tokens": 4,
            "temperature": 0,
            "stream": True,
            "stream_options": {"include_usage": True},
        },
        "key",
    ),
    (
        "generate_natural",  # the bench's chat-shaped /generate: no ignore_eos
        "POST",
        "/generate",
        {"text": CHATML_PROMPT, "sampling_params": NATURAL_SAMPLING},
        "key",
    ),
    (
        "generate_natural_stream",
        "POST",
        "/generate",
        {"text": CHATML_PROMPT, "sampling_params": NATURAL_SAMPLING, "stream": True},
        "key",
    ),
    (
        "chat_natural",
        "POST",
        "/v1/chat/completions",
        {"model": "default", "messages": MESSAGES, "max_tokens": 128, "temperature": 0},
        "key",
    ),
    (
        "chat_natural_stream",
        "POST",
        "/v1/chat/completions",
        {
            "model": "default",
            "messages": MESSAGES,
            "max_tokens": 128,
            "temperature": 0,
            "stream": True,
            "stream_options": {"include_usage": True},
        },
        "key",
    ),
    (
        "chat_empty_messages",
        "POST",
        "/v1/chat/completions",
        {"model": "default", "messages": [], "max_tokens": 4},
        "key",
    ),
    (
        "chat_bad_role",
        "POST",
        "/v1/chat/completions",
        {"model": "default", "messages": [{"role": "wizard", "content": PROMPT}], "max_tokens": 4},
        "key",
    ),
    # Histogram series (inter-token latency...) appear only once streams have run.
    ("metrics_after_generation", "GET", "/metrics", None, "key"),
    ("v1_models_no_key", "GET", "/v1/models", None, "none"),
    ("v1_models_wrong_key", "GET", "/v1/models", None, "wrong"),
    ("server_info_no_key", "GET", "/server_info", None, "none"),
    ("generate_no_key", "POST", "/generate", {"text": PROMPT}, "none"),
    ("generate_wrong_key", "POST", "/generate", {"text": PROMPT}, "wrong"),
    ("unknown_path", "GET", "/no/such/path", None, "key"),
    ("generate_bad_json", "POST", "/generate", b'{"text": "unterminated', "key"),
    ("generate_get", "GET", "/generate", None, "key"),
    (
        "generate_too_long",
        "POST",
        "/generate",
        {"text": PROMPT, "sampling_params": {"max_new_tokens": 9000}},
        "key",
    ),
    (
        "completions_too_long",
        "POST",
        "/v1/completions",
        {"model": "default", "prompt": PROMPT, "max_tokens": 9000},
        "key",
    ),
]

# The metric families the project reads (bench/server.py metrics_diff) or documents.
METRIC_RE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s")


@dataclass
class Answer:
    status: int | None
    content_type: str | None = None
    raw: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    error: str | None = None


def request(
    url: str,
    method: str,
    path: str,
    body: Any = None,
    auth: str = "key",
    timeout: float = 60.0,
) -> Answer:
    parsed = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parsed.hostname or "127.0.0.1", parsed.port, timeout=timeout)
    headers = {"content-type": "application/json"}
    if auth == "key":
        headers["authorization"] = f"Bearer {API_KEY}"
    elif auth == "wrong":
        headers["authorization"] = "Bearer WRONG-KEY"
    data = body if isinstance(body, bytes) else (json.dumps(body).encode() if body else None)
    try:
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        raw = resp.read()
        hdrs = {k.lower(): v for k, v in resp.getheaders()}
        return Answer(resp.status, hdrs.get("content-type"), raw, hdrs)
    except (ConnectionError, OSError, http.client.HTTPException) as e:
        return Answer(None, error=type(e).__name__)
    finally:
        conn.close()


def scrub(value: Any, key: str | None = None) -> Any:
    """Placeholders of the same JSON type for volatile values; floats are all volatile."""
    if isinstance(value, dict):
        return {k: scrub(v, k) for k, v in value.items()}
    if key in VOLATILE_KEYS:
        if isinstance(value, str):
            return "<str>"
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, int):
            return 0
        if isinstance(value, float):
            return 0.0
        if isinstance(value, list):
            return [scrub(v, key) for v in value]
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, float):
        return 0.0
    if isinstance(value, str) and len(value) > 300:  # error messages quote tracebacks
        return value[:300]
    return value


def sse_frames(raw: bytes) -> dict[str, Any]:
    text = raw.decode(errors="replace")
    events = [e for e in text.split("\n\n") if e.strip()]
    frames: list[Any] = []
    for event in events:
        for line in event.split("\n"):
            payload = line[len("data: ") :] if line.startswith("data: ") else None
            if payload is None:
                frames.append({"non_data_line": line[:80]})
            elif payload == "[DONE]":
                frames.append("[DONE]")
            else:
                frames.append(scrub(json.loads(payload)))
    return {
        "framing": {
            "every_line_is_data": all(
                line.startswith("data: ") for e in events for line in e.split("\n")
            ),
            "events_end_with_blank_line": text.endswith("\n\n"),
            "one_data_line_per_event": all(len(e.split("\n")) == 1 for e in events),
            "last_is_done": bool(frames) and frames[-1] == "[DONE]",
        },
        "frames": frames,
    }


def metric_names(raw: bytes) -> dict[str, Any]:
    types: dict[str, str] = {}
    samples: set[str] = set()
    for line in raw.decode(errors="replace").splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind
        elif line and not line.startswith("#"):
            m = METRIC_RE.match(line)
            if m:
                samples.add(m.group(1))
    return {
        "types": dict(sorted(types.items())),
        "samples": sorted(samples),
    }


def describe(
    name: str, method: str, path: str, body: Any, auth: str, ans: Answer
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": name,
        "method": method,
        "path": path,
        "auth": auth,
        "request_body": body.decode() if isinstance(body, bytes) else body,
        "status": ans.status,
        "content_type": ans.content_type,
    }
    ctype = (ans.content_type or "").split(";")[0].strip()
    if path == "/metrics" and ans.status == 200:
        entry["metrics"] = metric_names(ans.raw)
    elif ctype == "text/event-stream":
        entry.update(sse_frames(ans.raw))
    elif ctype == "application/json":
        entry["body"] = scrub(json.loads(ans.raw))
    else:
        entry["body_text"] = ans.raw.decode(errors="replace")[:300]
    return entry


# -- server process ---------------------------------------------------------------------------
def start_server(python: str, model: str, port: int, log_path: Path) -> subprocess.Popen[bytes]:
    cpu = json.loads(CPU_SERVER.read_text())
    env = {**os.environ, **cpu["env"]}
    cmd = [
        python,
        "-m",
        "sglang.launch_server",
        "--model-path",
        model,
        *cpu["flags"],
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--api-key",
        API_KEY,
        "--enable-metrics",
    ]
    with open(log_path, "wb") as log:
        return subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)


def wait_ready(url: str, proc: subprocess.Popen[bytes] | None, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode} before it was ready")
        if request(url, "GET", "/health", timeout=5).status == 200:
            return
        time.sleep(1)
    raise SystemExit(f"server at {url} not ready after {timeout} s")


def port_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


# -- recordings -------------------------------------------------------------------------------
def record_requests(url: str) -> list[dict[str, Any]]:
    out = []
    for name, method, path, body, auth in REQUESTS:
        ans = request(url, method, path, body, auth)
        out.append(describe(name, method, path, body, auth, ans))
        print(f"{name}: {method} {path} -> {ans.status} {ans.content_type}", file=sys.stderr)
    return out


def record_drain(
    url: str, proc: subprocess.Popen[bytes], max_new_tokens: int, probe_s: float
) -> dict[str, Any]:
    """SIGTERM with one long stream in flight: what the server answers until it exits."""
    t0 = time.monotonic()
    stream: dict[str, Any] = {"frames": 0, "tokens": 0, "done": False, "finish": None}
    first_frame = threading.Event()

    def run_stream() -> None:
        parsed = urllib.parse.urlsplit(url)
        conn = http.client.HTTPConnection(parsed.hostname or "", parsed.port, timeout=300)
        body = {
            "text": PROMPT,
            "sampling_params": {"max_new_tokens": max_new_tokens, "ignore_eos": True},
            "stream": True,
        }
        try:
            conn.request(
                "POST",
                "/generate",
                json.dumps(body),
                {"content-type": "application/json", "authorization": f"Bearer {API_KEY}"},
            )
            resp = conn.getresponse()
            stream["status"] = resp.status
            for line in resp:
                if not line.startswith(b"data: "):
                    continue
                payload = line[6:].strip()
                if payload == b"[DONE]":
                    stream["done"] = True
                    continue
                chunk = json.loads(payload)
                stream["frames"] += 1
                stream["tokens"] = chunk["meta_info"]["completion_tokens"]
                stream["finish"] = chunk["meta_info"]["finish_reason"]
                first_frame.set()
        except (OSError, http.client.HTTPException, ValueError) as e:
            stream["error"] = type(e).__name__
        finally:
            stream["ended_at"] = time.monotonic()
            first_frame.set()
            conn.close()

    thread = threading.Thread(target=run_stream, daemon=True)
    thread.start()
    first_frame.wait(120)
    term_at = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    timeline: list[dict[str, Any]] = []
    late_generate: list[dict[str, Any]] = []
    exit_at: float | None = None
    while time.monotonic() - term_at < 180:
        t = round(time.monotonic() - term_at, 1)
        row: dict[str, Any] = {"t": t, "stream_running": thread.is_alive()}
        for probe, method, path, body in (
            ("health", "GET", "/health", None),
            ("ready", "GET", "/ready", None),
            ("v1_models", "GET", "/v1/models", None),
        ):
            ans = request(url, method, path, body, timeout=10)
            row[probe] = ans.status if ans.status is not None else ans.error
        if thread.is_alive():  # new requests only while the stream runs (they extend the drain)
            ans = request(
                url,
                "POST",
                "/generate",
                {"text": PROMPT, "sampling_params": {"max_new_tokens": 2, "temperature": 0}},
                timeout=60,
            )
            row["new_generate"] = ans.status if ans.status is not None else ans.error
            late_generate.append({"sent_at": t, "status": row["new_generate"]})
        row["done_at"] = round(time.monotonic() - term_at, 1)
        timeline.append(row)
        if proc.poll() is not None:
            exit_at = time.monotonic()
            break
        time.sleep(probe_s)
    if exit_at is None:
        proc.wait(60)
        exit_at = time.monotonic()
    thread.join(10)
    last_finish = max(stream.get("ended_at", term_at), term_at)
    # A probe /generate sent in the last row counts too: take the later of the two.
    last_probe_end = max(
        (term_at + row["done_at"] for row in timeline if "new_generate" in row), default=term_at
    )
    last_request_end = max(last_finish, last_probe_end)
    refused = [row["t"] for row in timeline if row["v1_models"] == "ConnectionRefusedError"]
    return {
        "how": (
            "one streaming /generate (ignore_eos, max_new_tokens below) in flight; SIGTERM after "
            f"its first frame; every {probe_s} s: /health, /ready, /v1/models and, while the "
            "stream runs, a new 2-token /generate; times in seconds after SIGTERM"
        ),
        "max_new_tokens": max_new_tokens,
        "stream": {
            "status": stream.get("status"),
            "frames": stream["frames"],
            "tokens": stream["tokens"],
            "done": stream["done"],
            "finish_reason": stream["finish"],
            "error": stream.get("error"),
            "ended_after_sigterm_s": round(last_finish - term_at, 1),
        },
        "timeline": timeline,
        "exit_code": proc.returncode,
        "port_closed_after_sigterm_s": refused[0] if refused else None,
        "exit_after_sigterm_s": round(exit_at - term_at, 1),
        "exit_after_last_request_s": round(exit_at - last_request_end, 1),
        "stream_started_before_sigterm_s": round(term_at - t0, 1),
        "source_poll_interval_s": 5,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, allow_abbrev=False)
    ap.add_argument("--url", help="record an already running server (no drain recording)")
    ap.add_argument("--python", default="/tmp/sglv/bin/python", help="the SGLang venv's python")
    ap.add_argument("--model", default="/tmp/tiny-model")
    ap.add_argument("--port", type=int, default=31100)
    ap.add_argument("--version", default="0.5.23")
    ap.add_argument("--out", type=Path, default=None, help="fixture directory")
    ap.add_argument("--drain-tokens", type=int, default=120)
    ap.add_argument("--probe-interval", type=float, default=0.5)
    ap.add_argument("--skip-drain", action="store_true")
    args = ap.parse_args(argv)
    out: Path = args.out or FIXTURES / args.version
    out.mkdir(parents=True, exist_ok=True)
    proc: subprocess.Popen[bytes] | None = None
    url = args.url
    if url is None:
        if not port_free(args.port):
            raise SystemExit(f"port {args.port} is taken")
        log_path = Path(f"/tmp/record-fixtures-{args.port}.log")
        proc = start_server(args.python, args.model, args.port, log_path)
        url = f"http://127.0.0.1:{args.port}"
    try:
        wait_ready(url, proc)
        entries = record_requests(url)
        meta = {"sglang_version": args.version, "api_key": API_KEY, "requests": entries}
        (out / "requests.json").write_text(json.dumps(meta, indent=1) + "\n")
        if proc is not None and not args.skip_drain:
            drain = record_drain(url, proc, args.drain_tokens, args.probe_interval)
            (out / "drain.json").write_text(json.dumps(drain, indent=1) + "\n")
            print(json.dumps({k: v for k, v in drain.items() if k != "timeline"}), file=sys.stderr)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
