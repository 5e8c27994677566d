"""The emulator's chat template: /tokenize with messages, /v1/chat/completions, validation and
the per-release support (0.5.11's TokenizeRequest has no messages)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import EmulatorProcess, ModelDirs, StartEmulator
from sglang_emulator import chat_template, release, tokenizer
from sglang_emulator.tokenizer import EOS, IM_END, IM_START

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
USER = {"role": "user", "content": "The capital city of France is"}
CONVERSATIONS = {
    "one_turn": [USER],
    "with_system": [SYSTEM, USER],
    "multi_turn": [
        SYSTEM,
        {"role": "user", "content": "Name a city in France."},
        {"role": "assistant", "content": "Paris."},
        {"role": "user", "content": "And another one?"},
    ],
    "text_parts": [{"role": "user", "content": [{"type": "text", "text": "Hello"},
                                                {"type": "text", "text": "there"}]}],
    "null_system": [{"role": "system", "content": None}, USER],
    "tool": [USER, {"role": "assistant", "content": "Let me look."},
             {"role": "tool", "content": "Paris"}],
}  # fmt: skip


def ids_of(text: str) -> list[int]:
    return tokenizer.encode(text)


def chatml(*messages: tuple[str, str], generation_prompt: bool = True) -> list[int]:
    """What the template must give, built by hand: ChatML, one id per special token."""
    out: list[int] = []
    for role, content in messages:
        out += [IM_START, tokenizer.token_id(role), *ids_of(content), IM_END]
    if generation_prompt:
        out += [IM_START, tokenizer.token_id("assistant")]
    return out


@pytest.fixture(scope="module")
def server(start_module_emulator: StartEmulator, model_dirs: ModelDirs) -> EmulatorProcess:
    return start_module_emulator(
        ["--model-path", str(model_dirs.model)], env={"SGLANG_EMU_TIME_SCALE": "0"}
    )


def tokenize(emu: EmulatorProcess, body: dict[str, Any], path: str = "/tokenize") -> Any:
    res = emu.post(path, body)
    assert res.status == 200, res.body
    return res.json()


def test_special_tokens_are_single_ids():
    assert len({tokenizer.ENDOFTEXT, IM_START, IM_END}) == 3
    assert ids_of("<|im_start|>user\nhi<|im_end|>\n<|endoftext|>") == [
        IM_START, tokenizer.token_id("user"), tokenizer.token_id("hi"), IM_END,
        tokenizer.ENDOFTEXT,
    ]  # fmt: skip
    assert EOS == IM_END
    # no ordinary word hashes onto a special id
    assert all(not tokenizer.is_special(tokenizer.token_id(f"w{i}")) for i in range(50_000))


@pytest.mark.parametrize("path", ["/tokenize", "/v1/tokenize"])
def test_tokenize_renders_chatml(server: EmulatorProcess, path: str):
    out = tokenize(server, {"messages": [SYSTEM, USER]}, path)
    assert out["tokens"] == chatml(("system", SYSTEM["content"]), ("user", USER["content"]))
    assert out["count"] == len(out["tokens"])
    assert out["max_model_len"] == 16384
    assert set(out) == {"tokens", "count", "max_model_len"}


def test_tokenize_messages_like_sglang_0_5_23(server: EmulatorProcess):
    msgs = [USER, {"role": "assistant", "content": "Paris."}]
    # Unset: a final assistant message is rendered as a user message (continue_final_message
    # false), the generation prompt added (serving_chat._handle_last_assistant_message).
    assert tokenize(server, {"messages": msgs})["tokens"] == chatml(
        ("user", USER["content"]), ("user", "Paris.")
    )
    # add_generation_prompt given: the messages as they are.
    assert tokenize(server, {"messages": msgs, "add_generation_prompt": False})["tokens"] == (
        chatml(("user", USER["content"]), ("assistant", "Paris."), generation_prompt=False)
    )
    assert tokenize(server, {"messages": msgs, "add_generation_prompt": True})["tokens"] == (
        chatml(("user", USER["content"]), ("assistant", "Paris."))
    )
    # continue_final_message: the assistant's text goes on after the generation prompt.
    cont = tokenize(server, {"messages": msgs, "continue_final_message": True})["tokens"]
    assert cont == chatml(("user", USER["content"])) + ids_of("Paris.")
    res = server.post(
        "/tokenize",
        {"messages": msgs, "add_generation_prompt": False, "continue_final_message": True},
    )
    assert res.status == 400 and "continue_final_message needs" in res.json()["message"]


@pytest.mark.parametrize("name", list(CONVERSATIONS))
@pytest.mark.parametrize("stream", [False, True])
def test_chat_prompt_tokens_equal_the_tokenize_count(
    server: EmulatorProcess, name: str, stream: bool
):
    messages = CONVERSATIONS[name]
    count = tokenize(server, {"messages": messages})["count"]
    body: dict[str, Any] = {"messages": messages, "max_tokens": 5, "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True}
    res = server.post("/v1/chat/completions", body)
    assert res.status == 200, res.body
    usage = json.loads(res.sse()[-2])["usage"] if stream else res.json()["usage"]
    assert usage["prompt_tokens"] == count
    # and /generate with those ids is the same request (prompt ids and output)
    ids = tokenize(server, {"messages": messages})["tokens"]
    gen = server.post("/generate", {"input_ids": ids, "sampling_params": {"max_new_tokens": 5}})
    assert gen.json()["meta_info"]["prompt_tokens"] == count


def test_chat_and_generate_of_the_rendered_ids_answer_the_same(server: EmulatorProcess):
    messages = CONVERSATIONS["multi_turn"]
    ids = tokenize(server, {"messages": messages})["tokens"]
    chat = server.post("/v1/chat/completions", {"messages": messages, "max_tokens": 300}).json()
    gen = server.post("/generate", {"input_ids": ids, "sampling_params": {"max_new_tokens": 300}})
    out = gen.json()
    assert chat["choices"][0]["message"]["content"] == out["text"]
    assert chat["usage"]["completion_tokens"] == out["meta_info"]["completion_tokens"]


def validation_error(res: Any) -> str:
    """The FastAPI validation error SGLang answers: 400, ErrorResponse of type Bad Request."""
    assert res.status == 400, res.body
    body = res.json()
    assert set(body) == {"object", "message", "type", "param", "code"}
    assert (body["object"], body["type"], body["param"], body["code"]) == (
        "error", "Bad Request", None, 400,
    )  # fmt: skip
    return str(body["message"])


BAD_MESSAGES = {
    "unknown_role": ([{"role": "wizard", "content": "hi"}], "'role' must be one of"),
    "capitalised_user": ([{"role": "User", "content": "hi"}], "Input should be 'user'"),
    "user_without_content": ([{"role": "user"}], "Field required"),
    "no_role": ([{"content": "hi"}], "Field required"),
    "not_an_object": (["hi"], "valid dictionary"),
    "not_a_list": ("hi", "valid list"),
    "content_a_number": ([{"role": "user", "content": 3}], "valid string"),
}


@pytest.mark.parametrize("case", list(BAD_MESSAGES))
@pytest.mark.parametrize("path", ["/tokenize", "/v1/chat/completions"])
def test_bad_messages_are_validation_errors(server: EmulatorProcess, case: str, path: str):
    messages, words = BAD_MESSAGES[case]
    message = validation_error(server.post(path, {"messages": messages}))
    assert words in message
    assert "validation error" in message and f"POST {path}" in message


@pytest.mark.parametrize("path", ["/tokenize", "/v1/chat/completions"])
def test_empty_messages(server: EmulatorProcess, path: str):
    res = server.post(path, {"messages": []})
    assert res.status == 400
    assert res.json() == {"object": "error", "message": "Messages cannot be empty.",
                          "type": "BadRequestError", "param": None, "code": 400}  # fmt: skip


def test_tokenize_needs_exactly_one_of_prompt_and_messages(server: EmulatorProcess):
    for body in ({}, {"prompt": "hi", "messages": [USER]}):
        assert "Exactly one of 'prompt' or 'messages'" in validation_error(
            server.post("/tokenize", body)
        )


def test_role_names_are_normalised_like_pydantic():
    assert chat_template.parse_messages([{"role": "SYSTEM", "content": "x"}]) == [("system", "x")]
    with pytest.raises(chat_template.ValidationFailure) as e:
        chat_template.parse_messages([{"role": "User", "content": "x"}])
    assert len(e.value.errors) == 2  # one per union member, as pydantic reports


def test_generated_text_leaves_the_end_of_turn_out(server: EmulatorProcess):
    body = {"messages": [USER], "max_tokens": 400}
    out = server.post("/v1/chat/completions", body).json()
    assert out["choices"][0]["finish_reason"] == "stop"
    assert "<|im_end|>" not in out["choices"][0]["message"]["content"]
    assert "im_end" not in json.dumps(out)


@pytest.mark.parametrize("version", ["0.5.11", "0.5.15", "0.5.19", "0.5.23"])
def test_tokenize_messages_per_release(
    start_emulator: StartEmulator, model_dirs: ModelDirs, version: str
):
    emu = start_emulator(
        ["--model-path", str(model_dirs.model)],
        env={"SGLANG_EMU_VERSION": version, "SGLANG_EMU_TIME_SCALE": "0"},
    )
    assert emu.post("/tokenize", {"prompt": "hi"}).status == 200
    assert emu.post("/v1/chat/completions", {"messages": [USER], "max_tokens": 2}).status == 200
    msgs = [USER, {"role": "assistant", "content": "Paris."}]
    res = emu.post("/tokenize", {"messages": msgs, "add_generation_prompt": False})
    if version == "0.5.11":
        # 0.5.11's TokenizeRequest: prompt is required and messages unknown (protocol.py:1118)
        message = validation_error(res)
        assert "'loc': ('body', 'prompt'), 'msg': 'Field required'" in message
        assert "line 1524, in openai_v1_tokenize\n    POST /tokenize" in message
        return
    tokens = res.json()["tokens"]
    if version == "0.5.23":
        assert tokens[-1] == IM_END  # add_generation_prompt honoured
    else:  # an unknown field before 0.5.23: rendered as for a chat completion
        assert tokens == chatml(("user", USER["content"]), ("user", "Paris."))


@pytest.mark.parametrize(
    ("version", "roles"),
    [("0.5.11", 5), ("0.5.15", 6), ("0.5.19", 6), ("0.5.23", 7), ("ddtree", 7)],
)
def test_message_roles_per_release(version: str, roles: int):
    known = chat_template.generic_roles(release(version))
    assert len(known) == roles
    for role in chat_template.GENERIC_ROLES:
        msg = [{"role": role.upper(), "content": "x"}]
        if role in known:
            assert chat_template.parse_messages(msg, known) == [(role, "x")]
        else:
            with pytest.raises(chat_template.ValidationFailure):
                chat_template.parse_messages(msg, known)
