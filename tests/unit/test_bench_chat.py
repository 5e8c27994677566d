"""bench.chat: conversations rendered by the server's template, cut to exactly `context` tokens
without touching the template's structure."""

from __future__ import annotations

import re

import pytest

from bench.chat import ChatRenderer, cyclic, span
from bench.conversation import MATERIAL_SLOT, Conversation
from bench.prompt_sets import PromptBuilder

_WORD = re.compile(r"\s*(?:\w+|[^\w\s])")
_VOCAB: dict[str, int] = {}


def tok(text: str) -> list[int]:
    """Words and punctuation, each its own id; "\\n\\n" merges into one (a boundary a slot can
    change, as real BPE merges do)."""
    out = []
    for piece in _WORD.findall(text.replace("\n\n", " ¶ ")):
        out.append(_VOCAB.setdefault(piece.strip(), len(_VOCAB) + 10))
    return out


START, END = 1, 2  # <|im_start|>, <|im_end|>


class TemplateServer:
    """ChatML over the toy tokenizer: what /tokenize answers for messages."""

    def __init__(self) -> None:
        self.calls = 0

    async def render_chat(self, messages: list[dict[str, str]]) -> list[int]:
        self.calls += 1
        ids: list[int] = []
        for m in messages:
            ids += [START, *tok(m["role"]), *tok(m["content"]), END]
        return [*ids, START, *tok("assistant")]


MATERIAL = " ".join(f"word{i}" for i in range(5000))


def material(name: str) -> str:
    assert name == "doc"
    return MATERIAL


def slotted(offset: int = 0) -> Conversation:
    return Conversation(
        (
            ("system", "You answer questions about documents."),
            ("user", f"Here is the document:\n\n{MATERIAL_SLOT}\n\nWhat is word7 about?"),
        ),
        source="document",
        max_tokens=128,
        material_corpus="doc",
        material_offset=offset,
        material_chars=200,
    )


QUESTION_IDS = tok("What is word7 about?")
TAIL = [END, START, *tok("assistant")]


@pytest.mark.parametrize("context", [40, 41, 97, 500, 3000])
async def test_a_slot_is_filled_and_cut_to_exactly_the_context(context: int) -> None:
    server = TemplateServer()
    ids = await ChatRenderer(server, material).exact(slotted(), context)
    assert ids is not None and len(ids) == context
    # the question and the template's tail survive; the material was cut from its end
    end = QUESTION_IDS + TAIL
    assert ids[-len(end) :] == end
    assert ids[:2] == [START, tok("system")[0]]


async def test_material_starts_at_the_offset_and_cuts_at_its_end() -> None:
    renderer = ChatRenderer(TemplateServer(), material)
    ids = await renderer.exact(slotted(offset=MATERIAL.index("word100 ")), 80)
    assert ids is not None
    assert tok("word100 word101") == ids[ids.index(tok("word100")[0]) :][:2]


async def test_a_conversation_too_long_without_material_does_not_fit() -> None:
    renderer = ChatRenderer(TemplateServer(), material)
    base = len(await TemplateServer().render_chat(slotted().with_material("")))
    assert await renderer.exact(slotted(), base - 1) is None


async def test_natural_uses_material_chars_and_no_cut() -> None:
    server = TemplateServer()
    ids = await ChatRenderer(server, material).natural(slotted())
    assert ids == await server.render_chat(slotted().with_material(MATERIAL[:200]))


def user_conv(text: str) -> Conversation:
    return Conversation((("user", text),), source="mine")


async def test_without_a_slot_the_longest_message_loses_its_middle() -> None:
    text = "Title line. " + " ".join(f"w{i}" for i in range(300)) + " Final question?"
    renderer = ChatRenderer(TemplateServer(), material)
    full = await TemplateServer().render_chat([{"role": "user", "content": text}])
    ids = await renderer.exact(user_conv(text), 100)
    assert ids is not None and len(ids) == 100
    assert ids[:5] == full[:5]  # the beginning of the content
    assert ids[-8:] == full[-8:]  # its end (the question) and the template's tail


async def test_without_a_slot_a_shorter_conversation_cannot_be_used() -> None:
    renderer = ChatRenderer(TemplateServer(), material)
    assert await renderer.exact(user_conv("short question?"), 100) is None
    n = len(await TemplateServer().render_chat([{"role": "user", "content": "short question?"}]))
    assert await renderer.exact(user_conv("short question?"), n) is not None


def test_span_finds_the_differing_middle() -> None:
    assert span([1, 2, 9, 9, 9, 3, 4], [1, 2, 3, 4]) == (2, 2)
    assert span([1, 2, 3], [1, 2, 3]) == (3, 0)


def test_cyclic_wraps() -> None:
    assert cyclic("abcde", 3, 7) == "deabcde"
    with pytest.raises(ValueError):
        cyclic("", 0, 3)


class BuilderServer(TemplateServer):
    async def tokenize(self, texts: list[str]) -> list[list[int]] | None:
        return None

    async def count_prompt_tokens(self, text: str) -> int:
        raise AssertionError("chat prompts are never counted by generation")

    async def vocab_size(self) -> int:
        return 1000


async def test_builder_builtin_chat_is_exact_and_cycles_through_domains() -> None:
    builder = PromptBuilder(BuilderServer())
    prompts = await builder.build("chat", 1500, 10, seed=3)
    assert [len(p.input_ids or []) for p in prompts] == [1500] * 10
    assert len({p.source for p in prompts}) == 5  # interleaved: every domain comes round
    assert all(p.max_tokens for p in prompts)
    assert "chat template" in builder.method["chat"]
    again = await PromptBuilder(BuilderServer()).build("chat", 1500, 10, seed=3)
    assert [p.input_ids for p in again] == [p.input_ids for p in prompts]


async def test_builder_dataset_skips_conversations_too_short_and_names_a_context_none_fits() -> (
    None
):
    long_text = " ".join(f"x{i}" for i in range(200))
    dataset = [user_conv("tiny?"), user_conv(long_text), Conversation((("user", "b?"),), "other")]
    builder = PromptBuilder(BuilderServer(), dataset=dataset)
    prompts = await builder.build("dataset", 150, 3, seed=0)
    assert [len(p.input_ids or []) for p in prompts] == [150] * 3
    assert {p.source for p in prompts} == {"mine"}  # the only one long enough, repeated
    with pytest.raises(Exception, match="no conversation of the dataset is long enough"):
        await builder.build("dataset", 5000, 2, seed=0)


async def test_builder_dataset_natural_keeps_every_request_as_it_is() -> None:
    dataset = [user_conv("first?"), Conversation((("user", "second one?"),), "other", 7)]
    prompts = await PromptBuilder(BuilderServer(), dataset=dataset).build("dataset", 0, 2, seed=1)
    assert sorted(len(p.input_ids or []) for p in prompts) == [7, 8]
    assert {(p.source, p.max_tokens) for p in prompts} == {("mine", None), ("other", 7)}
