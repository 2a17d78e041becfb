"""Regular expressions for the ``=~`` and ``!~`` label matchers, on Google's RE2.

Prometheus' matchers are Go ``regexp`` patterns, which is RE2's syntax, and the pattern comes
from whoever calls the API: Python's ``re`` backtracks (``(a+)+b`` takes exponential time on a
near-miss), RE2 never does. Matching takes time linear in the value; each compiled pattern's
memory (program and DFA cache) is bounded by RE2's ``max_mem`` (:data:`MAX_MEMORY_BYTES`),
which also bounds the work a pattern too large to compile costs before it is refused; the
program is at most :data:`MAX_PROGRAM` instructions (the per-character work when RE2 falls
back from its DFA to its NFA), the pattern at most :data:`MAX_PATTERN_CHARS` characters.

Like Prometheus (2.x), a matcher is anchored at both ends: ``^(?:pattern)$``, done as RE2's
full match, and ``.`` does not match a newline. ``\\C`` (one byte, which may split a
character; Go refuses it too) is refused. Anything RE2 refuses (look-around,
back-references, ``{n}`` over 1000) is a :class:`RegexError` with RE2's reason.

``label_replace`` compiles its pattern with its groups (:func:`compile_capturing`), within
the same limits, unanchored: it anchors the pattern itself as Prometheus does.

An alternation of plain literals (Grafana's multi-value variables: ``(id1|id2|...)``, values
escaped as ``\\.``) is a set lookup instead: ~100 times faster per value than RE2 through
its Python binding, and of any size within :data:`MAX_PATTERN_CHARS`.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Protocol, cast

import re2

__all__ = [
    "MAX_MEMORY_BYTES",
    "MAX_PATTERN_CHARS",
    "MAX_PROGRAM",
    "Capturing",
    "Regex",
    "RegexError",
    "compile_capturing",
    "compile_regex",
]

MAX_PATTERN_CHARS = 16_384  # as long as a whole query may be
MAX_PROGRAM = 10_000  # RE2 instructions (re2's programsize)
# RE2's budget per compiled pattern. A refusal costs work in proportion to it (~5 ms at
# 256 KiB, ~200 ms at RE2's default 8 MiB); the re2 module keeps the last 128 compiled.
MAX_MEMORY_BYTES = 256 * 1024
_MESSAGE_CHARS = 120  # RE2 quotes the offending part of the pattern; keep errors short

_OPTIONS = re2.Options()
_OPTIONS.max_mem = MAX_MEMORY_BYTES
_OPTIONS.log_errors = False  # refusals are the caller's 400, not the server's stderr
_OPTIONS.never_capture = True  # a yes/no answer needs no submatches: RE2 stays on its DFA
# label_replace's: the same budget, with the groups its replacement refers to.
_CAPTURING = re2.Options()
_CAPTURING.max_mem = MAX_MEMORY_BYTES
_CAPTURING.log_errors = False

_META = frozenset("\\.+*?()|[]{}^$")
# Escapes that are the character itself in RE2 (and Go): the punctuation Grafana escapes.
_LITERAL_ESCAPES = frozenset(string.punctuation + " ")


class RegexError(ValueError):
    """A pattern RE2 refuses, or one over a limit."""


class _Program(Protocol):
    programsize: int

    def fullmatch(self, text: bytes) -> object | None: ...


class Match(Protocol):
    def span(self, group: int) -> tuple[int, int]: ...


class Capturing(Protocol):
    """A pattern compiled with its groups (:func:`compile_capturing`)."""

    groups: int
    groupindex: Mapping[str, int]

    def search(self, text: bytes) -> Match | None: ...


class Regex:
    """A compiled pattern, matched against whole values."""

    __slots__ = ("_literals", "_program", "pattern")

    def __init__(
        self, pattern: str, program: _Program | None, literals: frozenset[str] | None
    ) -> None:
        self.pattern = pattern
        self._program = program
        self._literals = literals

    def matches(self, value: str) -> bool:
        if self._literals is not None:
            return value in self._literals
        assert self._program is not None
        # Bytes, so the binding skips its offset bookkeeping; surrogatepass: never raises.
        return self._program.fullmatch(value.encode("utf-8", "surrogatepass")) is not None


def _literals(pattern: str) -> frozenset[str] | None:
    """The strings ``pattern`` matches when it is an alternation of literals, optionally in one
    ``( )`` or ``(?: )`` group, else None (RE2 decides)."""
    body = pattern
    for opening in ("(?:", "("):
        if body.startswith(opening) and body.endswith(")"):
            body = body[len(opening) : -1]  # "(a)|(b)" leaves "a)|(b": not literals
            break
    words: set[str] = set()
    word: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "|":
            words.add("".join(word))
            word = []
        elif ch == "\\":
            escaped = body[i + 1 : i + 2]
            if escaped not in _LITERAL_ESCAPES:  # also "" (a trailing backslash)
                return None
            word.append(escaped)
            i += 1
        elif ch in _META:
            return None
        else:
            word.append(ch)
        i += 1
    words.add("".join(word))
    return frozenset(words)


def _refuses_byte_escape(pattern: str) -> bool:
    """Whether ``pattern`` has ``\\C`` outside a ``\\Q...\\E`` quotation."""
    i = 0
    while i < len(pattern) - 1:
        if pattern[i] == "\\":
            if pattern[i + 1] == "C":
                return True
            if pattern[i + 1] == "Q":
                end = pattern.find("\\E", i + 2)
                if end < 0:
                    return False
                i = end
            i += 2
        else:
            i += 1
    return False


def _reason(exc: Exception) -> str:
    raw = exc.args[0] if exc.args else ""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    return text if len(text) <= _MESSAGE_CHARS else text[:_MESSAGE_CHARS] + "..."


def compile_regex(pattern: str) -> Regex:
    """Compiles ``pattern`` or raises :class:`RegexError`."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise RegexError(f"a pattern is at most {MAX_PATTERN_CHARS} characters")
    literals = _literals(pattern)
    if literals is not None:
        return Regex(pattern, None, literals)
    return Regex(pattern, _compile(pattern, _OPTIONS), None)


def compile_capturing(pattern: str) -> Capturing:
    """``pattern`` compiled as it is (not anchored) with its groups, for ``search``; within
    the same limits as :func:`compile_regex`, or :class:`RegexError`."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise RegexError(f"a pattern is at most {MAX_PATTERN_CHARS} characters")
    program = _compile(pattern, _CAPTURING)
    return cast(Capturing, program)


def _compile(pattern: str, options: re2.Options) -> _Program:
    if _refuses_byte_escape(pattern):
        raise RegexError("\\C (any byte) is not supported")
    try:
        program: _Program = re2.compile(pattern, options)
    except UnicodeEncodeError:
        raise RegexError("the pattern is not valid Unicode (a lone surrogate)") from None
    except re2.error as exc:
        reason = _reason(exc)
        if "too large" in reason:
            reason = f"the pattern is too large (RE2's max_mem, {MAX_MEMORY_BYTES} bytes)"
        raise RegexError(reason) from None
    if program.programsize > MAX_PROGRAM:
        raise RegexError(
            f"the pattern compiles to {program.programsize} RE2 instructions, "
            f"more than {MAX_PROGRAM}"
        )
    return program
