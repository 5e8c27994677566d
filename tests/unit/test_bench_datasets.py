import io
import json
import os
import random
from pathlib import Path

import pytest

from bench import datasets
from bench.conversation import Conversation
from bench.datasets import Sample, detect_format, read, sample, write_jsonl
from bench.errors import BadArguments, DatasetError


def write(tmp_path: Path, text: str | bytes, name: str = "data.jsonl") -> Path:
    path = tmp_path / name
    if isinstance(text, str):
        path.write_text(text, encoding="utf-8")
    else:
        path.write_bytes(text)
    return path


def jsonl(*records: object) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def chat(content: str, **extra: object) -> dict[str, object]:
    return {"messages": [{"role": "user", "content": content}], **extra}


def sharegpt_entry(*turns: tuple[str, str], id_: object = "x") -> dict[str, object]:
    return {"id": id_, "conversations": [{"from": f, "value": v} for f, v in turns]}


def error_of(path: Path, fmt: str = "auto", chunk_size: int = datasets.CHUNK_SIZE) -> str:
    with pytest.raises(DatasetError) as e:
        list(read(path, fmt, chunk_size=chunk_size))
    prefix = f"dataset {path}: "  # every error names the file
    assert str(e.value).startswith(prefix)
    return str(e.value)[len(prefix) :]  # (the rest only: tmp_path holds the test's name)


# --- formats ---


def test_chat_records_become_conversations(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "\n"
        + jsonl(
            {
                "model": "m",
                "temperature": 0.7,
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Hi"},
                    {"role": "assistant", "content": "Hello!"},
                    {"role": "user", "content": "Sum 2+2"},
                ],
                "max_tokens": 64,
                "source": "support",
            }
        )
        + "   \n\n"
        + jsonl(chat("second"), chat("third", max_tokens=None, source=None)),
    )
    got = list(read(path))
    assert got == [
        Conversation(
            (
                ("system", "Be brief."),
                ("user", "Hi"),
                ("assistant", "Hello!"),
                ("user", "Sum 2+2"),
            ),
            "support",
            64,
        ),
        Conversation((("user", "second"),), "dataset", None),
        Conversation((("user", "third"),), "dataset", None),
    ]
    assert detect_format(path) == "chat"


def test_prompt_records_become_one_user_message(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        jsonl(
            {"prompt": "Write a haiku", "max_tokens": 30},
            {"prompt": "héllo ✓", "source": "web"},
        ),
    )
    assert detect_format(path) == "prompts"
    assert list(read(path)) == [
        Conversation((("user", "Write a haiku"),), "dataset", 30),
        Conversation((("user", "héllo ✓"),), "web", None),
    ]


def test_sharegpt_entries_end_at_the_last_user_turn(tmp_path: Path) -> None:
    entries = [
        sharegpt_entry(
            ("system", "sys"),
            ("human", "q1"),
            ("gpt", "a1"),
            ("user", "q2"),
            ("chatgpt", "a2"),
            ("bard", "a2b"),
        ),
        sharegpt_entry(),  # empty: skipped
        sharegpt_entry(("gpt", "only the model")),  # no user turn: skipped
        sharegpt_entry(("Human", "q"), ("assistant", "a"), ("model", "m"), ("human", "last")),
    ]
    path = write(tmp_path, json.dumps(entries, indent=2), "sg.json")
    assert detect_format(path) == "sharegpt"
    assert list(read(path)) == [
        Conversation(
            (("system", "sys"), ("user", "q1"), ("assistant", "a1"), ("user", "q2")), "sharegpt"
        ),
        Conversation(
            (("user", "q"), ("assistant", "a"), ("assistant", "m"), ("user", "last")), "sharegpt"
        ),
    ]
    s = sample(path, None)
    assert (s.total, s.skipped, s.fmt, len(s.conversations)) == (2, 2, "sharegpt", 2)


def test_format_given_overrides_detection(tmp_path: Path) -> None:
    path = write(tmp_path, jsonl({"prompt": "p", "messages": []}))
    assert detect_format(path) == "chat"  # "messages" wins
    assert list(read(path, "prompts")) == [Conversation((("user", "p"),), "dataset")]


def test_detection_skips_whitespace_and_a_byte_order_mark(tmp_path: Path) -> None:
    bom = b"\xef\xbb\xbf"
    a = write(tmp_path, bom + b"\n \t\r\n" + json.dumps([sharegpt_entry(("human", "q"))]).encode())
    b = write(tmp_path, bom + b"\n\n" + jsonl({"prompt": "p"}).encode(), "b.jsonl")
    c = write(tmp_path, bom + jsonl(chat("c")).encode(), "c.jsonl")
    assert [detect_format(p) for p in (a, b, c)] == ["sharegpt", "prompts", "chat"]
    assert [next(read(p)).messages[-1][1] for p in (a, b, c)] == ["q", "p", "c"]
    assert next(read(a, chunk_size=1)).messages == (("user", "q"),)


# --- errors ---


def test_error_is_bad_arguments() -> None:
    assert issubclass(DatasetError, BadArguments)
    assert DatasetError.exit_code == 2


def test_missing_file_and_directory(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(DatasetError, match=r"nope\.jsonl: no such file"):
        read(missing)  # raised at once, not when iterated
    with pytest.raises(DatasetError, match="no such file"):
        detect_format(missing)
    with pytest.raises(DatasetError, match=f"{tmp_path}: is a directory"):
        sample(tmp_path, 3)


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, jsonl(chat("x")))
    path.chmod(0)
    if os.geteuid() == 0:  # root reads it anyway: make open() fail as it would for a user

        def denied(*args: object, **kwargs: object) -> None:
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr(datasets, "open", denied, raising=False)
    with pytest.raises(DatasetError, match=r"data\.jsonl: cannot be read \(permission denied\)"):
        read(path)


@pytest.mark.parametrize("text", ["", " \n\t\n"])
def test_empty_file(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, text)
    for fmt in ("auto", *datasets.FORMATS):
        assert error_of(path, fmt) == "the file is empty"
    with pytest.raises(DatasetError, match="the file is empty"):
        detect_format(path)


def test_no_usable_request(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps([sharegpt_entry(), sharegpt_entry(("gpt", "a"))]), "s.json")
    msg = error_of(path)
    assert "no usable request" in msg and "2 ShareGPT entries, none with a user turn" in msg
    assert "no usable request" in error_of(write(tmp_path, "[]", "e.json"))


def test_unknown_format(tmp_path: Path) -> None:
    path = write(tmp_path, jsonl(chat("x")))
    with pytest.raises(
        DatasetError, match=r"data\.jsonl: unknown format 'csv' \(known: auto, chat"
    ):
        read(path, "csv")
    with pytest.raises(DatasetError, match="unknown format"):
        sample(path, 1, fmt="json")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hello\n", "neither JSONL of objects nor a JSON array (it starts with 'h')"),
        ('"a string"', "neither JSONL of objects nor a JSON array (it starts with '\"')"),
        ("42\n", "(it starts with '4')"),
        ('{\n  "messages": []\n}\n', "line 1: not valid JSON: Expecting property name"),
        ('{"x": 1}\n', 'line 1: the first record has neither "messages"'),
    ],
)
def test_neither_jsonl_nor_array(tmp_path: Path, text: str, expected: str) -> None:
    assert expected in error_of(write(tmp_path, text))


def test_jsonl_format_given_for_an_array(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps([sharegpt_entry(("human", "q"))]))
    assert "format chat is JSONL" in error_of(path, "chat")
    assert "starts with '['" in error_of(path, "prompts")
    assert "must be one JSON array, but it starts with '{'" in error_of(
        write(tmp_path, jsonl(chat("x")), "c.jsonl"), "sharegpt"
    )


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"messages": [}', "line 3: not valid JSON: Expecting value at column 15"),
        ('{"messages": []} x', "line 3: not valid JSON: Extra data at column 18"),
        ("[1, 2]", "line 3: a record must be a JSON object, not a list"),
        ("null", "line 3: a record must be a JSON object, not null"),
        ('{"prompt": "p"}', 'line 3: no "messages"'),
        ('{"messages": "hi"}', 'line 3: "messages" must be a list, not a string'),
        ('{"messages": []}', 'line 3: "messages" is empty'),
        ('{"messages": ["hi"]}', "line 3: messages[0] must be an object"),
        (
            '{"messages": [{"content": "x"}]}',
            'line 3: messages[0]["role"] must be a string, not null',
        ),
        (
            '{"messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]}]}',
            'line 3: messages[0]["content"] must be a string, not a list (only text content',
        ),
        (
            '{"messages": [{"role": "user", "content": "a"}, {"role": "tool", "content": "b"}]}',
            "line 3: messages[1] has unknown role 'tool' (known: system, user, assistant)",
        ),
        (
            '{"messages": [{"role": "user", "content": "a"}, '
            '{"role": "assistant", "content": "b"}]}',
            "line 3: the last message must be the user's, not the assistant's",
        ),
        (
            json.dumps(chat("x", max_tokens=0)),
            'line 3: "max_tokens" must be a positive integer, not 0',
        ),
        (json.dumps(chat("x", max_tokens=-5)), "positive integer, not -5"),
        (json.dumps(chat("x", max_tokens=1.5)), "positive integer, not 1.5"),
        (json.dumps(chat("x", max_tokens="64")), 'positive integer, not "64"'),
        (json.dumps(chat("x", max_tokens=True)), "positive integer, not true"),
        (json.dumps(chat("x", source="")), 'line 3: "source" must be a non-empty string, not ""'),
        (json.dumps(chat("x", source=7)), '"source" must be a non-empty string, not 7'),
    ],
)
def test_bad_chat_record(tmp_path: Path, line: str, expected: str) -> None:
    path = write(tmp_path, jsonl(chat("ok")) + "\n" + line + "\n" + jsonl(chat("after")))
    assert expected in error_of(path, "chat")


def slotted(material: object, content: str = "Read {material} and sum it up.") -> str:
    return json.dumps(chat(content, material=material))


def test_a_chat_record_may_fill_its_slot_from_a_built_in_material(tmp_path: Path) -> None:
    path = write(tmp_path, jsonl(json.loads(slotted({"corpus": "code", "offset": 5, "chars": 40}))))
    (conv,) = read(path)
    assert (conv.material_corpus, conv.material_offset, conv.material_chars) == ("code", 5, 40)
    datasets.write_jsonl([conv], tmp_path / "again.jsonl")
    assert list(read(tmp_path / "again.jsonl")) == [conv]
    (plain,) = read(write(tmp_path, jsonl(chat("a literal {material}")), "plain.jsonl"))
    assert plain.material_corpus == ""  # no "material": the braces are the user's text


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (slotted("code"), '"material" must be an object {"corpus": str, "offset": int, "chars"'),
        (
            slotted({"corpus": "poetry", "offset": 0, "chars": 9}),
            '"material" corpus must be one of code, document, math, chat, json, not "poetry"',
        ),
        (
            slotted({"corpus": "code", "offset": 10**9, "chars": 9}),
            '"material" offset must be an integer from 0 to ',
        ),
        (slotted({"corpus": "code", "offset": -1, "chars": 9}), "(corpus code), not -1"),
        (slotted({"corpus": "code", "offset": True, "chars": 9}), "(corpus code), not true"),
        (
            slotted({"corpus": "code", "offset": 0, "chars": 0}),
            '"material" chars must be a positive integer, not 0',
        ),
        (
            slotted({"corpus": "code", "offset": 0, "chars": 9}, "no slot here"),
            '"material" needs {material} once in the messages, found 0',
        ),
        (
            slotted({"corpus": "code", "offset": 0, "chars": 9}, "{material} and {material}"),
            "found 2",
        ),
    ],
)
def test_bad_material(tmp_path: Path, line: str, expected: str) -> None:
    error = error_of(write(tmp_path, jsonl(chat("ok")) + line + "\n"), "chat")
    assert error.startswith('line 2: "material" ')
    assert expected in error


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"messages": [{"role": "user", "content": "x"}]}', 'line 2: no "prompt"'),
        ('{"prompt": ["a"]}', 'line 2: "prompt" must be a string, not a list'),
        ('{"prompt": null}', 'line 2: "prompt" must be a string, not null'),
        ('{"prompt": "p", "max_tokens": 0}', 'line 2: "max_tokens" must be a positive integer'),
        ('{"prompt": "p", "source": ""}', 'line 2: "source" must be a non-empty string'),
        ('{"prompt": "p"', "line 2: not valid JSON: Expecting ',' delimiter"),
    ],
)
def test_bad_prompt_record(tmp_path: Path, line: str, expected: str) -> None:
    path = write(tmp_path, jsonl({"prompt": "ok"}) + line + "\n")
    assert expected in error_of(path)


def test_jsonl_line_not_utf8(tmp_path: Path) -> None:
    path = write(tmp_path, jsonl(chat("ok")).encode() + b'{"prompt": "\xff"}\n')
    assert "line 2: not UTF-8 text" in error_of(path)


def sharegpt_file(tmp_path: Path, bad: str) -> tuple[Path, int]:
    """A ShareGPT array whose element 2 is `bad`; the byte offset of that element."""
    head = "[\n  " + json.dumps(sharegpt_entry(("human", "é"))) + ",\n  "
    head += json.dumps(sharegpt_entry()) + ",\n  "
    text = head + bad + ",\n  " + json.dumps(sharegpt_entry(("human", "q"))) + "\n]\n"
    return write(tmp_path, text, "sg.json"), len(head.encode())


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        ('"text"', "an entry must be a JSON object, not a string"),
        ("[]", "an entry must be a JSON object, not a list"),
        ('{"id": 1}', 'no "conversations"'),
        ('{"conversations": {}}', '"conversations" must be a list, not an object'),
        ('{"conversations": ["hi"]}', "conversations[0] must be an object"),
        ('{"conversations": [{"value": "v"}]}', 'conversations[0]["from"] must be a string'),
        (
            '{"conversations": [{"from": "human", "value": "a"}, {"from": "gpt"}]}',
            'conversations[1]["value"] must be a string, not null',
        ),
        (
            '{"conversations": [{"from": "human", "value": 3}]}',
            'conversations[0]["value"] must be a string, not a number',
        ),
        (
            '{"conversations": [{"from": "robot", "value": "v"}]}',
            "conversations[0] has unknown \"from\" 'robot' (known: human",
        ),
        ('{"conversations": [}', "not valid JSON: Expecting value at byte"),
    ],
)
@pytest.mark.parametrize("chunk_size", [datasets.CHUNK_SIZE, 5])
def test_bad_sharegpt_entry(tmp_path: Path, bad: str, expected: str, chunk_size: int) -> None:
    path, offset = sharegpt_file(tmp_path, bad)
    msg = error_of(path, chunk_size=chunk_size)
    assert f"element 2 (byte {offset}): " in msg
    assert expected in msg


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[{"conversations": []}', "the file ends inside the array (truncated?) after 1 elements"),
        ('[{"conversations": []},', "ends inside the array (truncated?) after 1 elements"),
        ('[{"conversations": [', "element 0 (byte 1): the file ends inside it (truncated?)"),
        ('[{"conversations": [{"from": "hum', "element 0 (byte 1): the file ends inside it"),
        ('[{"conversations": []} {"conversations": []}]', "expected ',' or ']' after element 0"),
        ('[{"conversations": []},]', "a ',' after the last element (0), at byte 23"),
        ('[{"conversations": []},,{}]', "element 1 (byte 23): missing"),
        ('[{"conversations": [{"from": "human", "value": "q"}]}] []', "more data after the array"),
        ("[1, 2]", "element 0 (byte 1): an entry must be a JSON object, not a number"),
        ('[{"conversations": []}, tru]', "element 1 (byte 24): not valid JSON: Expecting value"),
    ],
)
@pytest.mark.parametrize("chunk_size", [datasets.CHUNK_SIZE, 3])
def test_bad_sharegpt_array(tmp_path: Path, text: str, expected: str, chunk_size: int) -> None:
    assert expected in error_of(write(tmp_path, text, "sg.json"), "sharegpt", chunk_size)


def test_sharegpt_not_utf8(tmp_path: Path) -> None:
    good = json.dumps(sharegpt_entry(("human", "q"))).encode()
    data = b"[" + good + b', {"conversations": "\xc3("}]'
    path = write(tmp_path, data, "sg.json")
    at = data.index(b"\xc3")
    for chunk_size in (1, 4, 1000):
        assert f"not UTF-8 text (at byte {at})" in error_of(path, chunk_size=chunk_size)
    cut = write(tmp_path, b"[" + good + b', "\xc3', "cut.json")
    assert "ends inside a UTF-8 character" in error_of(cut, chunk_size=4)


# --- sampling ---


def numbered(tmp_path: Path, count: int, edit: dict[int, str] | None = None) -> Path:
    lines = [chat(f"request {i}") for i in range(count)]
    for i, content in (edit or {}).items():
        lines[i] = chat(content)
    return write(tmp_path, jsonl(*lines), f"n{count}-{len(edit or {})}.jsonl")


def contents(s: Sample) -> list[str]:
    return [c.messages[-1][1] for c in s.conversations]


def test_sample_is_deterministic_and_in_file_order(tmp_path: Path) -> None:
    path = numbered(tmp_path, 200)
    a, b = sample(path, 10, seed=3), sample(path, 10, seed=3)
    assert a == b
    assert (a.total, a.skipped, a.fmt) == (200, 0, "chat")
    positions = [int(x.split()[1]) for x in contents(a)]
    assert positions == sorted(positions) and len(set(positions)) == 10
    assert positions != list(range(10))  # not simply the head of the file
    assert contents(sample(path, 10, seed=4)) != contents(a)
    assert positions[-1] >= 100  # drawn from the whole file


def test_sample_positions_are_uniform(tmp_path: Path) -> None:
    path = numbered(tmp_path, 20)
    hits = [0] * 20
    for seed in range(400):
        for x in contents(sample(path, 5, seed=seed)):
            hits[int(x.split()[1])] += 1
    assert sum(hits) == 2000
    assert min(hits) > 60 and max(hits) < 140  # expected 100 each


def test_sample_none_and_all(tmp_path: Path) -> None:
    path = numbered(tmp_path, 7)
    everything = sample(path, None)
    assert contents(everything) == [f"request {i}" for i in range(7)]
    assert everything.total == 7
    assert contents(sample(path, 7, seed=9)) == contents(everything)


def test_editing_an_unsampled_request_leaves_the_sample(tmp_path: Path) -> None:
    original = sample(numbered(tmp_path, 50), 5, seed=1)
    chosen = {int(x.split()[1]) for x in contents(original)}
    unsampled = min(set(range(50)) - chosen)
    edited = sample(numbered(tmp_path, 50, {unsampled: "a much longer edited request"}), 5, seed=1)
    assert edited == original
    one = min(chosen)
    changed = sample(numbered(tmp_path, 50, {one: "edited"}), 5, seed=1)
    assert changed != original
    assert contents(changed) == [
        ("edited" if x == f"request {one}" else x) for x in contents(original)
    ]


def test_sample_larger_than_the_file(tmp_path: Path) -> None:
    path = numbered(tmp_path, 4)
    with pytest.raises(
        DatasetError, match=r"n4-0\.jsonl: dataset_sample=5 is larger than the file's 4 requests"
    ):
        sample(path, 5)
    sg = write(tmp_path, json.dumps([sharegpt_entry(("human", "q")), sharegpt_entry()]), "s.json")
    with pytest.raises(
        DatasetError, match=r"file's 1 requests \(1 ShareGPT entries without a user"
    ):
        sample(sg, 2)
    for n in (0, -1):
        with pytest.raises(
            DatasetError, match=rf"n4-0\.jsonl: dataset_sample={n} must be at least 1"
        ):
            sample(path, n)


def test_sample_stops_on_a_bad_record(tmp_path: Path) -> None:
    path = write(tmp_path, jsonl(*[chat(str(i)) for i in range(20)]) + '{"prompt": 1}\n')
    with pytest.raises(DatasetError, match="line 21"):
        sample(path, 3)


def test_write_jsonl_round_trips(tmp_path: Path) -> None:
    convs = [
        Conversation((("system", "s"), ("user", 'q "quoted" ✓')), "web", 12),
        Conversation((("user", "p"),), "dataset"),
    ]
    out = tmp_path / "sub" / "sample.jsonl"
    write_jsonl(convs, out)
    assert list(read(out)) == convs
    assert [json.loads(line) for line in out.read_text().splitlines()] == [
        c.to_dict() for c in convs
    ]
    assert [p.name for p in out.parent.iterdir()] == ["sample.jsonl"]  # no temporary file left


# --- streaming ---

TRICKY = [
    'a "quoted" ] } [ { , word',
    'back\\slash \\" and \\u escapes \n\t\r \u0001',
    "multi-byte: é ü ñ 中文字符 🙂🚀 Ελληνικά — “curly”",
    ']]]]},{,,[["',
    "\\",
    "",
    "😀 astral: a surrogate pair when escaped",
]


def tricky_entries(count: int) -> list[dict[str, object]]:
    rng = random.Random(5)
    entries: list[dict[str, object]] = []
    for i in range(count):
        turns: list[tuple[str, str]] = []
        for j in range(rng.randint(0, 5)):
            speaker = rng.choice(["human", "gpt", "system"]) if j else "human"
            turns.append((speaker, rng.choice(TRICKY) * rng.randint(1, 3) + str(i)))
        entry = sharegpt_entry(*turns, id_=f'id-{i} ✓ ["{i}"]')
        if i % 3 == 0:  # other keys: literals and numbers cut by a chunk boundary
            entry.update(score=-12345.678e-3 * i, flag=True, model=None, lang=["en", False])
        entries.append(entry)
    return entries


def expected_of(entries: list[dict[str, object]]) -> list[Conversation]:
    return [c for e in entries if (c := datasets._sharegpt(e)) is not None]


@pytest.mark.parametrize("ensure_ascii", [True, False])
@pytest.mark.parametrize("indent", [None, 2])
def test_sharegpt_with_tiny_chunks(tmp_path: Path, ensure_ascii: bool, indent: int | None) -> None:
    entries = tricky_entries(60)
    path = write(tmp_path, json.dumps(entries, ensure_ascii=ensure_ascii, indent=indent), "s.json")
    expected = expected_of(entries)
    assert 20 < len(expected) < 60
    assert any(not c.messages[-1][1].isascii() for c in expected)
    for chunk_size in (1, 2, 3, 7, 64, datasets.CHUNK_SIZE):
        assert list(read(path, chunk_size=chunk_size)) == expected, chunk_size


def test_sharegpt_offsets_are_byte_offsets(tmp_path: Path) -> None:
    entries: list[object] = [sharegpt_entry(("human", "中文 🙂" * 40)) for _ in range(30)]
    entries[17] = {"id": "bad"}
    data = json.dumps(entries, ensure_ascii=False).encode()
    path = write(tmp_path, data, "s.json")
    offset = data.index(b'{"id": "bad"}')
    for chunk_size in (1, 7, 100, datasets.CHUNK_SIZE):
        assert f'element 17 (byte {offset}): no "conversations"' in error_of(
            path, chunk_size=chunk_size
        )


def test_read_is_lazy(tmp_path: Path) -> None:
    path = write(tmp_path, jsonl(chat("first")) + "not json\n")
    records = read(path)
    assert next(records).messages == (("user", "first"),)
    with pytest.raises(DatasetError, match="line 2: not valid JSON"):
        next(records)
    sg = write(tmp_path, '[{"conversations": [{"from": "human", "value": "q"}]}, oops', "s.json")
    for chunk_size in (4, datasets.CHUNK_SIZE):
        records = read(sg, chunk_size=chunk_size)
        assert next(records).messages == (("user", "q"),)
        with pytest.raises(
            DatasetError, match=r"element 1 \(byte 55\): not valid JSON: Expecting value"
        ):
            next(records)


class CountingFile(io.BytesIO):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.largest_read = 0

    def read(self, size: int | None = -1) -> bytes:
        out = super().read(size)
        self.largest_read = max(self.largest_read, len(out))
        return out


def test_array_reader_holds_little_and_slices_consumed_text(tmp_path: Path) -> None:
    entries = tricky_entries(2000)
    data = json.dumps(entries, ensure_ascii=False, indent=1).encode()
    f = CountingFile(data)
    reader = datasets._ArrayReader(f, tmp_path / "x.json", 256)
    largest = max(len(json.dumps(e, ensure_ascii=False, indent=1)) for e in entries)
    seen = []
    for index, offset, value in reader.elements():
        # the buffer holds the current element and about a chunk, never the consumed text
        assert len(reader.buf) <= 2 * (largest + 256), index
        assert f.tell() < offset + 2 * (largest + 256) + 16
        assert data[offset : offset + 1] == b"{"
        seen.append(value)
    assert seen == entries
    assert f.largest_read <= 2 * largest + 256


def test_long_element_is_read_in_growing_reads(tmp_path: Path) -> None:
    long_turn = "x" * 300_000
    data = json.dumps(
        [sharegpt_entry(("human", long_turn)), sharegpt_entry(("human", "y"))]
    ).encode()
    f = CountingFile(data)
    reader = datasets._ArrayReader(f, tmp_path / "x.json", 1000)
    calls = 0
    original = reader.fill

    def counted(want: int) -> None:
        nonlocal calls
        calls += 1
        original(want)

    reader.fill = counted  # type: ignore[method-assign]
    values = [v for _, _, v in reader.elements()]
    assert [v["conversations"][0]["value"] for v in values] == [long_turn, "y"]
    assert calls < 15  # doubling, not 300 reads of 1000 bytes


def test_array_reader_values_cut_anywhere(tmp_path: Path) -> None:
    values = [12345, True, -1.5e10, None, "s", [1, [2, {"a": "]"}]], {}, 0, -0.25, False, "", []]
    data = json.dumps(values).encode()
    for chunk_size in (1, 2, 3, 5):
        reader = datasets._ArrayReader(io.BytesIO(data), tmp_path / "x.json", chunk_size)
        assert [v for _, _, v in reader.elements()] == values
