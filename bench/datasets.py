"""Users' own traffic: read, validate and sample a dataset file (`-e dataset=PATH`), streamed.

The controller samples the file; only the sample (`write_jsonl`, the `chat` format) travels to
the GPU host. Standard library only (this also runs on GPU hosts), and nothing here holds the
whole file: JSONL is read line by line, a ShareGPT array element by element
(`_ArrayReader`), and `sample` keeps `n` requests at most.

Formats (`detect_format` tells them apart by the first non-whitespace byte and first record):

- `chat`: JSONL, one OpenAI chat request per line: `{"messages": [{"role": ..., "content":
  ...}, ...], "max_tokens": N, "source": "..."}` (the last two optional, other keys ignored);
  the last message is the user's. An optional `"material": {"corpus": NAME, "offset": N,
  "chars": N}` fills the one `{material}` slot of the messages from a built-in material
  corpus (bench/corpora.py), as much as a context needs: the built-in workload
  (bench/prompts/builtin-chat.jsonl) is a file of this format.
- `prompts`: JSONL, `{"prompt": "...", "max_tokens": N, "source": "..."}`: one user message.
- `sharegpt`: one JSON array of `{"id": ..., "conversations": [{"from": "human", "value":
  "..."}, ...]}`. A request is an entry's conversation up to and including its last user turn;
  an entry without a user turn is skipped (and counted).

A request without `source` gets "dataset" (ShareGPT: "sharegpt"). Every error names the file,
and for a bad record its line (JSONL) or element index and byte offset (ShareGPT).
"""

from __future__ import annotations

import codecs
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from bench import records
from bench.conversation import MATERIAL_SLOT, ROLES, Conversation
from bench.corpora import MATERIALS, material_text
from bench.errors import DatasetError

FORMATS = ("chat", "prompts", "sharegpt")
CHUNK_SIZE = 1 << 20  # bytes read at a time from a ShareGPT array
DEFAULT_SOURCE = "dataset"
SHAREGPT_SOURCE = "sharegpt"
SHAREGPT_ROLES = {
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "chatgpt": "assistant",
    "bard": "assistant",
    "model": "assistant",
    "system": "system",
}

_WS = b" \t\r\n"  # JSON's whitespace
_NOT_WS = re.compile(r"[^ \t\r\n]")
_BOM = codecs.BOM_UTF8
# A JSON error this close to the end of the text read so far may only mean "read more" (a cut
# literal such as `-Infinit`, a cut `\uXXXX` escape or number), and a number ending this close
# may go on.
_CUT_MARGIN = 16


@dataclass(frozen=True)
class Sample:
    conversations: list[Conversation]  # in file order
    total: int  # usable requests in the file
    skipped: int  # ShareGPT entries without a user turn
    fmt: str


class _Invalid(Exception):
    """A record's problem; the caller adds where the record is."""


@dataclass
class _Counts:
    total: int = 0
    skipped: int = 0


def detect_format(path: Path) -> str:
    """`sharegpt` for a JSON array; `chat` or `prompts` for JSONL, by its first record."""
    with _open(path) as f:
        return _detect(f, path)


def read(path: Path, fmt: str = "auto", *, chunk_size: int = CHUNK_SIZE) -> Iterator[Conversation]:
    """Every usable request of the file, in order, validated as it is read.

    The file is opened (and its format detected) now; records are read as the iterator is
    consumed, so a bad record raises when it is reached. A file without any usable request
    raises at the end.
    """
    return _open_records(path, fmt, chunk_size)[1]


def sample(
    path: Path, n: int | None, seed: int = 0, fmt: str = "auto", *, chunk_size: int = CHUNK_SIZE
) -> Sample:
    """`n` requests of the file (None: all), in file order.

    Reservoir sampling (algorithm R) with `random.Random(seed)`: the random draws depend only on
    the positions, so the chosen positions depend only on (n, seed, total) and editing a request
    that is not chosen leaves the sample as it was. Holds `n` requests at most.
    """
    if n is not None and n < 1:
        raise DatasetError(f"dataset {path}: dataset_sample={n} must be at least 1")
    fmt, records, counts = _open_records(path, fmt, chunk_size)
    if n is None:
        everything = list(records)
        return Sample(everything, counts.total, counts.skipped, fmt)
    rng = random.Random(seed)
    reservoir: list[tuple[int, Conversation]] = []
    for i, conversation in enumerate(records):
        if i < n:
            reservoir.append((i, conversation))
        else:
            j = rng.randrange(i + 1)
            if j < n:
                reservoir[j] = (i, conversation)
    if n > counts.total:
        skipped = (
            f" ({counts.skipped} ShareGPT entries without a user turn not counted)"
            if counts.skipped
            else ""
        )
        raise DatasetError(
            f"dataset {path}: dataset_sample={n} is larger than the file's {counts.total} "
            f"requests{skipped}"
        )
    reservoir.sort(key=lambda pair: pair[0])
    return Sample([c for _, c in reservoir], counts.total, counts.skipped, fmt)


def write_jsonl(conversations: list[Conversation], path: Path) -> None:
    """The conversations in the `chat` format (`Conversation.to_dict`), one per line, atomically."""
    records.write_jsonl(path, (c.to_dict() for c in conversations))


# --- opening, detection ---


def _open(path: Path) -> BinaryIO:
    if path.is_dir():
        raise DatasetError(f"dataset {path}: is a directory, not a file")
    try:
        return open(path, "rb")  # closed by the caller
    except FileNotFoundError:
        raise DatasetError(f"dataset {path}: no such file") from None
    except PermissionError:
        raise DatasetError(f"dataset {path}: cannot be read (permission denied)") from None
    except OSError as e:
        raise DatasetError(f"dataset {path}: cannot be read ({e.strerror or e})") from None


def _skip_bom(f: BinaryIO) -> int:
    """Position `f` after a UTF-8 byte order mark, if it starts with one; the bytes skipped."""
    f.seek(0)
    skip = 3 if f.read(3) == _BOM else 0
    f.seek(skip)
    return skip


def _first_byte(f: BinaryIO) -> bytes:
    """The file's first byte that is not whitespace (nor a byte order mark); b"" if none."""
    _skip_bom(f)
    while chunk := f.read(CHUNK_SIZE):
        first = chunk.lstrip(_WS)[:1]
        if first:
            return first
    return b""


def _shown(byte: bytes) -> str:
    return repr(chr(byte[0])) if 32 < byte[0] < 127 else f"byte 0x{byte[0]:02x}"


def _detect(f: BinaryIO, path: Path) -> str:
    first = _first_byte(f)
    if not first:
        raise DatasetError(f"dataset {path}: the file is empty")
    if first == b"[":
        return "sharegpt"
    if first != b"{":
        raise DatasetError(
            f"dataset {path}: neither JSONL of objects nor a JSON array (it starts with "
            f"{_shown(first)})"
        )
    f.seek(0)
    for lineno, record in _jsonl_records(f, path):
        if "messages" in record:
            return "chat"
        if "prompt" in record:
            return "prompts"
        raise DatasetError(
            f'dataset {path}: line {lineno}: the first record has neither "messages" (format '
            f'chat) nor "prompt" (format prompts)'
        )
    raise AssertionError("unreachable: a line starts with '{'")


def _open_records(
    path: Path, fmt: str, chunk_size: int
) -> tuple[str, Iterator[Conversation], _Counts]:
    if fmt != "auto" and fmt not in FORMATS:
        raise DatasetError(
            f"dataset {path}: unknown format {fmt!r} (known: auto, {', '.join(FORMATS)})"
        )
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be positive, not {chunk_size}")
    f = _open(path)
    try:
        if fmt == "auto":
            fmt = _detect(f, path)
        elif fmt != "sharegpt":
            first = _first_byte(f)
            if not first:
                raise DatasetError(f"dataset {path}: the file is empty")
            if first != b"{":  # not JSONL (and never a 1 GB line read as one)
                raise DatasetError(
                    f"dataset {path}: format {fmt} is JSONL, one JSON object per line, but the "
                    f"file starts with {_shown(first)}"
                )
        f.seek(0)
    except BaseException:
        f.close()
        raise
    counts = _Counts()
    return fmt, _records(f, path, fmt, chunk_size, counts), counts


def _records(
    f: BinaryIO, path: Path, fmt: str, chunk_size: int, counts: _Counts
) -> Iterator[Conversation]:
    with f:
        if fmt == "sharegpt":
            for index, offset, entry in _ArrayReader(f, path, chunk_size).elements():
                try:
                    conversation = _sharegpt(entry)
                except _Invalid as e:
                    raise DatasetError(
                        f"dataset {path}: element {index} (byte {offset}): {e}"
                    ) from None
                if conversation is None:
                    counts.skipped += 1
                    continue
                counts.total += 1
                yield conversation
        else:
            convert = _chat if fmt == "chat" else _prompt
            for lineno, record in _jsonl_records(f, path):
                try:
                    conversation = convert(record)
                except _Invalid as e:
                    raise DatasetError(f"dataset {path}: line {lineno}: {e}") from None
                counts.total += 1
                yield conversation
    if not counts.total:
        skipped = (
            f" ({counts.skipped} ShareGPT entries, none with a user turn)" if counts.skipped else ""
        )
        raise DatasetError(f"dataset {path}: no usable request in the file{skipped}")


# --- JSONL ---


def _jsonl_records(f: BinaryIO, path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of each non-blank line."""
    for lineno, raw in enumerate(f, 1):
        line = raw[3:] if lineno == 1 and raw.startswith(_BOM) else raw
        if not line.strip(_WS):
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as e:
            raise DatasetError(
                f"dataset {path}: line {lineno}: not UTF-8 text (at byte {e.start + 1} of the line)"
            ) from None
        try:
            record = json.loads(text)
        except json.JSONDecodeError as e:
            raise DatasetError(
                f"dataset {path}: line {lineno}: not valid JSON: {e.msg} at column {e.colno} "
                f"(JSONL: one whole JSON object per line)"
            ) from None
        if not isinstance(record, dict):
            raise DatasetError(
                f"dataset {path}: line {lineno}: a record must be a JSON object, not "
                f"{_kind(record)}"
            )
        yield lineno, record


def _pairs(record: dict[str, Any], key: str, first: str, second: str) -> list[tuple[str, str]]:
    """record[key]: a list of objects of two strings, `first` and `second`, as (first, second)."""
    if key not in record:
        raise _Invalid(f'no "{key}"')
    items = record[key]
    if not isinstance(items, list):
        raise _Invalid(f'"{key}" must be a list, not {_kind(items)}')
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            shape = f'{{"{first}": str, "{second}": str}}'
            raise _Invalid(f"{key}[{i}] must be an object {shape}, not {_kind(item)}")
        for name in (first, second):
            if not isinstance(value := item.get(name), str):
                hint = " (only text content is supported)" if isinstance(value, list) else ""
                raise _Invalid(f'{key}[{i}]["{name}"] must be a string, not {_kind(value)}{hint}')
        out.append((item[first], item[second]))
    return out


def _chat(record: dict[str, Any]) -> Conversation:
    out = _pairs(record, "messages", "role", "content")
    if not out:
        raise _Invalid('"messages" is empty')
    for i, (role, _) in enumerate(out):
        if role not in ROLES:
            raise _Invalid(f"messages[{i}] has unknown role {role!r} (known: {', '.join(ROLES)})")
    if out[-1][0] != "user":
        raise _Invalid(f"the last message must be the user's, not the {out[-1][0]}'s")
    corpus, offset, chars = _material(record, out)
    return Conversation(tuple(out), _source(record), _max_tokens(record), corpus, offset, chars)


def _material(record: dict[str, Any], messages: list[tuple[str, str]]) -> tuple[str, int, int]:
    """(corpus, offset, chars) of the record's `material`; ("", 0, 0) without one."""
    value = record.get("material")
    if value is None:
        return "", 0, 0
    if not isinstance(value, dict):
        raise _Invalid(
            f'"material" must be an object {{"corpus": str, "offset": int, "chars": int}}, not '
            f"{_kind(value)}"
        )
    corpus = value.get("corpus")
    if corpus not in MATERIALS:
        raise _Invalid(
            f'"material" corpus must be one of {", ".join(MATERIALS)}, not {_show(corpus)}'
        )
    size = len(material_text(corpus))
    offset, chars = value.get("offset"), value.get("chars")
    if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset < size:
        raise _Invalid(
            f'"material" offset must be an integer from 0 to {size - 1} (corpus {corpus}), not '
            f"{_show(offset)}"
        )
    if isinstance(chars, bool) or not isinstance(chars, int) or chars < 1:
        raise _Invalid(f'"material" chars must be a positive integer, not {_show(chars)}')
    slots = sum(content.count(MATERIAL_SLOT) for _, content in messages)
    if slots != 1:
        raise _Invalid(f'"material" needs {MATERIAL_SLOT} once in the messages, found {slots}')
    return corpus, offset, chars


def _prompt(record: dict[str, Any]) -> Conversation:
    if "prompt" not in record:
        raise _Invalid('no "prompt"')
    prompt = record["prompt"]
    if not isinstance(prompt, str):
        raise _Invalid(f'"prompt" must be a string, not {_kind(prompt)}')
    return Conversation((("user", prompt),), _source(record), _max_tokens(record))


def _max_tokens(record: dict[str, Any]) -> int | None:
    value = record.get("max_tokens")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _Invalid(f'"max_tokens" must be a positive integer, not {_show(value)}')
    return value


def _source(record: dict[str, Any]) -> str:
    value = record.get("source")
    if value is None:
        return DEFAULT_SOURCE
    if not isinstance(value, str) or not value:
        raise _Invalid(f'"source" must be a non-empty string, not {_show(value)}')
    return value


# --- ShareGPT ---


def _sharegpt(entry: Any) -> Conversation | None:
    """The entry's request, or None for an entry without a user turn."""
    if not isinstance(entry, dict):
        raise _Invalid(f"an entry must be a JSON object, not {_kind(entry)}")
    messages: list[tuple[str, str]] = []
    last_user = -1
    for j, (speaker, value) in enumerate(_pairs(entry, "conversations", "from", "value")):
        role = SHAREGPT_ROLES.get(speaker.lower())
        if role is None:
            raise _Invalid(
                f'conversations[{j}] has unknown "from" {speaker!r} '
                f"(known: {', '.join(SHAREGPT_ROLES)})"
            )
        if role == "user":
            last_user = j
        messages.append((role, value))
    if last_user < 0:
        return None
    return Conversation(tuple(messages[: last_user + 1]), SHAREGPT_SOURCE)


class _ArrayReader:
    """The elements of one JSON array in a binary file, one at a time, in bounded memory.

    A sliding text buffer: bytes are read `chunk_size` at a time and decoded incrementally (a
    UTF-8 character cut by a chunk boundary waits for the next chunk), each element is decoded
    with `JSONDecoder.raw_decode` where it starts, and consumed text is sliced away when more is
    read. An element cut by the end of the buffer fails to decode near that end (or as an
    unterminated string): then more is read, at least as much again as the pending element, so
    a long element costs a logarithmic number of retries and reading stays linear.
    """

    def __init__(self, f: BinaryIO, path: Path, chunk_size: int) -> None:
        self.f = f
        self.path = path
        self.chunk_size = chunk_size
        self.decoder = json.JSONDecoder()
        self.utf8 = codecs.getincrementaldecoder("utf-8")()
        self.buf = ""
        self.pos = 0  # next unconsumed character of buf
        self.eof = False
        self.bytes_read = _skip_bom(f)  # bytes taken from the file so far
        # A known (index in buf, byte offset in the file) pair, moved forward by `offset`.
        self.mark_char = 0
        self.mark_byte = self.bytes_read

    def offset(self, i: int) -> int:
        """The file byte offset of buf[i]; i never goes back (but may stay) between calls."""
        if i > self.mark_char:
            self.mark_byte += _utf8_len(self.buf[self.mark_char : i])
            self.mark_char = i
        return self.mark_byte

    def fill(self, want: int) -> None:
        """Read at least `want` more bytes (a chunk at least), dropping the consumed text."""
        if self.eof:
            return
        data = self.f.read(max(want, self.chunk_size))
        if data:
            try:
                text = self.utf8.decode(data)
            except UnicodeDecodeError as e:
                pending = len(self.utf8.getstate()[0])
                at = self.bytes_read - pending + e.start
                raise DatasetError(f"dataset {self.path}: not UTF-8 text (at byte {at})") from None
            self.bytes_read += len(data)
        else:
            self.eof = True
            try:
                text = self.utf8.decode(b"", final=True)
            except UnicodeDecodeError:
                raise DatasetError(
                    f"dataset {self.path}: the file ends inside a UTF-8 character"
                ) from None
        self.offset(self.pos)
        self.buf = self.buf[self.pos :] + text
        self.pos = self.mark_char = 0

    def next_char(self) -> str:
        """The next non-whitespace character ("" at the end of the file), not consumed."""
        while True:
            m = _NOT_WS.search(self.buf, self.pos)
            if m:
                self.pos = m.start()
                return self.buf[self.pos]
            self.pos = len(self.buf)
            if self.eof:
                return ""
            self.fill(self.chunk_size)

    def value(self, where: str) -> Any:
        """Decode the JSON value starting at pos (a non-whitespace character)."""
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as e:
                unterminated = e.msg.startswith("Unterminated")
                if not self.eof and (unterminated or e.pos >= len(self.buf) - _CUT_MARGIN):
                    self.fill(len(self.buf) - self.pos)
                    continue
                if unterminated or not self.buf[e.pos :].strip(" \t\r\n"):
                    raise DatasetError(
                        f"dataset {self.path}: {where}: the file ends inside it (truncated?): "
                        f"{e.msg}"
                    ) from None
                at = self.offset(self.pos) + _utf8_len(self.buf[self.pos : e.pos])
                raise DatasetError(
                    f"dataset {self.path}: {where}: not valid JSON: {e.msg} at byte {at}"
                ) from None
            if (
                isinstance(value, (int, float))
                and end > len(self.buf) - _CUT_MARGIN
                and not self.eof
            ):  # a number may go on: `-0` of `-0.25`, `1.5` of `1.5e-3`
                self.fill(len(self.buf) - self.pos)
                continue
            self.pos = end
            return value

    def elements(self) -> Iterator[tuple[int, int, Any]]:
        """(index, byte offset, value) of each element, then checks the file ends there."""
        c = self.next_char()
        if not c:
            raise DatasetError(f"dataset {self.path}: the file is empty")
        if c != "[":
            raise DatasetError(
                f"dataset {self.path}: a ShareGPT file must be one JSON array, but it starts "
                f"with {c!r}"
            )
        self.pos += 1
        index = 0
        c = self.next_char()
        while c != "]":
            if not c:
                raise DatasetError(
                    f"dataset {self.path}: the file ends inside the array (truncated?) after "
                    f"{index} elements"
                )
            offset = self.offset(self.pos)
            if c == ",":
                raise DatasetError(
                    f"dataset {self.path}: element {index} (byte {offset}): missing (a ',' "
                    f"without a value before it)"
                )
            yield index, offset, self.value(f"element {index} (byte {offset})")
            index += 1
            c = self.next_char()
            if c == ",":
                self.pos += 1
                c = self.next_char()
                if c == "]":
                    raise DatasetError(
                        f"dataset {self.path}: a ',' after the last element ({index - 1}), "
                        f"at byte {self.offset(self.pos)}: JSON allows none"
                    )
            elif c and c != "]":
                raise DatasetError(
                    f"dataset {self.path}: expected ',' or ']' after element {index - 1}, found "
                    f"{c!r} at byte {self.offset(self.pos)}"
                )
        self.pos += 1
        c = self.next_char()
        if c:
            raise DatasetError(
                f"dataset {self.path}: more data after the array's closing ']' ({c!r} at byte "
                f"{self.offset(self.pos)}): a ShareGPT file is one JSON array"
            )


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "null"


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."
