"""Which servers a query selects, and in which of its series (group) each one falls, given the
server's name and its host tags: the semantics of ``FROM``, ``WHERE`` and ``BY``
(:mod:`apm.query`), as one pure function for the aggregator to call.

A server is selected when one ``FROM`` entry matches it (a server glob its name, a
``key:glob`` its tag ``key``) and every ``WHERE`` condition matches its tags. A missing tag
counts as the empty value, in selection and in grouping (:mod:`apm.query_tags`). Its group is
``()`` for a query without ``BY`` (its one series), ``(server,)`` for ``BY server``, and the
values of the ``BY`` keys, in their order, for ``BY key1, key2``.

Compile a :class:`Selector` once per query; each call then costs one regex match per entry
key and condition, linear in the name's and values' lengths (:mod:`apm.query_glob`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from apm.query import Query
from apm.query_tags import TagGlob

__all__ = ["GroupKey", "Selector", "group_of"]

GroupKey = tuple[str, ...]


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


def group_of(query: Query, server: str, tags: Mapping[str, str]) -> GroupKey | None:
    """:meth:`Selector.group` of a selector compiled for this one call."""
    return Selector(query).group(server, tags)
