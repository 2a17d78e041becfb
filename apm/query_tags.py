"""Host tags in the query language (:mod:`apm.query`): ``key:glob`` entries and grouping keys.

``key:glob`` selects the servers whose tag ``key`` has a value matching ``glob``, a
tag-value glob (:data:`apm.query_glob.TAG_VALUE_GLOB`: same grammar and the same linear
bound as server globs). The key follows the one rule of :mod:`apm.tags`. A server without
the tag counts as having the empty value, as a missing label does in Prometheus: ``dc:``
selects the servers without ``dc`` (or with it empty), ``dc:*`` every server, and ``dc:?*``
those with a non-empty ``dc``. The same holds for grouping: ``BY dc`` puts a server without
``dc`` in the group whose ``dc`` is "".
"""

from __future__ import annotations

from dataclasses import dataclass

from apm.query_glob import TAG_VALUE_GLOB, GlobError, glob_to_regex
from apm.tags import MAX_TAGS, tag_key_error

__all__ = [
    "MAX_CONDITIONS",
    "MAX_GROUP_KEYS",
    "TagGlob",
    "TagSyntaxError",
    "by_key",
    "is_tag_entry",
    "tag_glob",
]

# Bounds on one text's cost, like apm.query's: a server has at most MAX_TAGS tags, so more
# conditions or keys than that are repetition.
MAX_CONDITIONS = 2 * MAX_TAGS  # WHERE conditions, duplicates included
MAX_GROUP_KEYS = MAX_TAGS  # keys after BY, duplicates included


class TagSyntaxError(ValueError):
    """A ``key:glob`` or grouping key that is refused; ``offset`` is 0-based in the token."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


@dataclass(frozen=True)
class TagGlob:
    """``key:glob``: the servers whose tag ``key`` (else "") matches ``glob``."""

    key: str
    glob: str

    @property
    def text(self) -> str:
        return f"{self.key}:{self.glob}"

    def regex(self) -> str:
        """The unanchored regex (Python and Java) of the value glob."""
        return glob_to_regex(self.glob, TAG_VALUE_GLOB)


def is_tag_entry(token: str) -> bool:
    """A ``key:glob`` token rather than a server glob (':' is no character of a server glob)."""
    return ":" in token


def by_key(token: str) -> str:
    """A tag key after ``BY``, checked by :func:`apm.tags.tag_key_error`."""
    if (err := tag_key_error(token)) is not None:
        raise TagSyntaxError(err, 0)
    return token


def tag_glob(token: str) -> TagGlob:
    """``key:glob`` (split at the first ':') checked: the key by :mod:`apm.tags`, the glob as
    a tag-value glob. Raises :class:`TagSyntaxError`."""
    key, _, glob = token.partition(":")
    if (err := tag_key_error(key)) is not None:
        raise TagSyntaxError(err, 0)
    try:
        glob_to_regex(glob, TAG_VALUE_GLOB)
    except GlobError as exc:
        raise TagSyntaxError(
            f"invalid tag-value glob {glob!r}: {exc.message}", len(key) + 1 + exc.offset
        ) from None
    return TagGlob(key, glob)
