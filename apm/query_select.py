"""Which servers a query selects, and in which of its series (group) each one falls, given the
server's name and its host tags: the semantics of ``FROM``, ``WHERE`` and ``BY``
(:mod:`apm.query`), as one pure function for the aggregator to call.

A server is selected when one ``FROM`` entry matches it (a server glob its name, a
``key:glob`` its tag ``key``) and every ``WHERE`` condition matches its tags. A missing tag
counts as the empty value, in selection and in grouping (:mod:`apm.query_tags`). Its group is
``()`` for a query without ``BY`` (its one series), ``(server,)`` for ``BY server``, and the
values of the ``BY`` keys, in their order, for ``BY key1, key2``.

Where a group's series is stored, it is named by :func:`group_label` (``dc=eu-1,env=prod``):
the aggregator's JVM operator (``io.apm.aggregator.Selection``) applies these same rules and
names, and tests/aggregator/test_tag_selection.py holds the two to the same cases.

Compile a :class:`Selector` once per query; each call then costs one regex match per entry
key and condition, linear in the name's and values' lengths (:mod:`apm.query_glob`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from apm.query import Query
from apm.query_tags import TagGlob
from apm.tags import MAX_TAG_KEY_LEN, MAX_TAG_VALUE_LEN, MAX_TAGS

__all__ = [
    "MAX_GROUP_LABEL_CHARS",
    "GroupKey",
    "Selector",
    "group_label",
    "group_label_error",
    "group_of",
]

GroupKey = tuple[str, ...]
# The longest label group_label can make: MAX_TAGS keys of 64 characters, "=", a value of 128
# characters all escaped, and the commas between.
MAX_GROUP_LABEL_CHARS = MAX_TAGS * (MAX_TAG_KEY_LEN + 1 + 2 * MAX_TAG_VALUE_LEN + 1)


def _any_of(regexes: list[str]) -> re.Pattern[str]:
    return re.compile("(?:" + "|".join(regexes) + ")")  # fullmatch anchors it


def _by_key(conditions: tuple[TagGlob, ...]) -> dict[str, re.Pattern[str]]:
    """One pattern per key, the alternatives of that key's globs."""
    regexes: dict[str, list[str]] = {}
    for c in conditions:
        regexes.setdefault(c.key, []).append(c.regex())
    return {key: _any_of(r) for key, r in regexes.items()}


class Selector:
    """A query's selection and grouping, compiled."""

    def __init__(self, query: Query) -> None:
        self.query = query
        self._all = query.all_servers
        named = query.servers and not self._all
        self._names = re.compile(query.server_regex()) if named else None
        self._tags = _by_key(query.tags)
        # Every WHERE condition must hold, so they stay one pattern each.
        self._where = [(c.key, re.compile(c.regex())) for c in query.where]

    def selects(self, server: str, tags: Mapping[str, str]) -> bool:
        if not self._from(server, tags):
            return False
        return all(p.fullmatch(tags.get(key, "")) for key, p in self._where)

    def _from(self, server: str, tags: Mapping[str, str]) -> bool:
        if self._all:
            return True
        if self._names is not None and self._names.fullmatch(server):
            return True
        return any(p.fullmatch(tags.get(key, "")) for key, p in self._tags.items())

    def group(self, server: str, tags: Mapping[str, str]) -> GroupKey | None:
        """The group ``server`` falls in, or None when the query does not select it."""
        if not self.selects(server, tags):
            return None
        if self.query.by_server:
            return (server,)
        return tuple(tags.get(key, "") for key in self.query.group_by)


def group_label(keys: tuple[str, ...], group: GroupKey) -> str:
    """A ``BY key1, key2`` group's name, stored where a ``BY server`` query stores the server:
    ``key=value`` per key, joined by ",", with "\\" and "," in a value escaped by a "\\". It is
    never "" (it holds a key) and never a server's name (it holds "=")."""
    if len(keys) != len(group) or not keys:
        raise ValueError("a group label needs one value per BY key")
    escaped = (v.replace("\\", "\\\\").replace(",", "\\,") for v in group)
    return ",".join(f"{k}={v}" for k, v in zip(keys, escaped, strict=True))


def group_label_error(label: object) -> str | None:
    """Why ``label`` cannot be a group's label (a reader's check of what it is asked for)."""
    if not isinstance(label, str) or "=" not in label:
        return "a group is named key=value[,key=value...], e.g. dc=eu-1"
    if len(label) > MAX_GROUP_LABEL_CHARS or not label.isprintable():
        return f"a group's name is at most {MAX_GROUP_LABEL_CHARS} printable characters"
    return None


def group_of(query: Query, server: str, tags: Mapping[str, str]) -> GroupKey | None:
    """:meth:`Selector.group` of a selector compiled for this one call."""
    return Selector(query).group(server, tags)
