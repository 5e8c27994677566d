"""The served model's chat template: ChatML, as Qwen2-style models (and the recording's tiny
Qwen2, tests/real_sglang/make_tiny_model.py) render a conversation:

    <|im_start|>{role}\\n{content}<|im_end|>\\n   per message, then <|im_start|>assistant\\n

`/v1/chat/completions` and `/tokenize` with `messages` share this, as SGLang's do
(OpenAIServingTokenize._tokenize_chat_request calls OpenAIServingChat._process_messages), so a
chat completion's `usage.prompt_tokens` is the `/tokenize` count of the same messages. Message
validation follows SGLang 0.5.23's pydantic models (entrypoints/openai/protocol.py:748-807):
a message is an object whose role is "user" (content required: a string or a list of parts)
or, case-insensitively, one of the generic roles (content optional).
"""

from __future__ import annotations

from typing import Any

from . import tokenizer

GENERIC_ROLES = ("system", "assistant", "tool", "function", "developer", "latest_reminder", "root")


def generic_roles(release: tuple[int, ...]) -> tuple[str, ...]:
    """The case-insensitive roles of the release's ChatCompletionMessageGenericParam: 0.5.11
    five (its message names them in another order), 0.5.15-0.5.19 "latest_reminder" too, 0.5.23
    "root" too."""
    if release >= (0, 5, 23):
        return GENERIC_ROLES
    if release >= (0, 5, 15):
        return GENERIC_ROLES[:6]
    return GENERIC_ROLES[:5]


def _role_error(roles: tuple[str, ...]) -> str:
    if len(roles) == 5:  # 0.5.11 protocol.py:520
        return (
            "'role' must be one of 'system', 'developer', 'assistant', 'tool', or 'function' "
            "(case-insensitive)."
        )
    allowed = ", ".join(repr(r) for r in roles)
    return f"'role' must be one of {allowed} (case-insensitive)."


GENERIC = "ChatCompletionMessageGenericParam"
USER = "ChatCompletionMessageUserParam"


class ValidationFailure(ValueError):
    """A request body pydantic refuses: FastAPI's RequestValidationError (SGLang answers 400)."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__(f"{len(errors)} validation error(s)")
        self.errors = errors


class TemplateError(ValueError):
    """A request SGLang's serving code refuses (create_error_response: 400 BadRequestError)."""


def _content(
    raw: Any, loc: tuple[Any, ...], member: str
) -> tuple[str | None, list[dict[str, Any]]]:
    """The message content as the template sees it: text parts of a list are joined with
    spaces (jinja_template_utils.process_content_for_template_format, 'string' format)."""
    if raw is None or isinstance(raw, str):
        return raw, []
    if isinstance(raw, list):
        texts = []
        for part in raw:
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                break
            if part["type"] in ("text", "input_text"):
                if not isinstance(part.get("text"), str):
                    break
                texts.append(part["text"])
        else:
            return " ".join(texts), []
    error = {
        "type": "string_type",
        "loc": (*loc, member, "content", "str"),
        "msg": "Input should be a valid string",
        "input": raw,
    }
    return None, [error]


def parse_messages(raw: Any, roles: tuple[str, ...] = GENERIC_ROLES) -> list[tuple[str, str]]:
    """(role, content) pairs of a request's `messages`; raises ValidationFailure like pydantic
    (each union member's error for a bad message) and TemplateError for an empty list. `roles`:
    the generic roles of the emulated release (generic_roles)."""
    if not isinstance(raw, list):
        msg = "Input should be a valid list"
        raise ValidationFailure(
            [{"type": "list_type", "loc": ("body", "messages"), "msg": msg, "input": raw}]
        )
    out: list[tuple[str, str]] = []
    errors: list[dict[str, Any]] = []
    for i, m in enumerate(raw):
        loc = ("body", "messages", i)
        if not isinstance(m, dict):
            msg = "Input should be a valid dictionary or object to extract fields from"
            errors += [
                {"type": "model_type", "loc": (*loc, member), "msg": msg, "input": m}
                for member in (GENERIC, USER)
            ]
            continue
        role = m.get("role")
        if role == "user":
            if "content" not in m or m["content"] is None:
                errors.append(
                    {"type": "missing", "loc": (*loc, USER, "content"), "msg": "Field required",
                     "input": m}
                )  # fmt: skip
                continue
            content, errs = _content(m["content"], loc, USER)
        elif isinstance(role, str) and role.lower() in roles:
            role = role.lower()
            content, errs = _content(m.get("content"), loc, GENERIC)
        else:
            why = _role_error(roles) if isinstance(role, str) else "'role' must be a string"
            if role is None:
                errors.append(
                    {"type": "missing", "loc": (*loc, GENERIC, "role"), "msg": "Field required",
                     "input": m}
                )  # fmt: skip
            else:
                errors.append(
                    {"type": "value_error", "loc": (*loc, GENERIC, "role"),
                     "msg": f"Value error, {why}", "input": role}
                )  # fmt: skip
            errors.append(
                {"type": "literal_error", "loc": (*loc, USER, "role"),
                 "msg": "Input should be 'user'", "input": role}
            )  # fmt: skip
            continue
        if errs:
            errors += errs
            continue
        out.append((role, content or ""))
    if errors:
        raise ValidationFailure(errors)
    if not out:
        raise TemplateError("Messages cannot be empty.")  # serving_chat._validate_request
    return out


def render(
    messages: list[tuple[str, str]],
    add_generation_prompt: bool | None = None,
    continue_final_message: bool = False,
) -> list[int]:
    """The prompt ids, as SGLang 0.5.23's OpenAIServingChat._apply_jinja_template builds them.

    add_generation_prompt None (a chat completion, or /tokenize without the field): a final
    assistant message becomes a user message, or with continue_final_message its content is
    appended after the generation prompt (_handle_last_assistant_message); the generation
    prompt is added. True/False (/tokenize from 0.5.23): the messages as given, the generation
    prompt only when true."""
    msgs = list(messages)
    prefix = None
    if (add_generation_prompt is None or continue_final_message) and msgs:
        role, content = msgs[-1]
        if role == "assistant":
            if continue_final_message:
                prefix = content
                msgs.pop()
            else:
                msgs[-1] = ("user", content)
    text = "".join(f"<|im_start|>{role}\n{content}<|im_end|>\n" for role, content in msgs)
    if add_generation_prompt is not False:
        text += "<|im_start|>assistant\n"
    ids = tokenizer.encode(text)
    if prefix:
        ids += tokenizer.encode(prefix)
    return ids
