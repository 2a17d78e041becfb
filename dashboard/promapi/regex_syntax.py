"""The syntax of label-matcher regular expressions (see :mod:`dashboard.promapi.regex`): a
bounded recursive-descent parser from pattern text to a small tree. Nesting is capped at
``MAX_DEPTH``, repeat counts at ``MAX_REPEAT``, so parsing is linear in the pattern's length."""

from __future__ import annotations

import string
from dataclasses import dataclass

__all__ = ["MAX_DEPTH", "MAX_REPEAT", "CharSet", "Node", "RegexError", "parse_regex"]

MAX_DEPTH = 32
MAX_REPEAT = 1000
_WORD = string.ascii_letters + string.digits + "_"
_CLASSES = {"d": string.digits, "w": _WORD, "s": " \t\n\r\f\v"}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v"}
_SPECIAL = set("\\.+*?()|[]{}^$")


class RegexError(ValueError):
    def __init__(self, message: str, position: int) -> None:
        super().__init__(f"{message} at position {position}")
        self.position = position


@dataclass(frozen=True)
class CharSet:
    """Characters one step matches: ``chars`` and the inclusive ``ranges``, or with ``negate``
    everything else. Ranges stay ranges, so ``[\x00-\uffff]`` costs two characters of memory."""

    chars: frozenset[str]
    negate: bool = False
    ranges: tuple[tuple[str, str], ...] = ()

    def has(self, ch: str) -> bool:
        found = ch in self.chars or any(lo <= ch <= hi for lo, hi in self.ranges)
        return found != self.negate


# AST: ("set", CharSet) | ("cat", [nodes]) | ("alt", [nodes]) | ("rep", node, lo, hi|None)
Node = tuple


class _Parser:
    def __init__(self, text: str) -> None:
        self.text, self.i = text, 0

    def error(self, message: str) -> RegexError:
        return RegexError(message, self.i)

    def peek(self) -> str:
        return self.text[self.i] if self.i < len(self.text) else ""

    def alt(self, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise self.error(f"groups nest at most {MAX_DEPTH} deep")
        branches = [self.cat(depth)]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.cat(depth))
        return branches[0] if len(branches) == 1 else ("alt", branches)

    def cat(self, depth: int) -> Node:
        items: list[Node] = []
        while self.peek() not in ("", "|", ")"):
            items.append(self.repeat(self.atom(depth)))
        return ("cat", items)

    def repeat(self, node: Node) -> Node:
        ch = self.peek()
        if ch in ("*", "+", "?"):
            self.i += 1
            lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[ch]
        elif ch == "{":
            lo, hi = self.counts()
        else:
            return node
        if self.peek() == "?":  # lazy: the same set of whole-value matches
            self.i += 1
        if self.peek() in ("*", "+", "?", "{"):
            raise self.error("a quantifier cannot follow another")
        return ("rep", node, lo, hi)

    def counts(self) -> tuple[int, int | None]:
        start = self.i
        end = self.text.find("}", start)
        body = self.text[start + 1 : end] if end > 0 else ""
        lo_s, comma, hi_s = body.partition(",")
        ok = lo_s.isdigit() and (not hi_s or hi_s.isdigit()) and len(body) <= 9
        if not ok:
            raise self.error("'{' starts a repeat {n}, {n,} or {n,m}; write \\{ for the brace")
        lo = int(lo_s)
        hi = (int(hi_s) if hi_s else None) if comma else lo
        if lo > MAX_REPEAT or (hi is not None and (hi > MAX_REPEAT or hi < lo)):
            raise self.error(f"a repeat count is at most {MAX_REPEAT}, and n <= m")
        self.i = end + 1
        return lo, hi

    def atom(self, depth: int) -> Node:
        ch = self.peek()
        if ch == "(":
            self.i += 1
            if self.text.startswith("?:", self.i):
                self.i += 2
            elif self.peek() == "?":
                raise self.error("only (?: ) groups are supported, not flags or look-around")
            inner = self.alt(depth + 1)
            if self.peek() != ")":
                raise self.error("missing ')'")
            self.i += 1
            return inner
        if ch == "[":
            return ("set", self.bracket())
        if ch == ".":
            self.i += 1
            return ("set", CharSet(frozenset("\n"), negate=True))
        if ch == "\\":
            return ("set", self.escape(in_bracket=False))
        if ch in ("*", "+", "?", "{"):
            raise self.error(f"nothing to repeat before {ch!r}")
        if ch in ("^", "$"):
            # Anchors mean nothing more at the ends of an anchored pattern; elsewhere they
            # would need the empty-width matching this engine leaves out.
            at_end = (ch == "^" and self.i == 0) or (ch == "$" and self.i == len(self.text) - 1)
            if not at_end:
                raise self.error(
                    f"{ch!r} is only supported at the {'start' if ch == '^' else 'end'}"
                )
            self.i += 1
            return ("cat", [])
        self.i += 1
        return ("set", CharSet(frozenset(ch)))

    def escape(self, in_bracket: bool) -> CharSet:
        self.i += 1
        ch = self.peek()
        if not ch:
            raise self.error("a trailing backslash")
        self.i += 1
        if ch.lower() in _CLASSES:
            if ch.isupper() and in_bracket:
                raise self.error(f"\\{ch} is not supported inside brackets")
            return CharSet(frozenset(_CLASSES[ch.lower()]), negate=ch.isupper())
        if ch in _ESCAPES:
            return CharSet(frozenset(_ESCAPES[ch]))
        if ch in _SPECIAL or ch in string.punctuation or ch == " ":
            return CharSet(frozenset(ch))
        raise self.error(f"unsupported escape \\{ch}")

    def bracket(self) -> CharSet:
        self.i += 1
        negate = self.peek() == "^"
        if negate:
            self.i += 1
        chars: set[str] = set()
        ranges: list[tuple[str, str]] = []
        first = True
        while True:
            ch = self.peek()
            if not ch:
                raise self.error("missing ']'")
            if ch == "]" and not first:
                self.i += 1
                return CharSet(frozenset(chars), negate, tuple(ranges))
            first = False
            if ch == "[":
                raise self.error("'[' inside brackets must be escaped")
            if ch == "\\":
                found = self.escape(in_bracket=True)
                if len(found.chars) != 1:  # \d, \w or \s: a whole class, never a range end
                    chars |= found.chars
                    continue
                low = next(iter(found.chars))
            else:
                low = ch
                self.i += 1
            if self.peek() == "-" and self.text[self.i + 1 : self.i + 2] not in ("]", ""):
                self.i += 1
                high = self.range_end()
                if high < low:
                    raise self.error(f"a reversed range {low}-{high} in brackets")
                ranges.append((low, high))
            else:
                chars.add(low)

    def range_end(self) -> str:
        if self.peek() != "\\":
            ch = self.peek()
            self.i += 1
            return ch
        found = self.escape(in_bracket=True)
        if len(found.chars) != 1:
            raise self.error("\\d, \\w or \\s cannot end a range")
        return next(iter(found.chars))


def parse_regex(pattern: str) -> Node:
    """The tree of ``pattern``, or :class:`RegexError` naming the position."""
    parser = _Parser(pattern)
    tree = parser.alt(0)
    if parser.i != len(pattern):  # only a ')' stops the top level early
        raise parser.error("unbalanced ')'")
    return tree
