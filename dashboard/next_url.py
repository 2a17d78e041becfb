"""Where the login page may send the browser afterwards: only a same-site relative path.

``next`` comes from the URL, so it is attacker-controlled. Browsers drop tabs and newlines from
a URL and read ``\\`` as ``/``, so ``/\\t/evil.example`` or ``/\\\\evil.example`` become
``//evil.example``: another site. Rather than predicting every browser's normalisation, a
target is refused unless, after percent-decoding it repeatedly, it is a plain path: it starts
with one ``/``, has no scheme or host, no backslash, no control or whitespace character.
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

__all__ = ["MAX_NEXT_CHARS", "safe_next"]

MAX_NEXT_CHARS = 2048
_DECODE_ROUNDS = 4  # %25-encoded layers decoded before giving up (a deeper one is refused)


def _plain_path(text: str) -> bool:
    if not text.startswith("/") or text.startswith("//"):
        return False
    if "\\" in text or any(not ch.isprintable() or ch.isspace() for ch in text):
        return False
    parts = urlsplit(text)
    return not parts.scheme and not parts.netloc


def safe_next(target: object) -> str:
    """``target`` when it is a same-site relative path, else ``/``."""
    if not isinstance(target, str) or not target or len(target) > MAX_NEXT_CHARS:
        return "/"
    layer = target
    for _ in range(_DECODE_ROUNDS):
        if not _plain_path(layer):
            return "/"
        decoded = unquote(layer)
        if decoded == layer:
            return target
        layer = decoded
    return "/"
