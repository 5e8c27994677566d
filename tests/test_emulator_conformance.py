"""The emulator against the REAL SGLang 0.5.23 server's recorded answers.

Fixtures: `tests/fixtures/real_sglang/0.5.23/` (recorded by `tests/real_sglang/record_fixtures.py`
from a real CPU SGLang 0.5.23 with a tiny Qwen2 model). Every recorded request is replayed
against the emulator (version 0.5.23, speculation off, the same API key) and compared on:
status, content type, the key structure and JSON types of bodies, SSE framing and per-frame
key structure, the metric names the project reads, and the SIGTERM drain behaviour.

Each worker replays the whole recording once, in the recorded order (the prefix cache and the
counters then hold what the real server's did when it answered), whichever of the tests xdist
gives it. Requests `record_fixtures.py` makes that the fixture does not hold yet (added after the
last recording) are skipped, each by name, until the maintainer records them.
"""

from __future__ import annotations

import copy
import http.client
import importlib.util
import json
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import EmulatorProcess, StartEmulator

FIXTURES = Path(__file__).parent / "fixtures" / "real_sglang" / "0.5.23"
RECORDED = json.loads((FIXTURES / "requests.json").read_text())
DRAIN = json.loads((FIXTURES / "drain.json").read_text())
API_KEY = RECORDED["api_key"]


def _load_recorder() -> Any:
    path = Path(__file__).parent / "real_sglang" / "record_fixtures.py"
    spec = importlib.util.spec_from_file_location("record_fixtures", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("record_fixtures", module)  # its dataclasses look themselves up
    spec.loader.exec_module(module)
    return module


RECORDER = _load_recorder()
RECORDED_NAMES = {r["name"] for r in RECORDED["requests"]}

# Keys the emulator may have that the real server does not, with the reason.
EMULATOR_ONLY_KEYS: dict[str, str] = {}

# Real keys the emulator may leave out, with the reason. `server_info` has ~550 keys (every
# ServerArgs field): the emulator carries the fields of the flags it knows plus the fields the
# project reads (SERVER_INFO_READ below); the rest of the real key set is not required.
SERVER_INFO_READ = (
    # module_utils/sglang_expect.py SAFE_SERVER_INFO_KEYS and sglang_ready's config comparison
    "version",
    "model_path",
    "served_model_name",
    "tp_size",
    "speculative_algorithm",
    "speculative_num_draft_tokens",
    "speculative_eagle_topk",
    "speculative_draft_window_size",
    "context_length",
    # bench/server.py and the report
    "max_total_num_tokens",
    "max_req_input_len",
    "internal_states",
    "launch_command",
    "status",
    "api_key",
    "enable_metrics",
    "port",
    "host",
    "startup_time",
    "frontend",
)
# internal_states[0] repeats every ServerArgs field too; the project reads none of them.
INTERNAL_STATE_READ = ("last_gen_throughput", "memory_usage")

# The metric series bench/server.py metrics_diff reads (speculation off: no spec_verify_calls).
METRICS_READ = (
    "sglang:generation_tokens_total",
    "sglang:prompt_tokens_total",
    "sglang:time_to_first_token_seconds_sum",
    "sglang:time_to_first_token_seconds_count",
    "sglang:inter_token_latency_seconds_sum",
    "sglang:inter_token_latency_seconds_count",
    "sglang:num_running_reqs",
    "sglang:num_queue_reqs",
)


def jtype(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "list"
    return "object"


def shape_diff(real: Any, emu: Any, where: str = "$") -> list[str]:
    """Every key the real answer has must be in the emulator's, with the same JSON type."""
    if jtype(real) != jtype(emu):
        return [f"{where}: real {jtype(real)}, emulator {jtype(emu)}"]
    out: list[str] = []
    if isinstance(real, dict):
        for k in real:
            if k not in emu:
                out.append(f"{where}.{k}: missing in the emulator")
            else:
                out += shape_diff(real[k], emu[k], f"{where}.{k}")
        for k in emu:
            if k not in real and f"{where}.{k}" not in EMULATOR_ONLY_KEYS:
                out.append(f"{where}.{k}: emulator-only key")
    elif isinstance(real, list) and real and emu:
        out += shape_diff(real[0], emu[0], f"{where}[0]")
    return out


def server_info_projection(info: dict[str, Any]) -> dict[str, Any]:
    """The part of /server_info the project reads (see SERVER_INFO_READ)."""
    out = {k: info[k] for k in SERVER_INFO_READ if k in info}
    states = info.get("internal_states")
    if isinstance(states, list) and states and isinstance(states[0], dict):
        out["internal_states"] = [{k: states[0][k] for k in INTERNAL_STATE_READ if k in states[0]}]
    return out


def content_type(headers: dict[str, str]) -> str | None:
    for k, v in headers.items():
        if k.lower() == "content-type":
            return v
    return None


# SGLang's finish reasons (managers/schedule_batch.py): FINISH_MATCHED_TOKEN for an end of turn,
# FINISH_LENGTH at max_new_tokens.
FINISH_SHAPES = {"stop": {"type": "stop", "matched": 0}, "length": {"type": "length", "length": 0}}


def align_finish(real: Any, emu: Any) -> list[str]:
    """The recording's tiny model has random weights: it seldom ends its turn where the
    emulator's model does. Where the two answers finish for different reasons, the emulator's
    finish is checked against SGLang's shape for its own reason (meta_info `finish_reason`;
    OpenAI `finish_reason` "stop" with the matched token id in `matched_stop`, "length" with
    null) and then replaced by the real one, so the rest is compared as usual."""
    out: list[str] = []
    if isinstance(real, list) and isinstance(emu, list):
        for r, e in zip(real, emu, strict=False):
            out += align_finish(r, e)
    if not (isinstance(real, dict) and isinstance(emu, dict)):
        return out
    r_fin, e_fin = real.get("finish_reason"), emu.get("finish_reason")
    if (
        isinstance(r_fin, dict)
        and isinstance(e_fin, dict)
        and r_fin.get("type") != e_fin.get("type")
    ):
        shape = FINISH_SHAPES.get(e_fin.get("type"))
        if shape is None or shape_diff(shape, e_fin):
            out.append(f"finish_reason {e_fin!r} is no SGLang finish reason")
        emu["finish_reason"] = copy.deepcopy(r_fin)
    elif isinstance(r_fin, str) and isinstance(e_fin, str) and r_fin != e_fin:
        matched = emu.get("matched_stop")
        if (e_fin, jtype(matched)) not in (("stop", "number"), ("length", "null")):
            out.append(f"finish_reason {e_fin!r} with matched_stop {matched!r}")
        emu["finish_reason"], emu["matched_stop"] = r_fin, real.get("matched_stop")
    for k, v in real.items():
        if k in emu and k != "finish_reason":
            out += align_finish(v, emu[k])
    return out


def frame_roles(frames: list[Any]) -> dict[str, Any]:
    """Frames by role: first, middle, last content frame, usage-only frame, terminator."""
    content = [f for f in frames if isinstance(f, dict) and f.get("choices") != []]
    roles: dict[str, Any] = {"first": content[0], "last": content[-1]}
    if len(content) > 2:
        roles["middle"] = content[1]
    usage = [f for f in frames if isinstance(f, dict) and f.get("choices") == []]
    if usage:
        roles["usage"] = usage[-1]
    roles["terminator"] = frames[-1] if frames and not isinstance(frames[-1], dict) else None
    return roles


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model dir shaped like the recording's tiny Qwen2 (context 8192)."""
    model = tmp_path_factory.mktemp("tiny-model")
    config = {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "max_position_embeddings": 8192,
    }
    (model / "config.json").write_text(json.dumps(config))
    return model


@pytest.fixture(scope="module")
def emulator(start_module_emulator: StartEmulator, tiny_model: Path) -> EmulatorProcess:
    flags = ["--model-path", str(tiny_model), "--api-key", API_KEY, "--enable-metrics"]
    env = {"SGLANG_EMU_VERSION": "0.5.23", "SGLANG_EMU_TIME_SCALE": "0"}
    return start_module_emulator(flags, env=env)


def replay(emu: EmulatorProcess, rec: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", emu.port, timeout=20)
    headers = {"content-type": "application/json"}
    if rec["auth"] == "key":
        headers["authorization"] = f"Bearer {API_KEY}"
    elif rec["auth"] == "wrong":
        headers["authorization"] = "Bearer WRONG-KEY"
    body = rec["request_body"]
    if isinstance(body, str):  # recorded raw (a malformed body)
        data: bytes | None = body.encode()
    else:
        data = json.dumps(body).encode() if body is not None else None
    try:
        conn.request(rec["method"], rec["path"], body=data, headers=headers)
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def answers(emulator: EmulatorProcess) -> dict[str, tuple[int, dict[str, str], bytes]]:
    """Every recorded request replayed once, in the recording's order."""
    return {rec["name"]: replay(emulator, rec) for rec in RECORDED["requests"]}


@pytest.mark.parametrize("rec", RECORDED["requests"], ids=[r["name"] for r in RECORDED["requests"]])
def test_request_conforms(
    answers: dict[str, tuple[int, dict[str, str], bytes]], rec: dict[str, Any]
) -> None:
    status, headers, raw = answers[rec["name"]]
    assert status == rec["status"], f"{rec['method']} {rec['path']}: status"
    assert content_type(headers) == rec["content_type"], "content type"
    if "metrics" in rec:
        names = set(rec["metrics"]["samples"])
        emu_names = {
            line.split("{")[0].split(" ")[0]
            for line in raw.decode().splitlines()
            if line and not line.startswith("#")
        }
        if rec["name"] == "metrics_after_generation":  # histograms appear once streams ran
            assert set(METRICS_READ) <= names, "the recording lacks a metric the project reads"
        if "sglang:spec_verify_calls_total" not in names:  # speculation off: no series
            assert "sglang:spec_verify_calls_total" not in emu_names
        read = [m for m in METRICS_READ if m in names]
        assert [m for m in read if m not in emu_names] == [], "metric series the project reads"
        emu_types = dict(
            line.split(" ")[2:4] for line in raw.decode().splitlines() if line.startswith("# TYPE ")
        )
        real_types = rec["metrics"]["types"]
        families = {fam for fam in real_types for m in read if m == fam or m.startswith(fam + "_")}
        assert {f: emu_types.get(f) for f in families} == {f: real_types[f] for f in families}
        return
    if "frames" in rec:
        text = raw.decode()
        events = [e for e in text.split("\n\n") if e.strip()]
        assert {
            "every_line_is_data": all(
                line.startswith("data: ") for e in events for line in e.split("\n")
            ),
            "events_end_with_blank_line": text.endswith("\n\n"),
            "one_data_line_per_event": all(len(e.split("\n")) == 1 for e in events),
            "last_is_done": events[-1] == "data: [DONE]",
        } == rec["framing"]
        frames = [
            e[len("data: ") :] if e == "data: [DONE]" else json.loads(e[len("data: ") :])
            for e in events
        ]
        real_roles, emu_roles = frame_roles(rec["frames"]), frame_roles(frames)
        assert sorted(emu_roles) == sorted(real_roles), "frame roles"
        for role, real in real_roles.items():
            assert not align_finish(real, emu_roles[role]), f"{role} frame"
            diffs = shape_diff(real, emu_roles[role], f"{role} frame")
            assert not diffs, "\n".join(diffs)
        return
    if "body" in rec:
        real, emu = rec["body"], json.loads(raw)
        if "server_info" in rec["path"] and rec["status"] == 200:
            real, emu = server_info_projection(real), server_info_projection(emu)
            assert set(real) == set(SERVER_INFO_READ), "the recording lacks a key the project reads"
        assert not align_finish(real, emu)
        diffs = shape_diff(real, emu)
        assert not diffs, "\n".join(diffs)
    else:
        assert raw.decode() == rec["body_text"]


@pytest.mark.parametrize("req", RECORDER.REQUESTS, ids=[r[0] for r in RECORDER.REQUESTS])
def test_every_request_the_recorder_makes_is_recorded(req: tuple[Any, ...]) -> None:
    """record_fixtures.py's requests against the fixture: one not recorded yet is skipped by
    name (test_request_conforms replays it once it is); a recorded one must be the same."""
    name, method, path, body, auth = req
    if name not in RECORDED_NAMES:
        pytest.skip(
            f"{name}: not in {FIXTURES.relative_to(FIXTURES.parents[3])}/requests.json yet; "
            "record it with tests/real_sglang/record_fixtures.py"
        )
    rec = next(r for r in RECORDED["requests"] if r["name"] == name)
    sent = body.decode() if isinstance(body, bytes) else body
    assert (rec["method"], rec["path"], rec["request_body"], rec["auth"]) == (
        method, path, sent, auth,
    ), f"{name}: the recording was made for another request; record it again"  # fmt: skip


def test_drain_conforms(start_emulator: StartEmulator, tiny_model: Path) -> None:
    """SIGTERM with a stream in flight: served to the end, new requests accepted, exit after."""
    poll = 0.5
    flags = ["--model-path", str(tiny_model), "--api-key", API_KEY]
    env = {"SGLANG_EMU_FIXED_STEP_MS": "10", "SGLANG_EMU_DRAIN_SECONDS": str(poll)}
    emu = start_emulator(flags, env=env)
    n_tokens = 150  # 1.5 s of decoding
    stream: dict[str, Any] = {"frames": 0, "tokens": 0, "done": False}
    first = threading.Event()

    def run_stream() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", emu.port, timeout=20)
        body = {
            "text": "The capital city of France is",
            "sampling_params": {"max_new_tokens": n_tokens, "ignore_eos": True},
            "stream": True,
        }
        auth = {"content-type": "application/json", "authorization": f"Bearer {API_KEY}"}
        conn.request("POST", "/generate", json.dumps(body), auth)
        resp = conn.getresponse()
        stream["status"] = resp.status
        for line in resp:
            if line.startswith(b"data: [DONE]"):
                stream["done"] = True
            elif line.startswith(b"data: "):
                chunk = json.loads(line[6:])
                stream["tokens"] = chunk["meta_info"]["completion_tokens"]
                stream["finish"] = chunk["meta_info"]["finish_reason"]
                first.set()
        stream["ended"] = time.monotonic()
        first.set()

    thread = threading.Thread(target=run_stream, daemon=True)
    thread.start()
    assert first.wait(10)
    term = time.monotonic()
    emu.signal(signal.SIGTERM)
    seen: dict[str, set[Any]] = {"health": set(), "ready": set(), "v1_models": set()}
    seen["new_generate"] = set()
    auth = {"authorization": f"Bearer {API_KEY}"}
    while thread.is_alive():
        try:
            for probe, path in (
                ("health", "/health"),
                ("ready", "/ready"),
                ("v1_models", "/v1/models"),
            ):
                seen[probe].add(emu.get(path, headers=auth).status)
            new = {"text": "hi", "sampling_params": {"max_new_tokens": 2}}
            seen["new_generate"].add(emu.post("/generate", new, headers=auth).status)
        except OSError:  # refused: only allowed once the stream got its last frame
            thread.join(5)
            assert stream["done"], "the emulator stopped serving before the stream ended"
            break
        time.sleep(0.1)
    real_during = {
        probe: {row[probe] for row in DRAIN["timeline"] if row["stream_running"] and probe in row}
        for probe in seen
    }
    assert seen == real_during
    real_stream = DRAIN["stream"]
    assert real_stream["done"] and real_stream["tokens"] == DRAIN["max_new_tokens"]
    assert stream["done"] and stream["tokens"] == n_tokens
    assert stream["finish"]["type"] == real_stream["finish_reason"]["type"]
    code = emu.wait_exit(timeout=10)
    exited = time.monotonic()
    assert code == DRAIN["exit_code"]
    # Real SGLang checks every 5 s whether requests remain and exits at the first check that
    # finds none: after the last request, within one poll interval (plus the shutdown).
    real_after = DRAIN["exit_after_last_request_s"]
    assert 0 <= real_after <= DRAIN["source_poll_interval_s"] + 3
    assert DRAIN["port_closed_after_sigterm_s"] > real_stream["ended_after_sigterm_s"]
    after = exited - stream["ended"]
    assert 0 <= after <= poll + 2.0, f"exit {after:.2f} s after the last request"
    assert exited - term >= stream["ended"] - term


def test_align_finish_checks_the_emulator_s_own_finish():
    length = {"finish_reason": {"type": "length", "length": 128}, "completion_tokens": 128}
    stop = {"finish_reason": {"type": "stop", "matched": 129279}, "completion_tokens": 40}
    emu = copy.deepcopy(stop)
    assert align_finish(length, emu) == [] and emu["finish_reason"] == length["finish_reason"]
    for bad in ({"type": "stop"}, {"type": "stop", "matched": "x"}, {"type": "eos", "id": 1}):
        assert align_finish(length, {"finish_reason": bad}), bad
    real_choice = {"choices": [{"finish_reason": "length", "matched_stop": None}]}
    emu_choice = {"choices": [{"finish_reason": "stop", "matched_stop": 129279}]}
    assert align_finish(real_choice, emu_choice) == [] and emu_choice == real_choice
    assert align_finish(real_choice, {"choices": [{"finish_reason": "stop", "matched_stop": None}]})
    assert align_finish(real_choice, {"choices": [{"finish_reason": "abort", "matched_stop": 1}]})
