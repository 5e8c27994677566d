"""API shapes against SGLang 0.5.23's, API key, context length, prefix cache, metrics."""

from __future__ import annotations

import json
import statistics
from typing import Any

import pytest
from conftest import EmulatorProcess, ModelDirs, StartEmulator
from sglang_emulator.flags import server_args_fields

KEY = "test-key"
AUTH = {"authorization": f"Bearer {KEY}"}
CODE = "def add(a, b):\n    return a + b\n\nimport os\nclass Point:\n    x: int = 0;"
CHAT = "Tell me about the capital city of France and why people like to go there."
SPEC_KEYS = (
    "spec_verify_ct", "spec_accept_length", "spec_accept_rate", "spec_num_correct_drafts",
    "spec_num_proposed_drafts", "spec_correct_drafts_histogram",
)  # fmt: skip
METRIC_NAMES = (
    "sglang:spec_accept_length", "sglang:spec_accept_rate", "sglang:num_running_reqs",
    "sglang:num_queue_reqs", "sglang:token_usage", "sglang:gen_throughput",
    "sglang:spec_verify_calls_total", "sglang:generation_tokens_total",
    "sglang:prompt_tokens_total", "sglang:time_to_first_token_seconds",
    "sglang:inter_token_latency_seconds", "sglang:e2e_request_latency_seconds",
    "sglang:startup_time_seconds",
)  # fmt: skip


@pytest.fixture(scope="module")
def spec_server(start_module_emulator: StartEmulator, model_dirs: ModelDirs) -> EmulatorProcess:
    flags = [
        "--model-path", str(model_dirs.model), "--served-model-name", "target",
        "--speculative-algorithm", "DFLASH",
        "--speculative-draft-model-path", str(model_dirs.drafter),
        "--speculative-draft-window-size", "2048",
        "--api-key", KEY, "--enable-metrics",
    ]  # fmt: skip
    return start_module_emulator(flags, env={"SGLANG_EMU_TIME_SCALE": "0", "SGLANG_EMU_SEED": "3"})


@pytest.fixture(scope="module")
def plain_server(start_module_emulator: StartEmulator, model_dirs: ModelDirs) -> EmulatorProcess:
    return start_module_emulator(
        ["--model-path", str(model_dirs.model), "--context-length", "256"],
        env={"SGLANG_EMU_TIME_SCALE": "0"},
    )


def generate(emu: EmulatorProcess, text: str, n: int, **extra: Any) -> dict[str, Any]:
    body = {"text": text, "sampling_params": {"max_new_tokens": n, "ignore_eos": True}, **extra}
    res = emu.post("/generate", body, headers=AUTH)
    assert res.status == 200, res.body
    return res.json()


def test_generate_meta_info_with_speculation(spec_server: EmulatorProcess):
    out = generate(spec_server, CODE, 64)
    meta = out["meta_info"]
    assert meta["finish_reason"] == {"type": "length", "length": 64}
    assert meta["completion_tokens"] == 64 == len(out["output_ids"])
    assert meta["prompt_tokens"] > 10
    assert meta["e2e_latency"] >= 0
    for key in SPEC_KEYS:
        assert key in meta, key
    assert meta["spec_accept_length"] == pytest.approx(64 / meta["spec_verify_ct"])
    assert meta["spec_num_proposed_drafts"] == meta["spec_verify_ct"] * 15
    assert sum(meta["spec_correct_drafts_histogram"]) == meta["spec_verify_ct"]
    assert isinstance(out["text"], str) and out["text"]


def test_generate_is_deterministic_given_seed_and_request(spec_server: EmulatorProcess):
    a = generate(spec_server, CODE + " deterministic", 48)
    b = generate(spec_server, CODE + " deterministic", 48)
    assert a["text"] == b["text"]
    assert (
        a["meta_info"]["spec_correct_drafts_histogram"]
        == (b["meta_info"]["spec_correct_drafts_histogram"])
    )
    assert a["meta_info"]["id"] != b["meta_info"]["id"]


def test_code_accepts_more_than_chat_end_to_end(spec_server: EmulatorProcess):
    def accept(text: str) -> float:
        metas = [generate(spec_server, f"{text} #{i}", 128)["meta_info"] for i in range(4)]
        return sum(m["completion_tokens"] for m in metas) / sum(m["spec_verify_ct"] for m in metas)

    assert accept(CODE) > accept(CHAT) + 0.5


def test_generate_stream(spec_server: EmulatorProcess):
    body = {
        "text": CHAT,
        "sampling_params": {"max_new_tokens": 40, "ignore_eos": True},
        "stream": True,
    }
    res = spec_server.post("/generate", body, headers=AUTH)
    assert res.status == 200
    assert res.headers["content-type"].startswith("text/event-stream")
    events = res.sse()
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    texts = [c["text"] for c in chunks]
    assert all(texts[i + 1].startswith(texts[i]) for i in range(len(texts) - 1))  # cumulative
    assert [c["meta_info"]["finish_reason"] for c in chunks[:-1]] == [None] * (len(chunks) - 1)
    last = chunks[-1]["meta_info"]
    assert last["completion_tokens"] == 40 and "spec_verify_ct" in last
    assert len({c["meta_info"]["id"] for c in chunks}) == 1


def test_generate_from_input_ids(spec_server: EmulatorProcess):
    res = spec_server.post(
        "/generate", {"input_ids": [5, 6, 7, 8], "sampling_params": {"max_new_tokens": 3}},
        headers=AUTH,
    )  # fmt: skip
    assert res.status == 200
    assert res.json()["meta_info"]["prompt_tokens"] == 4


def test_api_key_enforced(spec_server: EmulatorProcess):
    for path in ("/v1/models", "/server_info", "/model_info", "/flush_cache"):
        res = spec_server.get(path)
        assert res.status == 401, path
        assert res.json() == {"error": "Unauthorized"}
    assert spec_server.get("/v1/models", headers={"authorization": "Bearer wrong"}).status == 401
    assert spec_server.post("/generate", {"text": "x"}).status == 401
    for path in ("/health", "/health_generate", "/ready", "/metrics"):
        assert spec_server.get(path).status == 200, path
    assert spec_server.get("/v1/models", headers=AUTH).status == 200


def test_server_info_shape(spec_server: EmulatorProcess, model_dirs: ModelDirs):
    for path in ("/server_info", "/get_server_info"):
        info = spec_server.get(path, headers=AUTH).json()
        assert info["speculative_algorithm"] == "DFLASH"
        assert info["speculative_num_draft_tokens"] == 16
        assert info["speculative_eagle_topk"] == 1
        assert info["speculative_draft_window_size"] == 2048
        assert info["tp_size"] == 1
        assert info["model_path"] == str(model_dirs.model)
        assert info["context_length"] is None  # no --context-length: null, as SGLang reports
        assert info["api_key"] == KEY
        assert info["version"] == "0.5.23"
        assert "--speculative-draft-window-size 2048" in info["launch_command"]
        assert info["startup_time"]["load_weight"] > 0
        assert isinstance(info["internal_states"], list)
    models = spec_server.get("/v1/models", headers=AUTH).json()
    assert models["object"] == "list"
    assert models["data"][0]["id"] == "target"
    assert models["data"][0]["max_model_len"] == 16384


def test_prefix_cache_and_flush(spec_server: EmulatorProcess):
    prompt = "A prompt seen for the first time here. " + CHAT * 4
    first = generate(spec_server, prompt, 4)["meta_info"]
    second = generate(spec_server, prompt, 4)["meta_info"]
    assert first["cached_tokens"] == 0
    assert second["cached_tokens"] == second["prompt_tokens"] - 1
    states = spec_server.get("/server_info", headers=AUTH).json()["internal_states"]
    assert states[0]["avg_spec_accept_length"] > 1
    for method in ("GET", "POST"):
        assert spec_server.request(method, "/flush_cache", headers=AUTH).status == 200
    assert generate(spec_server, prompt, 4)["meta_info"]["cached_tokens"] == 0
    spec_server.post("/flush_cache", None, headers=AUTH)
    states = spec_server.get("/server_info", headers=AUTH).json()["internal_states"]
    assert "avg_spec_accept_length" not in states[0]  # counters reset


def test_openai_completions(spec_server: EmulatorProcess):
    body = {"model": "target", "prompt": CODE, "max_tokens": 20,
            "return_spec_tokens_details": True}  # fmt: skip
    out = spec_server.post("/v1/completions", body, headers=AUTH).json()
    assert out["object"] == "text_completion"
    assert out["choices"][0]["finish_reason"] == "length"
    assert out["usage"]["completion_tokens"] == 20
    assert out["usage"]["total_tokens"] == out["usage"]["prompt_tokens"] + 20
    details = out["sglext"]["spec_tokens_details"]
    assert details["spec_accept_length"] == pytest.approx(20 / details["spec_verify_ct"])
    plain = spec_server.post("/v1/completions", {"prompt": CODE, "max_tokens": 3}, headers=AUTH)
    assert "sglext" not in plain.json()


def test_openai_completions_stream_with_usage(spec_server: EmulatorProcess):
    body = {
        "prompt": CODE,
        "max_tokens": 30,
        "stream": True,
        "stream_options": {"include_usage": True},
        "return_spec_tokens_details": True,
    }
    events = spec_server.post("/v1/completions", body, headers=AUTH).sse()
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    text_chunks = [c for c in chunks if c["choices"]]
    assert "".join(c["choices"][0]["text"] for c in text_chunks)  # deltas
    assert text_chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert chunks[-1]["usage"]["completion_tokens"] == 30
    assert any("sglext" in c for c in chunks)


def test_openai_chat_stream(spec_server: EmulatorProcess):
    body = {
        "model": "target",
        "messages": [{"role": "user", "content": CHAT}],
        "max_tokens": 12,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    events = spec_server.post("/v1/chat/completions", body, headers=AUTH).sse()
    chunks = [json.loads(e) for e in events[:-1]]
    assert chunks[0]["object"] == "chat.completion.chunk"
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["usage"]["completion_tokens"] == 12
    full = spec_server.post("/v1/chat/completions", {**body, "stream": False}, headers=AUTH)
    msg = full.json()["choices"][0]["message"]
    assert msg["role"] == "assistant" and msg["content"]


def test_metrics_names(spec_server: EmulatorProcess):
    generate(spec_server, CODE, 8)
    text = spec_server.get("/metrics").body.decode()
    for name in METRIC_NAMES:
        assert f"\n{name}" in text or text.startswith(name) or f"# TYPE {name} " in text, name
    total = next(ln for ln in text.splitlines() if ln.startswith("sglang:generation_tokens_total"))
    assert float(total.rsplit(" ", 1)[1]) >= 8


def test_ground_truth_records(spec_server: EmulatorProcess):
    meta = generate(spec_server, CODE + " record", 25)["meta_info"]
    records = spec_server.get("/emulator/requests").json()["requests"]
    rec = next(r for r in records if r["rid"] == meta["id"])
    assert sum(n for _, n in rec["chunks"]) == 25 == rec["completion_tokens"]
    assert rec["spec_verify_ct"] == meta["spec_verify_ct"]
    assert rec["arrival"] <= rec["first_token"] == rec["chunks"][0][0] <= rec["finish"]


def test_speculation_off(plain_server: EmulatorProcess):
    out = plain_server.post(
        "/generate", {"text": CODE, "sampling_params": {"max_new_tokens": 10}, "stream": True}
    ).sse()
    chunks = [json.loads(e) for e in out[:-1]]
    assert [c["meta_info"]["completion_tokens"] for c in chunks] == list(range(1, 11))
    assert not any(k in chunks[-1]["meta_info"] for k in SPEC_KEYS)
    assert plain_server.get("/metrics").status == 404  # no --enable-metrics
    assert plain_server.get("/no/such/path").status == 404
    assert plain_server.get("/generate").status == 405


def test_context_length_enforced(plain_server: EmulatorProcess):
    res = plain_server.post("/generate", {"text": "hi", "sampling_params": {"max_new_tokens": 300}})
    assert res.status == 400
    assert "maximum context length of 256 tokens" in res.json()["error"]["message"]
    long_prompt = " ".join(["word"] * 300)
    res = plain_server.post("/generate", {"text": long_prompt})
    assert res.status == 400 and "longer than the model's context length" in res.body.decode()
    res = plain_server.post("/v1/completions", {"prompt": "hi", "max_tokens": 300})
    assert res.status == 400
    assert res.json()["object"] == "error" and res.json()["code"] == 400


def test_fixed_timings(start_emulator: StartEmulator, model_dirs: ModelDirs):
    flags = ["--model-path", str(model_dirs.model), "--speculative-algorithm", "DFLASH",
             "--speculative-draft-model-path", str(model_dirs.drafter)]  # fmt: skip
    env = {"SGLANG_EMU_FIXED_TTFT_MS": "200", "SGLANG_EMU_FIXED_STEP_MS": "50",
           "SGLANG_EMU_FIXED_ACCEPT": "3"}  # fmt: skip
    emu = start_emulator(flags, env=env)
    body = {"text": CHAT, "sampling_params": {"max_new_tokens": 31, "ignore_eos": True}}
    meta = emu.post("/generate", body).json()["meta_info"]
    assert meta["spec_verify_ct"] == 10 and meta["spec_accept_length"] == pytest.approx(3.1)
    rec = next(r for r in emu.get("/emulator/requests").json()["requests"]
               if r["rid"] == meta["id"])  # fmt: skip
    assert [n for _, n in rec["chunks"]] == [1] + [3] * 10
    assert rec["first_token"] - rec["arrival"] >= 0.19
    gaps = [b[0] - a[0] for a, b in zip(rec["chunks"], rec["chunks"][1:], strict=False)]
    assert min(gaps) >= 0.04  # never faster than the fixed step
    assert statistics.median(gaps) < 0.2  # generous: a noisy 2-core machine


# Per emulated release: /server_info's extra keys (http_server.py `server_info`), the
# speculative meta_info names (TokenizerManager._calculate_spec_decoding_metrics) and the
# metric series (observability/metrics_collector.py). tests/releases checks the same against
# the real releases' source.
VERSION_SHAPES = {
    "0.5.11": {
        "info": {"status", "max_total_num_tokens", "max_req_input_len", "internal_states",
                 "version"},
        "meta": {"spec_accepted_drafts", "spec_proposed_drafts", "spec_accept_histogram"},
        "no_meta": {"spec_num_correct_drafts", "spec_num_proposed_drafts",
                    "spec_correct_drafts_histogram", "num_retractions", "weight_versions"},
        "no_metrics": {"sglang:spec_verify_calls_total", "sglang:startup_time_seconds"},
    },
    "0.5.15": {
        "info": {"status", "max_total_num_tokens", "max_req_input_len", "internal_states",
                 "version", "kv_events"},
        "meta": {"spec_accepted_drafts", "spec_proposed_drafts", "spec_accept_histogram",
                 "spec_num_correct_drafts", "spec_num_proposed_drafts",
                 "spec_correct_drafts_histogram"},
        "no_meta": {"total_retractions", "weight_versions"},
        "no_metrics": {"sglang:startup_time_seconds"},
    },
    "0.5.19": {
        "info": {"status", "max_total_num_tokens", "max_req_input_len", "internal_states",
                 "version", "kv_events", "startup_time"},
        "meta": {"spec_accepted_drafts", "spec_proposed_drafts", "spec_accept_histogram",
                 "spec_num_correct_drafts", "spec_num_proposed_drafts",
                 "spec_correct_drafts_histogram", "weight_versions"},
        "no_meta": {"first_token_latency", "storage_prefetch_wait"},
        "no_metrics": set(),
    },
    "0.5.23": {
        "info": {"status", "max_total_num_tokens", "max_req_input_len", "internal_states",
                 "version", "kv_events", "startup_time", "launch_command", "frontend",
                 "hicache_object_layout"},
        "meta": {"spec_num_correct_drafts", "spec_num_proposed_drafts",
                 "spec_correct_drafts_histogram", "first_token_latency"},
        "no_meta": {"spec_accepted_drafts", "spec_proposed_drafts", "spec_accept_histogram"},
        "no_metrics": set(),
    },
}  # fmt: skip


@pytest.mark.parametrize("version", list(VERSION_SHAPES))
def test_shapes_per_version(start_emulator: StartEmulator, model_dirs: ModelDirs, version: str):
    shape = VERSION_SHAPES[version]
    window = (
        "--speculative-dflash-draft-window-size"
        if version == "0.5.11"
        else ("--speculative-draft-window-size")
    )
    flags = ["--model-path", str(model_dirs.model), "--speculative-algorithm", "DFLASH",
             "--speculative-draft-model-path", str(model_dirs.drafter), window, "2048",
             "--enable-metrics"]  # fmt: skip
    emu = start_emulator(flags, env={"SGLANG_EMU_VERSION": version, "SGLANG_EMU_TIME_SCALE": "0"})
    info = emu.get("/server_info").json()
    assert info["version"] == version
    assert set(info) - set(server_args_fields(version)) == shape["info"]
    meta = generate(emu, CODE, 32)["meta_info"]
    assert {"spec_verify_ct", "spec_accept_length", "spec_accept_rate"} <= set(meta)
    assert shape["meta"] <= set(meta), shape["meta"] - set(meta)
    assert not shape["no_meta"] & set(meta), shape["no_meta"] & set(meta)
    text = emu.get("/metrics").body.decode()
    for name in set(METRIC_NAMES) - shape["no_metrics"]:
        assert f"# TYPE {name} " in text, name
    for name in shape["no_metrics"]:
        assert name not in text, name


def test_ddtree_fork_end_to_end(start_emulator: StartEmulator, model_dirs: ModelDirs):
    flags = ["--model-path", str(model_dirs.model), "--speculative-algorithm", "DDTREE",
             "--speculative-draft-model-path", str(model_dirs.drafter),
             "--speculative-ddtree-budget", "32",
             "--speculative-dflash-draft-window-size", "2048"]  # fmt: skip
    env = {"SGLANG_EMU_VERSION": "ddtree", "SGLANG_DDTREE_MAX_TOPK": "4",
           "SGLANG_EMU_TIME_SCALE": "0"}  # fmt: skip
    emu = start_emulator(flags, env=env)
    info = emu.get("/server_info").json()
    assert info["version"] == "0.5.23+ddtree"
    assert info["speculative_algorithm"] == "DDTREE"
    assert info["speculative_ddtree_budget"] == 32
    assert info["speculative_draft_window_size"] == 2048
    assert "speculative_ddtree_max_topk" not in info  # SGLANG_DDTREE_MAX_TOPK: env only
    meta = generate(emu, CODE, 48)["meta_info"]
    assert meta["spec_num_proposed_drafts"] == meta["spec_verify_ct"] * 32  # verify width 33
    assert meta["spec_accept_length"] > 1
