"""The built-in workload as the bench reads it (bench/builtin.py: a dataset file and the
material corpora): the shape every conversation must keep when the file is edited."""

import ast
import collections
import json
import re
import sys
from pathlib import Path

import pytest
import tomllib

from bench import builtin, datasets
from bench.builtin import conversations
from bench.conversation import MATERIAL_SLOT, ROLES, Conversation
from bench.corpora import MATERIALS, material_text

ROOT = Path(__file__).resolve().parents[2]
DOMAINS = ("coding", "math", "document", "multiturn", "json")
CORPORA = ("code", "document", "math", "chat", "json")
MAX_TOKENS = {"coding": 512, "math": 384, "document": 256, "multiturn": 256, "json": 256}


def by_domain() -> dict[str, list[Conversation]]:
    out: dict[str, list[Conversation]] = collections.defaultdict(list)
    for c in conversations():
        out[c.source].append(c)
    return out


def base_chars(c: Conversation) -> int:
    """Characters of content over all messages, the slot left empty."""
    return sum(len(content.replace(MATERIAL_SLOT, "")) for _, content in c.messages)


def test_domains_are_the_five_and_each_has_at_least_40():
    groups = by_domain()
    assert set(groups) == set(DOMAINS)
    for domain in DOMAINS:
        assert len(groups[domain]) >= 40, domain


def test_messages_are_distinct_within_each_domain():
    for domain, group in by_domain().items():
        assert len({c.messages for c in group}) == len(group), domain
        # not one sentence with a number changed: the texts differ beyond their digits
        shapes = {re.sub(r"\d+", "#", "\n".join(t for _, t in c.messages)) for c in group}
        assert len(shapes) >= 30, domain


def test_every_conversation_has_exactly_one_slot_in_one_message():
    for c in conversations():
        counts = [content.count(MATERIAL_SLOT) for _, content in c.messages]
        assert sum(counts) == 1, c.messages
        assert counts.count(1) == 1


def test_the_slot_comes_before_the_request_that_must_survive_a_cut():
    for c in conversations():
        content = next(t for _, t in c.messages if MATERIAL_SLOT in t)
        before, after = content.split(MATERIAL_SLOT, 1)
        # the material is cut from its end: what follows it in its message says what to do
        assert len(after.strip()) >= 15, c.messages
        assert len(before.strip()) < 400


def test_conversations_without_material_are_short():
    for c in conversations():
        assert 0 < base_chars(c) <= 700, (c.source, base_chars(c))


def test_roles_are_valid_and_the_last_message_is_the_users():
    for c in conversations():
        roles = [r for r, _ in c.messages]
        assert all(r in ROLES for r in roles)
        assert roles[-1] == "user"
        assert "system" not in roles[1:], "a system message comes first or not at all"
        turns = roles[1:] if roles[0] == "system" else roles
        assert turns == [("user", "assistant")[i % 2] for i in range(len(turns))], roles
        assert all(content.strip() for _, content in c.messages)


def test_multiturn_has_two_earlier_exchanges_before_the_last_user_message():
    for c in by_domain()["multiturn"]:
        turns = [r for r, _ in c.messages if r != "system"]
        assert turns.count("assistant") >= 2
        assert turns[-1] == "user"


def test_order_is_interleaved_by_domain():
    cs = conversations()
    assert len(cs) % len(DOMAINS) == 0
    assert [c.source for c in cs] == [DOMAINS[i % len(DOMAINS)] for i in range(len(cs))]


def test_deterministic_and_each_call_returns_a_fresh_list():
    first, second = conversations(), conversations()
    assert first == second
    assert first is not second
    first.clear()
    assert conversations() == second


def test_max_tokens_per_domain():
    for c in conversations():
        assert c.max_tokens == MAX_TOKENS[c.source]


def test_material_corpora_are_large_and_read_once():
    assert MATERIALS == CORPORA
    for name in CORPORA:
        text = material_text(name)
        assert len(text) >= 100_000, name
        assert text is material_text(name)


def test_unknown_material_corpus_is_a_key_error():
    with pytest.raises(KeyError):
        material_text("poetry")
    with pytest.raises(KeyError):
        material_text("")


def test_every_conversation_names_a_known_corpus_and_fits_its_size():
    for c in conversations():
        assert c.material_corpus in CORPORA, c.material_corpus
        assert 400 <= c.material_chars <= 1600
        assert 0 <= c.material_offset < len(material_text(c.material_corpus))


def test_offsets_are_distinct_within_a_domain():
    for domain, group in by_domain().items():
        offsets = [c.material_offset for c in group]
        assert len(set(offsets)) == len(offsets), domain


def test_material_starts_at_a_record_that_fits_the_domain():
    starts = {
        "coding": r"(    )?(def|class) \w+",
        "math": r"Problem \d+\.",
        "document": r"[A-Z]",
    }
    for c in conversations():
        text = material_text(c.material_corpus)[c.material_offset :]
        if c.source in starts:
            assert re.match(starts[c.source], text), (c.source, text[:60])
        else:
            assert not text[0].isspace(), (c.source, text[:60])
        if c.source == "coding":  # the ask names the function or class the material starts with
            name = re.match(r"\s*(?:def|class) (\w+)", text)
            assert name is not None
            assert f"`{name.group(1)}`" in c.messages[-1][1] or "Review this" in c.messages[-1][1]


def test_round_trip_through_the_dataset_form(tmp_path: Path) -> None:
    for c in conversations():
        d = c.to_dict()
        assert d["source"] == c.source
        assert d["material"]["corpus"] == c.material_corpus
    # what the controller writes for the hosts (a sample), the hosts' reader reads back unchanged
    datasets.write_jsonl(conversations(), tmp_path / "sample.jsonl")
    assert list(datasets.read(tmp_path / "sample.jsonl")) == conversations()


def test_filled_conversation_holds_the_material_and_no_slot():
    for c in conversations()[:10]:
        text = material_text(c.material_corpus)
        piece = text[c.material_offset : c.material_offset + c.material_chars]
        filled = c.with_material(piece)
        joined = "\n".join(m["content"] for m in filled)
        assert piece in joined
        assert MATERIAL_SLOT not in joined


def test_the_workload_is_a_chat_dataset_file_read_by_the_datasets_reader():
    assert datasets.detect_format(builtin.DATASET) == "chat"
    assert list(datasets.read(builtin.DATASET)) == conversations()
    lines = builtin.DATASET.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == [c.to_dict() for c in conversations()]


def test_bench_imports_only_itself_the_standard_library_and_its_declared_dependencies():
    # so nothing but the bench itself is needed on the host, nor an undeclared package
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    allowed = {"bench", "__future__"} | {
        re.split(r"[<>=!~ ;\[]", d, maxsplit=1)[0] for d in declared["project"]["dependencies"]
    }
    assert "aiohttp" in allowed  # the one the bench has
    outside = set()
    for path in (ROOT / "bench").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in allowed:
                    outside.add((path.name, name))
    assert outside == set()
