"""The character scanner under the selector parser: names, quoted strings with Go's escapes,
numbers and operators, each read in one pass with no backtracking."""

from __future__ import annotations

import string

__all__ = ["MAX_NUMBER_CHARS", "Scanner", "SelectorError"]

MAX_NUMBER_CHARS = 64
_SIMPLE_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}


class SelectorError(ValueError):
    """A query outside the supported subset; ``position`` is the 0-based offset in it."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(f"parse error at char {position + 1}: {message}")
        self.detail = message
        self.position = position


class Scanner:
    def __init__(self, text: str) -> None:
        self.text, self.i = text, 0

    def peek(self) -> str:
        return self.text[self.i] if self.i < len(self.text) else ""

    def skip_space(self) -> None:
        while self.i < len(self.text) and self.text[self.i].isspace():
            self.i += 1

    def identifier(self) -> str:
        """A metric or label name (``[A-Za-z_:][A-Za-z0-9_:]*``), or "" when none starts here."""
        start = self.i
        while self.i < len(self.text):
            ch = self.text[self.i]
            ok = ch.isascii() and (ch.isalpha() or ch in "_:" or (ch.isdigit() and self.i > start))
            if not ok:
                break
            self.i += 1
        return self.text[start : self.i]

    def string(self) -> str:
        quote, start = self.peek(), self.i
        if quote not in ('"', "'", "`"):
            raise SelectorError("expected a quoted string", self.i)
        self.i += 1
        out: list[str] = []
        while True:
            ch = self.peek()
            if not ch or (ch == "\n" and quote != "`"):
                raise SelectorError("unterminated quoted string", start)
            self.i += 1
            if ch == quote:
                return "".join(out)
            if ch == "\\" and quote != "`":
                out.append(self._escape(quote))
            else:
                out.append(ch)

    def _escape(self, quote: str) -> str:
        at, ch = self.i - 1, self.peek()
        self.i += 1
        if ch in _SIMPLE_ESCAPES and (ch not in "'\"" or ch == quote):
            return _SIMPLE_ESCAPES[ch]
        if ch in _HEX_ESCAPES:
            width = _HEX_ESCAPES[ch]
            digits = self.text[self.i : self.i + width]
            if len(digits) != width or any(c not in string.hexdigits for c in digits):
                raise SelectorError(f"\\{ch} needs {width} hexadecimal digits", at)
            value = int(digits, 16)
            if value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
                raise SelectorError(f"\\{ch}{digits} is not a character", at)
            self.i += width
            return chr(value)
        if ch and ch in "01234567":
            digits = ch + self.text[self.i : self.i + 2]
            if len(digits) != 3 or any(c not in "01234567" for c in digits) or digits > "377":
                raise SelectorError("an octal escape is three digits up to \\377", at)
            self.i += 2
            return chr(int(digits, 8))
        raise SelectorError(f"unknown escape sequence \\{ch}", at)

    def op(self, chars: str) -> str | None:
        """The next non-space character when it is one of ``chars`` (consumed), else None."""
        self.skip_space()
        ch = self.peek()
        if ch and ch in chars:
            self.i += 1
            return ch
        return None

    def number(self) -> float:
        self.skip_space()
        start = self.i
        while self.i < len(self.text) and (
            self.text[self.i] in "0123456789.eE"
            or (self.text[self.i] in "+-" and self.text[self.i - 1] in "eE")
        ):
            self.i += 1
        raw = self.text[start : self.i]
        if not raw or len(raw) > MAX_NUMBER_CHARS:
            raise SelectorError("expected a number", start)
        try:
            return float(raw)
        except ValueError:
            raise SelectorError(f"bad number {raw!r}", start) from None
