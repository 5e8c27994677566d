"""The domain of a prompt, from its token ids: code, math, json, document, chat or random.

A function of the prompt ids only (text prompts are encoded first), so the same ids get the
same domain whichever endpoint sent them, and cheap whatever the length: it reads bounded
pieces of the prompt (the first, middle and last SAMPLE_WINDOW ids, and the head and tail of
the last message), never the whole of it. Marker words are matched by id, so words outside the
toy vocabulary (hashed ids) count too. A chat-templated prompt's special tokens and the role
after each `<|im_start|>` are left out; "the ask" is the last message with content (the whole
prompt when it is not templated), and its tail its last TAIL tokens, where a request says what
it wants. In order:

1. json: the ask's tail (or the head of a leading system message) names JSON (json, jsonl,
   schema, yaml, csv) and reads as a sentence (under 60 % unknown words): a structured-output
   request, whatever the material;
2. random: over 75 % unknown words (neither in the toy vocabulary, nor markers, nor numbers
   0-999), or over 50 % with under 3 % of English's commonest words (the, of, to, a...);
3. json: `"key":` pairs (a `"` token then `:`) at least JSON_MIN of the tokens (JSON data);
4. document: the ask holds a text of at least DOC_ASK_TOKENS tokens and its first ASK_HEAD or
   last ASK_END tokens name a document (summarize, passage, document, excerpt...; text,
   paragraph, reference, quote after the/this/a/that): questions, summaries, rewrites over a
   passage, even of documentation full of code;
5. code or math: the marker share (code: keywords x2, weaker ones x1, `{ } ; = ( ) # \\``;
   math: numbers, `+ - * / ^ = $ \\`, math words x2) at least CODE_MIN / MATH_MIN and above the
   share of common English words; the one further above its threshold wins;
6. document: the ask (or the untemplated prompt) is a text of at least DOCUMENT_TOKENS tokens;
   a long conversation of short turns, or long material pasted before later turns, is chat;
7. chat: everything else.
"""

from __future__ import annotations

from . import tokenizer

CATEGORIES = ("code", "math", "json", "document", "chat", "random")
SAMPLE_WINDOW = 512  # ids per window; three windows (head, middle, tail) at most
TAIL = 128  # the ask's last tokens: where a request says the format it wants
ASK_HEAD = 16  # the ask's first tokens: its introduction ("Document:", "Below is a passage")
ASK_END = 40  # the ask's last tokens: its request ("Summarise the passage above")
DOCUMENT_TOKENS = 1024
DOC_ASK_TOKENS = 128

_t = tokenizer.token_id


def _ids(words: str) -> frozenset[int]:
    return frozenset(_t(w) for w in words.split())


_CODE_WORDS = _ids(  # x2
    "def return import self elif lambda yield const var print except raise async await "
    "struct fn void namespace null nil println printf console typeof instanceof isinstance "
    "__init__ impl pub func mut endif ifdef sizeof"
)
_CODE_WEAK = _ids(  # x1
    "function class public private static interface extends implements package try catch "
    "finally throw throws new delete auto enum switch case break continue let use include "
    "len range dict str int bool float"
)
_CODE_PUNCT = _ids("{ } ; = ( ) # `")
_JSON_WORDS = _ids("json jsonl schema yaml csv")
_MATH_WORDS = _ids(
    "solve equation equations prove proof integer integers sum product therefore hence "
    "derivative integral theorem lemma probability fraction compute calculate formula root "
    "roots polynomial differentiate discriminant sqrt frac triangle angle divisible prime "
    "modulo remainder x y n"
)
_MATH_OPS = _ids("+ - * / ^ = $ \\")
_NUMBERS = frozenset(_t(str(n)) for n in range(1000))
_DOC_WORDS = _ids(  # name a document wherever they stand
    "summarize summarise summary summarizing summarising summarization document documents "
    "documentation passage passages article excerpt tl"
)
_DOC_NOUNS = _ids("text paragraph paragraphs reference quote quotes")  # after the/this/a/that
_ARTICLES = _ids("the this a that")
_PROSE_WORDS = _ids("the of to a that with was by be this are from an which their it its has have")
_QUOTE, _COLON = _t('"'), _t(":")
_START, _END, _SYSTEM = tokenizer.IM_START, tokenizer.IM_END, _t("system")
_MARKERS = (
    _CODE_WORDS | _CODE_WEAK | _JSON_WORDS | _MATH_WORDS | _NUMBERS | _DOC_WORDS | _PROSE_WORDS
)
_DOC_CUES = _DOC_WORDS | _DOC_NOUNS
_KNOWN = tokenizer._N  # ids below it are toy-vocabulary words and punctuation

# Random tokens: mostly unknown words and almost none of English's commonest (short English
# messages can be half unknown words to the toy vocabulary, never without "the", "a"...).
RANDOM_UNKNOWN = 0.75
RANDOM_PROSE = 0.03
ASK_UNKNOWN = 0.6
# Thresholds: markers per content token.
JSON_MIN = 0.04  # "key": pairs per token (JSON data: ~0.12)
CODE_MIN = 0.12
MATH_MIN = 0.3


def _sample(ids: list[int]) -> list[int]:
    n = len(ids)
    if n <= 3 * SAMPLE_WINDOW:
        return ids
    mid = n // 2 - SAMPLE_WINDOW // 2
    return ids[:SAMPLE_WINDOW] + ids[mid : mid + SAMPLE_WINDOW] + ids[-SAMPLE_WINDOW:]


def strip_template(ids: list[int]) -> list[int]:
    """Content tokens: special tokens and the role after each <|im_start|> left out."""
    out: list[int] = []
    skip_role = False
    for t in ids:
        if skip_role:
            skip_role = False
        elif t >= tokenizer.ENDOFTEXT:
            skip_role = t == _START
        else:
            out.append(t)
    return out


def content_tokens(ids: list[int]) -> list[int]:
    """The sample's content tokens."""
    return strip_template(_sample(ids))


def ask_span(ids: list[int]) -> tuple[int, int]:
    """[start, end) of the last message with content (the whole prompt when untemplated)."""
    n = len(ids)
    if _START not in ids:
        return 0, n
    starts = []
    pos = ids.index(_START)
    while True:
        starts.append(pos)
        try:
            pos = ids.index(_START, pos + 1)
        except ValueError:
            break
    ends = [*starts[1:], n]
    for start, end in zip(reversed(starts), reversed(ends), strict=True):
        body = start + 2  # after <|im_start|> and the role
        stop = end - 1 if end - 1 >= body and ids[end - 1] == _END else end
        if stop > body:
            return body, stop
    first = starts[0]  # a prompt cut inside its first message
    stop = first - 1 if first and ids[first - 1] == _END else first
    return (0, stop) if stop > 0 else (n, n)


def scores(ids: list[int]) -> dict[str, float]:
    """Marker shares of the sample (see the module docstring)."""
    content = content_tokens(ids)
    n = len(content) or 1
    unknown = json_keys = code = math = prose = 0
    prev = -1
    for t in content:
        if t < _KNOWN:
            if t in _CODE_PUNCT:
                code += 1
            if t in _MATH_OPS:
                math += 1
            if t == _COLON and prev == _QUOTE:
                json_keys += 1
        if t in _MARKERS:
            if t in _CODE_WORDS:
                code += 2
            elif t in _CODE_WEAK:
                code += 1
            if t in _MATH_WORDS:
                math += 2
            elif t in _NUMBERS:
                math += 1
            if t in _PROSE_WORDS:
                prose += 1
        elif t >= _KNOWN:
            unknown += 1
        prev = t
    return {
        "unknown": unknown / n,
        "json": json_keys / n,
        "code": code / n,
        "math": math / n,
        "prose": prose / n,
        "tokens": float(len(content)),
    }


def _unknown_share(tokens: list[int]) -> float:
    unknown = sum(1 for t in tokens if t >= _KNOWN and t not in _MARKERS)
    return unknown / (len(tokens) or 1)


def _names_a_document(tokens: list[int]) -> bool:
    if not _DOC_CUES.intersection(tokens):
        return False
    prev = -1
    for t in tokens:
        if t in _DOC_WORDS or (t in _DOC_NOUNS and prev in _ARTICLES):
            return True
        prev = t
    return False


def detect(ids: list[int]) -> str:
    s = scores(ids)
    if s["tokens"] == 0:
        return "chat"
    start, end = ask_span(ids)
    ask_len = end - start
    tail = strip_template(ids[max(start, end - TAIL) : end])
    if _JSON_WORDS.intersection(tail) and _unknown_share(tail) < ASK_UNKNOWN:
        return "json"
    if len(ids) > 2 and ids[0] == _START and ids[1] == _SYSTEM:  # "Answer in JSON only."
        system = strip_template(ids[: 2 + 2 * ASK_HEAD])
        if _JSON_WORDS.intersection(system) and _unknown_share(system) < ASK_UNKNOWN:
            return "json"
    if s["unknown"] > RANDOM_UNKNOWN or (s["unknown"] > 0.5 and s["prose"] < RANDOM_PROSE):
        return "random"
    if s["json"] >= JSON_MIN:
        return "json"
    if ask_len >= DOC_ASK_TOKENS and (
        _names_a_document(ids[start : start + ASK_HEAD])
        or _names_a_document(ids[max(start, end - ASK_END) : end])
    ):
        return "document"
    code = s["code"] / CODE_MIN if s["code"] > s["prose"] else 0.0
    math = s["math"] / MATH_MIN if s["math"] > s["prose"] else 0.0
    if max(code, math) >= 1.0:
        return "code" if code >= math else "math"
    if ask_len >= DOCUMENT_TOKENS:
        return "document"
    return "chat"
