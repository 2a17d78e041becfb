"""A set of names that already passed the naming rules, bounded in bytes.

The validator looks names up here instead of matching them again. Names come from the
network, so the set is bounded by an estimate of the memory it holds, not by its length: at
the longest legal names an entry-count bound lets 200,000 of them hold ~100 MiB. Past the
budget the set is emptied (names are re-checked, which costs a regex, never a wrong answer)
and the eviction is counted.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["ENTRY_BYTES", "NameCache"]

# An entry's fixed cost beyond its characters: the str header (49 bytes for ASCII, which
# every legal name is) and its share of the set's table (load factor <= 0.6, 16-byte slots).
ENTRY_BYTES = 96


class NameCache:
    """Names seen before, ``bytes`` never above ``max_bytes``; ``on_evict(n)`` is told how
    many names were dropped each time the budget empties the set."""

    def __init__(self, max_bytes: int, on_evict: Callable[[int], None] | None = None) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self.on_evict: Callable[[int], None] = on_evict or (lambda _n: None)
        self._names: set[str] = set()

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __len__(self) -> int:
        return len(self._names)

    def add(self, name: str) -> None:
        if name in self._names:
            return
        size = ENTRY_BYTES + len(name)
        if size > self.max_bytes:  # a budget below one name keeps nothing
            return
        if self.bytes + size > self.max_bytes:
            self.on_evict(len(self._names))
            self._names.clear()
            self.bytes = 0
        self._names.add(name)
        self.bytes += size
