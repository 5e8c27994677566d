"""Prompt domains: how the emulator decides them, what each accepts, what each says."""

from __future__ import annotations

import random
import re
import statistics
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import EmulatorProcess, ModelDirs, StartEmulator
from sglang_emulator import category, chat_template, content, tokenizer
from sglang_emulator.perf_model import P_ACCEPT, PerfModel, SpecShape, expected_accept_length
from sglang_emulator.settings import Settings

README = Path(__file__).parent / "emulator" / "README.md"
ORDER = ("json", "code", "math", "document", "chat", "random")  # most accepted first
DFLASH = SpecShape(algorithm="DFLASH", num_draft_tokens=16, window=2048)
DOCUMENT = (
    "The committee met on Tuesday to review the annual plan. It heard the report of the "
    "treasurer, who said that the costs of the new school had risen by a third since the "
    "spring, and that the work would end a year later than first thought. "
)
SAMPLES: dict[str, list[dict[str, str]]] = {
    "code": [{"role": "user", "content": "Why does this fail?\n```python\ndef first(xs):\n"
                                         "    return xs[0]\n\nprint(first([]))\n```"}],
    "math": [{"role": "user", "content": "Solve 3x + 5 = 20 for x, then compute 2x^2 - 4."}],
    "json": [{"role": "system", "content": "Answer in JSON only."},
             {"role": "user", "content": "Ada Lovelace was born in 1815 in London."}],
    "document": [{"role": "user", "content": "Summarize the passage: " + DOCUMENT * 3}],
    "chat": [{"role": "system", "content": "You are a helpful assistant."},
             {"role": "user", "content": "My team keeps missing deadlines. Where to start?"}],
}  # fmt: skip
JSON_DATA = (
    '{"id": 7, "name": "Ada", "tags": ["math", "code"], "address": {"city": "London", '
    '"zip": "NW1"}, "active": true}\n'
)


def render(messages: list[dict[str, str]]) -> list[int]:
    return chat_template.render(chat_template.parse_messages(messages))


@pytest.mark.parametrize("domain", list(SAMPLES))
def test_domain_of_chat_prompts(domain: str):
    assert category.detect(render(SAMPLES[domain])) == domain


def test_domain_of_plain_prompts_and_ids():
    enc = tokenizer.encode
    assert category.detect(enc("def add(a, b):\n    return a + b\n\nimport os\nx = {};")) == "code"
    assert category.detect(enc("Problem 3. Solve 5x + 7 = 22. Then x = 3.")) == "math"
    assert category.detect(enc(JSON_DATA * 5)) == "json"
    assert category.detect(enc("Tell me about the capital city of France.")) == "chat"
    assert category.detect(enc("qz vrk plth xw mnbv trq zzk wplr gh kkt" * 3)) == "random"
    assert category.detect(random.Random(1).choices(range(129_000), k=500)) == "random"
    assert category.detect([]) == "chat"


def test_a_long_text_is_a_document_and_a_long_conversation_is_not():
    long_text = DOCUMENT * 40  # ~2000 tokens in one message
    assert category.detect(tokenizer.encode(long_text)) == "document"
    question = [{"role": "user", "content": long_text + "\nWho reported the costs?"}]
    assert category.detect(render(question)) == "document"
    turns = [{"role": r, "content": DOCUMENT} for r in ("user", "assistant") * 20]
    assert len(render(turns)) > category.DOCUMENT_TOKENS
    assert category.detect(render(turns)) == "chat"


def test_what_the_ask_names_decides():
    material = DOCUMENT * 3  # ~150 tokens: too short to be a document by its length alone

    def ask(intro: str, request: str) -> str:
        return category.detect(
            render([{"role": "user", "content": f"{intro}\n\n{material}\n\n{request}"}])
        )

    assert ask("Notes:", "Any tips?") == "chat"
    assert ask("Below is a passage from the minutes.", "Any tips?") == "document"
    assert ask("Notes:", "What does the text say about costs?") == "document"
    assert ask("Notes:", "Is text important?") == "chat"  # "text" only after an article
    assert ask("Notes:", "Put the dates in a JSON array.") == "json"
    # the same request after a short conversation: the material is no longer in the ask
    turns = [{"role": "user", "content": material}, {"role": "assistant", "content": "Noted."},
             {"role": "user", "content": "What does the text say about costs?"}]  # fmt: skip
    assert category.detect(render(turns)) == "chat"
    code = "def wrap(text, width):\n    return [text[i : i + width] for i in range(0, 9)]\n" * 6
    assert category.detect(render([{"role": "user", "content": f"{code}\nExplain it."}])) == "code"


def test_the_template_is_left_out_of_the_decision():
    # a prompt that only the role names would make look like code or math
    assert category.content_tokens(render([{"role": "user", "content": "hello"}])) == [
        tokenizer.token_id("hello")
    ]


def test_detection_reads_a_bounded_sample_of_a_long_prompt():
    ids = tokenizer.encode(DOCUMENT) * 640  # 32k tokens
    assert len(ids) == 32_000
    assert len(category.content_tokens(ids)) == 3 * category.SAMPLE_WINDOW
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        category.detect(ids)
        best = min(best, time.perf_counter() - t0)
    assert best < 0.01, f"{best * 1000:.1f} ms for a 32k-token prompt"


def test_accept_probability_order_and_expected_lengths():
    lengths = [expected_accept_length(DFLASH, d, 1000) for d in ORDER]
    assert lengths == sorted(lengths, reverse=True) and len(set(lengths)) == len(ORDER)
    model, rng = PerfModel(Settings(), DFLASH), random.Random(0)
    sampled = [
        statistics.fmean(model.sample_step(rng, d, 1000) + 1 for _ in range(4000)) for d in ORDER
    ]
    assert sampled == sorted(sampled, reverse=True)
    for want, got in zip(lengths, sampled, strict=True):
        assert got == pytest.approx(want, rel=0.08)


def readme_table() -> dict[str, list[str]]:
    """The README's domain table: domain -> its cells."""
    text = README.read_text()
    section = text[text.index("## Performance model") :]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\| `(\w+)` \|(.*)\|$", line.strip())
        if m and m.group(1) in P_ACCEPT:
            rows[m.group(1)] = [c.strip() for c in m.group(2).split("|")]
    return rows


def test_the_readme_predicts_each_domain():
    rows = readme_table()
    assert set(rows) == set(P_ACCEPT)
    ddtree16 = SpecShape("DDTREE", 16, budget=16, window=2048)
    ddtree64 = SpecShape("DDTREE", 16, budget=64, window=2048)
    for domain, cells in rows.items():
        p, dflash, b16, b64, natural = cells[:5]
        assert float(p) == P_ACCEPT[domain], domain
        for cell, spec in ((dflash, DFLASH), (b16, ddtree16), (b64, ddtree64)):
            assert float(cell) == round(expected_accept_length(spec, domain, 1000), 1), domain
        low, high = content.NATURAL_LENGTH[domain]
        assert natural == f"{low}-{high}", domain


def test_diverged_tokens_differ_from_every_domain_token():
    diverged = {t for t, _ in content.DIVERGED}
    for domain, pieces in content.PIECES.items():
        assert not diverged & {t for t, _ in pieces}, domain
        assert tokenizer.EOS not in {t for t, _ in pieces}, domain
    assert set(content.PIECES) == set(P_ACCEPT) == set(content.NATURAL_LENGTH)


def test_plan_is_a_function_of_the_seed_and_every_prompt_id():
    ids = list(range(5000))
    key = content.prompt_key(0, ids)
    assert key == content.prompt_key(0, list(ids))
    assert key != content.prompt_key(1, ids)
    assert key != content.prompt_key(0, [*ids[:-1], 7])  # the last id counts too
    lengths = {content.Plan(content.prompt_key(0, [i]), "chat").natural_len for i in range(500)}
    assert min(lengths) == 20 and max(lengths) == 90
    for i in range(200):  # drawing the divergence never moves a request that is not chosen
        k = content.prompt_key(3, [i])
        plain, maybe = content.Plan(k, "code"), content.Plan(k, "code", diverge=0.5)
        assert plain.start == maybe.start
        if maybe.diverge_at is None:
            assert maybe.natural_len == plain.natural_len


def test_diverge_knob_is_a_fraction():
    assert Settings.from_env({}).diverge == 0.0 and Settings.from_env({}).diverge_after == 4
    env = {"SGLANG_EMU_DIVERGE": "0.25", "SGLANG_EMU_DIVERGE_AFTER": "9"}
    assert (Settings.from_env(env).diverge, Settings.from_env(env).diverge_after) == (0.25, 9)
    with pytest.raises(ValueError, match="SGLANG_EMU_DIVERGE"):
        Settings.from_env({"SGLANG_EMU_DIVERGE": "1.5"})


@pytest.fixture(scope="module")
def spec_server(start_module_emulator: StartEmulator, model_dirs: ModelDirs) -> EmulatorProcess:
    flags = ["--model-path", str(model_dirs.model), "--speculative-algorithm", "DFLASH",
             "--speculative-draft-model-path", str(model_dirs.drafter),
             "--speculative-draft-window-size", "2048"]  # fmt: skip
    return start_module_emulator(flags, env={"SGLANG_EMU_TIME_SCALE": "0", "SGLANG_EMU_SEED": "1"})


def test_domains_accept_in_order_end_to_end(spec_server: EmulatorProcess):
    """Mean accept length per domain over HTTP (fixed-length outputs), and the domain each
    request was given in /emulator/requests."""
    prompts: dict[str, list[list[int]]] = {}
    for domain, messages in SAMPLES.items():
        variants = []
        for i in range(6):
            msgs = [*messages[:-1], {**messages[-1], "content": f"{messages[-1]['content']} #{i}"}]
            variants.append(spec_server.post("/tokenize", {"messages": msgs}).json()["tokens"])
        prompts[domain] = variants
    rng = random.Random(5)
    prompts["random"] = [rng.choices(range(1000, 129_000), k=200) for _ in range(6)]
    accept: dict[str, float] = {}
    for domain, variants in prompts.items():
        metas: list[dict[str, Any]] = []
        for ids in variants:
            body = {"input_ids": ids, "sampling_params": {"max_new_tokens": 600,
                                                          "ignore_eos": True}}  # fmt: skip
            metas.append(spec_server.post("/generate", body).json()["meta_info"])
        accept[domain] = sum(m["completion_tokens"] for m in metas) / sum(
            m["spec_verify_ct"] for m in metas
        )
        records = {r["rid"]: r for r in spec_server.get("/emulator/requests").json()["requests"]}
        assert {records[m["id"]]["category"] for m in metas} == {domain}
    assert [accept[d] for d in ORDER] == sorted(accept.values(), reverse=True), accept
    for domain in ORDER:
        want = expected_accept_length(DFLASH, domain, 100)
        assert accept[domain] == pytest.approx(want, rel=0.12), (domain, accept)


# The bench's built-in chat workload (bench/builtin.py) by source -> the domain the
# emulator should see in most of its conversations.
BENCH_DOMAINS = {"coding": "code", "math": "math", "document": "document",
                 "multiturn": "chat", "json": "json"}  # fmt: skip


@pytest.mark.parametrize("chars", [None, 4000, 16000], ids=["natural", "4k-chars", "16k-chars"])
def test_the_bench_workload_domains_are_told_apart(chars: int | None):
    from bench import builtin
    from bench.chat import cyclic
    from bench.corpora import material_text

    seen: dict[str, list[str]] = {}
    for conv in builtin.conversations():
        text = material_text(conv.material_corpus)
        material = cyclic(text, conv.material_offset, chars or conv.material_chars)
        got = category.detect(render(conv.with_material(material)))
        seen.setdefault(conv.source, []).append(got)
    assert set(seen) == set(BENCH_DOMAINS)
    for source, domains in seen.items():
        share = domains.count(BENCH_DOMAINS[source]) / len(domains)
        assert share >= 0.85, (source, {d: domains.count(d) for d in set(domains)})
