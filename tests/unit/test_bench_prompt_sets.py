import re

import pytest

from bench import corpora
from bench.corpora import math_corpus
from bench.errors import BenchError, ServerError
from bench.prompt_sets import PromptBuilder, fit_text, random_prompts, windows


class WordServer:
    """Counts tokens as words + punctuation (like a toy tokenizer); optional /tokenize; a
    model vocabulary of `vocab` ids (None: unknown, as when config.json is not readable)."""

    def __init__(self, tokenize: bool, vocab: int | None = 50000) -> None:
        self.can_tokenize = tokenize
        self.vocab = vocab
        self.counts = 0
        self.tokenized: list[int] = []

    async def vocab_size(self) -> int:
        if self.vocab is None:
            raise ServerError("no /tokenize and no config.json here")
        return self.vocab

    @staticmethod
    def _tok(text: str) -> list[str]:
        return re.findall(r"\w+|[^\w\s]", text)

    async def tokenize(self, texts):
        if not self.can_tokenize:
            return None
        ids = [[hash(t) % (self.vocab or 50000) for t in self._tok(x)] for x in texts]
        self.tokenized += [t for p in ids for t in p]
        return ids

    async def count_prompt_tokens(self, text: str) -> int:
        self.counts += 1
        return len(self._tok(text))


def test_windows_are_exact_and_start_at_distinct_offsets():
    stream = list(range(100))
    ps = windows(stream, 250, 5, seed=3)
    assert all(len(p.input_ids) == 250 and p.tokens == 250 for p in ps)
    assert len({p.input_ids[0] for p in ps}) == 5
    assert ps[0].input_ids[1] == (ps[0].input_ids[0] + 1) % 100  # cyclic and contiguous


@pytest.mark.parametrize("category", ["code", "prose", "math"])
def test_shipped_corpora_are_large_enough(category):
    # long contexts should not need to repeat the text much
    assert len(corpora.corpus(category)) > 150_000


def test_math_corpus_is_deterministic():
    assert math_corpus(1, 5000) == math_corpus(1, 5000)
    assert math_corpus(1, 5000) != math_corpus(2, 5000)


async def test_builder_uses_server_tokenize_for_exact_ids():
    srv = WordServer(tokenize=True)
    b = PromptBuilder(srv)
    ps = await b.build("code", 1000, 4, seed=1)
    assert all(len(p.input_ids) == 1000 for p in ps)
    assert "tokenize" in b.method["code"]
    assert srv.counts == 0


async def test_builder_falls_back_to_fitted_text():
    srv = WordServer(tokenize=False)
    b = PromptBuilder(srv)
    ps = await b.build("prose", 700, 3, seed=2)
    for p in ps:
        assert p.input_ids is None
        assert await srv.count_prompt_tokens(p.text) == 700
    assert len({p.text[:50] for p in ps}) == 3
    assert "fitted" in b.method["prose"]


async def test_fit_text_gets_exact_count_for_odd_source():
    src = "alpha, beta; gamma... delta!? " * 100
    p = await fit_text(WordServer(False), src, 5, 333)
    assert p.tokens == 333


async def test_random_prompts_exact():
    ps = await PromptBuilder(WordServer(False)).build("random", 64, 3, seed=0)
    assert [len(p.input_ids) for p in ps] == [64] * 3
    assert ps[0].input_ids != ps[1].input_ids


@pytest.mark.parametrize("tokenize", [True, False])
async def test_random_ids_stay_inside_a_small_vocabulary(tokenize):
    # the bug: ids drawn in a fixed (1000, 30000) range crashed a 438-token model's scheduler
    srv = WordServer(tokenize, vocab=438)
    b = PromptBuilder(srv)
    ps = await b.build("random", 512, 8, seed=5)
    ids = [t for p in ps for t in p.input_ids]
    assert len(ids) == 512 * 8 and min(ids) >= 0 and max(ids) < 438
    assert len(set(ids)) > 200  # drawn across the vocabulary, not from a corner of it


async def test_random_ids_come_from_the_servers_tokenize_of_the_corpora():
    srv = WordServer(tokenize=True)
    b = PromptBuilder(srv)
    ps = await b.build("random", 2000, 4, seed=1)
    seen = set(srv.tokenized)
    assert {t for p in ps for t in p.input_ids} <= seen
    assert len({t for p in ps for t in p.input_ids}) > 0.5 * min(len(seen), 8000)
    assert "/tokenize" in b.method["random"]
    # the corpora are tokenized once: the text categories reuse them
    calls = len(srv.tokenized)
    await b.build("code", 100, 2, seed=1)
    await b.build("random", 100, 2, seed=2)
    assert len(srv.tokenized) == calls


async def test_random_without_tokenize_uses_the_model_vocab_size():
    srv = WordServer(tokenize=False, vocab=1000)
    b = PromptBuilder(srv)
    ps = await b.build("random", 3000, 2, seed=0)
    ids = {t for p in ps for t in p.input_ids}
    assert max(ids) < 1000 and len(ids) > 900
    assert "vocab_size" in b.method["random"] and "1000" in b.method["random"]


async def test_random_without_tokenize_or_vocab_size_is_a_clear_error():
    b = PromptBuilder(WordServer(tokenize=False, vocab=None))
    with pytest.raises(BenchError, match="no /tokenize"):
        await b.build("random", 64, 2, seed=0)
    # text categories do not need a vocabulary
    assert len(await b.build("prose", 50, 2, seed=0)) == 2


def test_random_prompts_are_deterministic_and_draw_only_given_ids():
    vocab = [3, 17, 400]
    a = random_prompts(vocab, 100, 3, seed=9)
    assert a == random_prompts(vocab, 100, 3, seed=9)
    assert {t for p in a for t in p.input_ids} == set(vocab)
    with pytest.raises(ValueError):
        random_prompts([], 10, 1, seed=0)
