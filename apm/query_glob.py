"""Server globs of the query language, and the regexes they compile to.

A glob is ``*`` (any run of characters), ``?`` (one character), ``[...]`` (one character of a
class: members and ranges such as ``a-z``, negated by a leading ``!``) and literal characters.
The regex is evaluated per row by Spark's ``RLIKE`` and by the JVM operator
(``io.apm.aggregator.Selection``), both Java regexes, and by :meth:`apm.query.Query.matches`.

Why not the naive translation (``*`` to ``.*``): ``*?*?*?*?*?*?Z`` then becomes
``.*..*..*..*..*..*.Z``, whose backtracking on a name without ``Z`` grows as a power of the
name's length (years for a 200-character name). Instead, runs of ``*`` collapse to one, and
``seg0*seg1*...*segk`` compiles to ``seg0(?>.*?seg1)...(?>.*?seg{k-1}).*segk``: every
segment is fixed-width, so taking the leftmost place of each middle segment is never worse
than a later one (what follows starts with ``*``), and the atomic group ``(?>...)`` (Python
3.11 ``re`` and Java alike) keeps the engine from trying the others. Each segment is then
tried at most once per position of the name, so a match costs O(name length x glob length),
and a glob is at most :data:`MAX_GLOB_CHARS` characters with at most :data:`MAX_GLOB_STARS`
runs of ``*``.

Two kinds of glob share this grammar and its bound: server globs (:data:`SERVER_GLOB`, the
characters of a server name) and tag-value globs (:data:`TAG_VALUE_GLOB`, after ``key:`` in a
query). A tag value may hold any printable character (:mod:`apm.tags`), so its glob may too,
save the query's separators (white space, ``,``, ``(`` and ``)``): ``?`` matches those.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

__all__ = [
    "MAX_GLOB_CHARS",
    "MAX_GLOB_STARS",
    "SERVER_GLOB",
    "TAG_VALUE_GLOB",
    "GlobError",
    "GlobKind",
    "check",
    "glob_to_regex",
]

MAX_GLOB_CHARS = 256  # a server name is at most 200 (apm.model.MAX_NAME_LEN); classes add some
MAX_GLOB_STARS = 32


_SERVER_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-*?[]!")


def _tag_value_char(ch: str) -> bool:
    # str.isprintable, as apm.tags checks values, minus the separators of the query text.
    return ch.isprintable() and not ch.isspace() and ch not in ",()"


class GlobKind(NamedTuple):
    """What a glob selects (named in errors) and which characters it may hold."""

    name: str
    allowed: Callable[[str], bool]


SERVER_GLOB = GlobKind("server glob", _SERVER_CHARS.__contains__)
TAG_VALUE_GLOB = GlobKind("tag-value glob", _tag_value_char)


class GlobError(ValueError):
    """A glob that is refused; ``offset`` is the 0-based offset of the fault in the glob."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


def _class(body: str, at: int) -> str:
    """``[body]`` as a regex class: ``x-y`` is a range when a character follows the ``-``,
    any other ``-`` is itself (as Python and Java read it), and every member is escaped, so
    that no engine reads ``--``, ``[`` or ``&&`` as a set operation."""
    negate = body.startswith("!")
    chars, out, k = body[1:] if negate else body, [], 0
    while k < len(chars):
        if k + 2 < len(chars) and chars[k + 1] == "-":
            low, high = chars[k], chars[k + 2]
            if low > high:
                raise GlobError(f"invalid class [{body}]: the range {low}-{high} is empty", at)
            out.append(f"{re.escape(low)}-{re.escape(high)}")
            k += 3
        else:
            out.append(re.escape(chars[k]))
            k += 1
    if not out:
        raise GlobError(f"invalid class [{body}]: it has no member", at)
    return "[" + ("^" if negate else "") + "".join(out) + "]"


def _segments(glob: str) -> list[list[str]]:
    """The regex pieces of each ``*``-separated segment (one piece per character matched)."""
    segments: list[list[str]] = [[]]
    i = 0
    while i < len(glob):
        ch = glob[i]
        if ch == "*":
            if i == 0 or glob[i - 1] != "*":  # a run of '*' is one '*'
                segments.append([])
        elif ch == "?":
            segments[-1].append(".")
        elif ch == "[":
            end = glob.find("]", i + 1)
            if end < 0:
                raise GlobError("'[' is never closed by ']'", i)
            segments[-1].append(_class(glob[i + 1 : end], i))
            i = end
        else:
            segments[-1].append(re.escape(ch))
        i += 1
    return segments


def check(glob: str, kind: GlobKind = SERVER_GLOB) -> None:
    """Raises :class:`GlobError` unless ``glob`` is a glob of ``kind`` the query language
    accepts."""
    if len(glob) > MAX_GLOB_CHARS:
        raise GlobError(f"a {kind.name} is at most {MAX_GLOB_CHARS} characters", MAX_GLOB_CHARS)
    for at, ch in enumerate(glob):
        if not kind.allowed(ch):
            raise GlobError(f"{ch!r} is not allowed in a {kind.name}", at)
    stars = [m.start() for m in re.finditer(r"\*+", glob)]
    if len(stars) > MAX_GLOB_STARS:
        raise GlobError(
            f"a {kind.name} has at most {MAX_GLOB_STARS} runs of '*'", stars[MAX_GLOB_STARS]
        )
    _segments(glob)
    # Kept from the first grammar: a ']' outside a class is a literal, but only when the
    # brackets balance, so that 'web-1]' is refused as a typo rather than matching nothing.
    opened, closed = glob.count("["), glob.count("]")
    if opened != closed:
        at = glob.rindex("]" if closed > opened else "[")
        raise GlobError("unbalanced '[' and ']'", at)


def glob_to_regex(glob: str, kind: GlobKind = SERVER_GLOB) -> str:
    """The unanchored regex (Python and Java) of a glob that :func:`check` accepts."""
    check(glob, kind)
    first, *rest = ["".join(s) for s in _segments(glob)]
    if not rest:
        return first
    *middle, last = rest
    return first + "".join(f"(?>.*?{seg})" for seg in middle) + ".*" + last
