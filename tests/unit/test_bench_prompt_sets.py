import re

import pytest

from bench import prompt_sets
from bench.prompt_sets import PromptBuilder, fit_text, math_corpus, windows


class WordServer:
    """Counts tokens as words + punctuation (like a toy tokenizer); optional /tokenize."""

    def __init__(self, tokenize: bool) -> None:
        self.can_tokenize = tokenize
        self.counts = 0

    @staticmethod
    def _tok(text: str) -> list[str]:
        return re.findall(r"\w+|[^\w\s]", text)

    async def tokenize(self, texts):
        if not self.can_tokenize:
            return None
        return [[hash(t) % 50000 for t in self._tok(x)] for x in texts]

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
    assert len(prompt_sets.corpus(category)) > 150_000


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
