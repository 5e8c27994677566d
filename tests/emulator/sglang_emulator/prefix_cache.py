"""A prefix cache in the spirit of SGLang's radix cache: cached_tokens of a repeated prefix."""

from __future__ import annotations

MAX_ENTRIES = 4_000_000


class PrefixCache:
    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._prefixes: set[int] = set()

    def match(self, ids: list[int]) -> int:
        """Length of the longest cached prefix; the last prompt token is always computed."""
        if not self.enabled:
            return 0
        h = 0
        matched = 0
        prefixes = self._prefixes
        for i in range(len(ids) - 1):
            h = hash((h, ids[i]))
            if h not in prefixes:
                break
            matched = i + 1
        return matched

    def insert(self, ids: list[int]) -> None:
        if not self.enabled:
            return
        if len(self._prefixes) > MAX_ENTRIES:
            self._prefixes.clear()  # a crude eviction; real servers evict LRU leaves
        h = 0
        add = self._prefixes.add
        for t in ids:
            h = hash((h, t))
            add(h)

    def flush(self) -> None:
        self._prefixes.clear()
