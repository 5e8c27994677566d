"""Natural ends of turn: without ignore_eos a request ends where the emulator's model emits
<|im_end|>, as SGLang reports a matched stop token (FINISH_MATCHED_TOKEN); with ignore_eos it
runs on to max_new_tokens."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import EmulatorProcess, ModelDirs, StartEmulator
from sglang_emulator.content import NATURAL_LENGTH
from sglang_emulator.tokenizer import EOS

CHAT = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "My team keeps missing deadlines. Where should I start?"},
]
CODE = [{"role": "user", "content": "Fix it:\n```python\ndef first(xs):\n    return xs[0]\n```"}]
STOP = {"type": "stop", "matched": EOS}


@pytest.fixture(scope="module")
def spec(start_module_emulator: StartEmulator, model_dirs: ModelDirs) -> EmulatorProcess:
    flags = ["--model-path", str(model_dirs.model), "--speculative-algorithm", "DFLASH",
             "--speculative-draft-model-path", str(model_dirs.drafter),
             "--enable-metrics"]  # fmt: skip
    return start_module_emulator(flags, env={"SGLANG_EMU_TIME_SCALE": "0", "SGLANG_EMU_SEED": "5"})


def rendered(emu: EmulatorProcess, messages: list[dict[str, Any]]) -> list[int]:
    return list(emu.post("/tokenize", {"messages": messages}).json()["tokens"])


def generate(emu: EmulatorProcess, ids: list[int], max_new: int, **params: Any) -> dict[str, Any]:
    body = {"input_ids": ids, "sampling_params": {"max_new_tokens": max_new, **params}}
    res = emu.post("/generate", body)
    assert res.status == 200, res.body
    return dict(res.json())


def record(emu: EmulatorProcess, rid: str) -> dict[str, Any]:
    return next(r for r in emu.get("/emulator/requests").json()["requests"] if r["rid"] == rid)


@pytest.mark.parametrize(("messages", "domain"), [(CHAT, "chat"), (CODE, "code")])
def test_natural_end_is_a_matched_stop_token(
    spec: EmulatorProcess, messages: list[dict[str, Any]], domain: str
):
    out = generate(spec, rendered(spec, messages), 1000)
    meta, ids = out["meta_info"], out["output_ids"]
    # schedule_batch.py: FINISH_MATCHED_TOKEN.to_json; the EOS stays in output_ids
    # (output_ids_through_stop keeps the stop position) and counts in completion_tokens.
    assert meta["finish_reason"] == STOP
    assert ids[-1] == EOS and EOS not in ids[:-1]
    assert meta["completion_tokens"] == len(ids)
    low, high = NATURAL_LENGTH[domain]
    assert low <= len(ids) <= high
    assert "<|im_end|>" not in out["text"] and out["text"]
    # accept-length statistics stay consistent when the last verify step stops at the EOS
    assert sum(meta["spec_correct_drafts_histogram"]) == meta["spec_verify_ct"]
    assert meta["spec_accept_length"] == pytest.approx(len(ids) / meta["spec_verify_ct"])
    rec = record(spec, meta["id"])
    assert rec["finish_reason"] == STOP and rec["category"] == domain
    assert rec["completion_tokens"] == len(ids) == sum(n for _, n in rec["chunks"])


def test_the_end_of_turn_does_not_depend_on_max_new_tokens(spec: EmulatorProcess):
    ids = rendered(spec, CHAT)
    natural = generate(spec, ids, 1000)["output_ids"]
    n = len(natural)
    assert generate(spec, ids, 600)["output_ids"] == natural
    exact = generate(spec, ids, n)  # the EOS is the last token allowed: still a stop
    assert exact["meta_info"]["finish_reason"] == STOP and exact["output_ids"] == natural
    short = generate(spec, ids, n - 1)
    assert short["meta_info"]["finish_reason"] == {"type": "length", "length": n - 1}
    assert short["output_ids"] == natural[:-1]


def test_ignore_eos_runs_past_the_end_of_turn(spec: EmulatorProcess):
    ids = rendered(spec, CHAT)
    natural = generate(spec, ids, 1000)["output_ids"]
    n = len(natural)
    out = generate(spec, ids, n + 50, ignore_eos=True)
    meta = out["meta_info"]
    assert meta["finish_reason"] == {"type": "length", "length": n + 50}
    assert meta["completion_tokens"] == n + 50 == len(out["output_ids"])
    assert out["output_ids"][:n] == natural  # the EOS sampled at its place, then more
    assert out["output_ids"][n - 1] == EOS
    assert record(spec, meta["id"])["finish_reason"]["type"] == "length"


def test_natural_stream(spec: EmulatorProcess):
    ids = rendered(spec, CHAT)
    natural = generate(spec, ids, 1000)
    body = {"input_ids": ids, "sampling_params": {"max_new_tokens": 1000}, "stream": True}
    events = spec.post("/generate", body).sse()
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    reasons = [c["meta_info"]["finish_reason"] for c in chunks]
    assert reasons == [None] * (len(chunks) - 1) + [STOP]
    assert chunks[-1]["output_ids"] == natural["output_ids"]
    assert chunks[-1]["text"] == natural["text"]
    assert chunks[-1]["meta_info"]["completion_tokens"] == len(natural["output_ids"])


@pytest.mark.parametrize("stream", [False, True])
def test_openai_chat_stops_at_the_end_of_turn(spec: EmulatorProcess, stream: bool):
    body: dict[str, Any] = {"messages": CHAT, "max_tokens": 1000, "stream": stream}
    natural = generate(spec, rendered(spec, CHAT), 1000)["meta_info"]["completion_tokens"]
    if not stream:
        out = spec.post("/v1/chat/completions", body).json()
        choice = out["choices"][0]
        assert (choice["finish_reason"], choice["matched_stop"]) == ("stop", EOS)
        assert out["usage"]["completion_tokens"] == natural
        fixed = spec.post("/v1/chat/completions", {**body, "ignore_eos": True}).json()
        assert fixed["choices"][0]["finish_reason"] == "length"
        assert fixed["choices"][0]["matched_stop"] is None
        assert fixed["usage"]["completion_tokens"] == 1000
        return
    body["stream_options"] = {"include_usage": True}
    chunks = [json.loads(e) for e in spec.post("/v1/chat/completions", body).sse()[:-1]]
    finish = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    assert len(finish) == 1 and finish[0] is chunks[-2]  # then the usage chunk
    assert finish[0]["choices"][0]["matched_stop"] == EOS
    assert finish[0]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["usage"]["completion_tokens"] == natural


def test_openai_completions_stop_too(spec: EmulatorProcess):
    body = {"prompt": "Tell me about the capital city of France.", "max_tokens": 1000}
    choice = spec.post("/v1/completions", body).json()["choices"][0]
    assert (choice["finish_reason"], choice["matched_stop"]) == ("stop", EOS)
    fixed = spec.post("/v1/completions", {**body, "ignore_eos": True}).json()
    assert fixed["choices"][0]["finish_reason"] == "length"
    assert fixed["usage"]["completion_tokens"] == 1000


def test_health_probes_and_metrics_unaffected(spec: EmulatorProcess):
    assert spec.get("/health_generate").status == 200
    assert spec.get("/health").status == 200
    before = spec.get("/metrics").body.decode()
    out = generate(spec, rendered(spec, CODE), 1000)
    after = spec.get("/metrics").body.decode()

    def total(text: str) -> float:
        line = next(x for x in text.splitlines() if x.startswith("sglang:generation_tokens_total"))
        return float(line.rsplit(" ", 1)[1])

    assert total(after) - total(before) == out["meta_info"]["completion_tokens"]


def test_fixed_accept_stops_at_the_end_of_turn(
    start_emulator: StartEmulator, model_dirs: ModelDirs
):
    flags = ["--model-path", str(model_dirs.model), "--speculative-algorithm", "DFLASH",
             "--speculative-draft-model-path", str(model_dirs.drafter)]  # fmt: skip
    env = {"SGLANG_EMU_TIME_SCALE": "0", "SGLANG_EMU_FIXED_ACCEPT": "7"}
    emu = start_emulator(flags, env=env)
    out = generate(emu, rendered(emu, CODE), 1000)
    rec = record(emu, out["meta_info"]["id"])
    steps = [n for _, n in rec["chunks"]]
    n = len(out["output_ids"])
    assert steps[0] == 1 and all(s == 7 for s in steps[1:-1]) and steps[-1] == ((n - 1) % 7 or 7)
    assert sum(steps) == n and out["output_ids"][-1] == EOS
