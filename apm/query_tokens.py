"""The query language's tokens and its smallest parts (a duration, a function), and
:class:`QueryError`, for :mod:`apm.query`'s parser. Import :class:`QueryError` from
:mod:`apm.query`."""

from __future__ import annotations

import math
import re

from apm import functions as catalogue
from apm.query_model import Function

__all__ = ["MAX_WINDOW_SECONDS", "QueryError", "Tokens", "duration", "function"]

MAX_WINDOW_SECONDS = 86_400
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
_TOKEN = re.compile(r"\s*(?:(?P<punct>[,()])|(?P<word>[^\s,()]+))")


class QueryError(ValueError):
    """A query that does not parse; ``position`` is the 0-based offset in the text."""

    def __init__(self, message: str, position: int, expected: str) -> None:
        super().__init__(f"at position {position}: {message}")
        self.detail = message
        self.position = position
        self.expected = expected


class Tokens:
    """The words and punctuation of a query text, each with its position, read in order."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.items: list[tuple[str, int]] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                break
            kind = "punct" if m.group("punct") else "word"
            self.items.append((m.group(kind), m.start(kind)))
            pos = m.end()
        self.i = 0

    def peek(self) -> tuple[str, int]:
        return self.items[self.i] if self.i < len(self.items) else ("", len(self.text.rstrip()))

    def take(self, expected: str) -> tuple[str, int]:
        tok, pos = self.peek()
        if not tok:
            raise QueryError(f"expected {expected}, got the end of the query", pos, expected)
        self.i += 1
        return tok, pos

    def keyword(self, word: str) -> None:
        tok, pos = self.take(word)
        if tok.upper() != word:
            raise QueryError(f"expected {word}, got {tok!r}", pos, word)

    def comma(self) -> bool:
        if self.peek()[0] == ",":
            self.i += 1
            return True
        return False


def duration(tok: str, pos: int) -> int:
    """A WINDOW duration in seconds, 1s to 1d."""
    m = re.fullmatch(r"(\d+)([smhdSMHD])", tok)
    expected = "a duration such as 10s, 1m, 5m or 1h"
    if not m:
        raise QueryError(f"expected {expected}, got {tok!r}", pos, expected)
    # int() of a long digit string costs quadratic time and raises ValueError past 4300
    # digits; anything past 9 significant digits is out of range anyway.
    digits = m.group(1).lstrip("0") or "0"
    seconds = int(digits) * _UNITS[m.group(2).lower()] if len(digits) <= 9 else 0
    if not 1 <= seconds <= MAX_WINDOW_SECONDS:
        raise QueryError(f"window must be between 1s and 1d, got {tok!r}", pos, expected)
    return seconds


def _param(spec: catalogue.Spec, raw: str, pos: int) -> float:
    low, high = spec.param or (-math.inf, math.inf)
    try:
        p = float(raw)
    except ValueError:
        raise QueryError(f"expected {spec.param_text}, got {raw!r}", pos, spec.param_text) from None
    if not low < p < high:
        raise QueryError(f"expected {spec.param_text}, got {raw!r}", pos, spec.param_text)
    return p


def function(tokens: Tokens) -> Function:
    """One function of COMPUTE (or of a ranking): a catalogue name, ``name(p)`` or ``pN``."""
    expected = f"a function: {catalogue.forms()}"
    tok, pos = tokens.take(expected)
    name = tok.lower()
    spec = catalogue.CATALOGUE.get(name)
    if spec is not None and spec.param is None:
        return Function(name)
    if spec is not None:
        paren, ppos = tokens.take("'('")
        if paren != "(":
            raise QueryError(f"expected '(' after {name}, got {paren!r}", ppos, "'('")
        raw, rpos = tokens.take(spec.param_text)
        p = _param(spec, raw, rpos)
        close, cpos = tokens.take("')'")
        if close != ")":
            raise QueryError(f"expected ')', got {close!r}", cpos, "')'")
        return Function(name, p)
    if (short := catalogue.shorthand(name)) is not None:
        spec, raw = short
        return Function(spec.name, _param(spec, raw, pos + len(name) - len(raw)))
    raise QueryError(f"expected {expected}, got {tok!r}", pos, expected)
