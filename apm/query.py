"""The stored-query language and model, shared by the aggregator, storage and dashboard::

    FROM <entries> [WHERE <conditions>] SELECT <metric> WINDOW <duration> COMPUTE <functions>
        [BY server | BY <key>[, <key>...]] [TOP|BOTTOM <n> BY <function>]

``<entries>`` is ``*``, or a comma-separated list of server names and glob patterns
(``web-*``, ``db-?``, ``cache-[12]``) and of host-tag conditions ``key:glob`` (``role:web``,
``dc:eu-*``): a server is selected when one entry matches it. ``WHERE`` takes ``key:glob``
conditions, comma-separated, that a selected server must all meet (:mod:`apm.query_tags`
says how a tag glob matches, and a missing tag counts as ""). ``<duration>`` is a whole
number of ``s``, ``m``, ``h`` or ``d``. ``<functions>`` are the names in
``apm.functions.CATALOGUE``: today ``min``, ``max``, ``avg``, ``count``, ``sum`` and
``percentile(p)`` for 0 < p < 100, with ``p50``, ``p95``, ``p99`` (any ``pN``) as shorthands.
``BY server`` gives one series per server instead of one for the whole selection, ``BY dc``
one per value of the tag ``dc`` and ``BY dc, env`` one per pair; ``TOP n BY f`` (``BOTTOM n
BY f``) also ranks, in each window, the ``n`` series with the highest (lowest) value of
``f``, one of the computed functions, with a series "others" for the rest
(:mod:`apm.ranking`). Keywords are case-insensitive, tag keys are not. :func:`parse` and
:meth:`Query.text` round-trip: ``parse(q.text) == q``. :mod:`apm.query_select` decides which
servers a query selects and in which group. The model is :mod:`apm.query_model`, the tokens
:mod:`apm.query_tokens`; this module re-exports what others import.

:func:`accept` is the check of every text about to be stored: the one place to refuse what
parses but the aggregator does not evaluate (today nothing: it evaluates host tags since issue
37, docs/aggregator.md "Host tags").

Every text is parsed in time and memory bounded by its length, or refused with a
:class:`QueryError` naming the position: a query is at most :data:`MAX_QUERY_CHARS`
characters, with at most :data:`MAX_SERVERS` entries after FROM, ``MAX_CONDITIONS`` after
WHERE, ``MAX_GROUP_KEYS`` after BY and :data:`MAX_FUNCTIONS` functions; a glob (server or tag
value) is at most ``MAX_GLOB_CHARS`` characters with ``MAX_GLOB_STARS`` runs of ``*``, and
matching it costs time linear in the name's (value's) length (:mod:`apm.query_glob`); a
ranking's ``n`` is 1 to :data:`MAX_TOP`. These are fixed, not settings: every component must
accept the same stored texts.
"""

from __future__ import annotations

from typing import NamedTuple

from apm import functions
from apm.model import metric_name_error
from apm.query_glob import GlobError, glob_to_regex
from apm.query_model import Function, Query, StoredQuery, Top, WindowResult, format_duration
from apm.query_tags import (
    MAX_CONDITIONS,
    MAX_GROUP_KEYS,
    TagGlob,
    TagSyntaxError,
    by_key,
    is_tag_entry,
    tag_glob,
)
from apm.query_tokens import MAX_WINDOW_SECONDS, QueryError, Tokens, duration, function

__all__ = [
    "FUNCTION_NAMES",
    "MAX_FUNCTIONS",
    "MAX_QUERY_CHARS",
    "MAX_SERVERS",
    "MAX_TOP",
    "MAX_WINDOW_SECONDS",
    "Function",
    "Query",
    "QueryError",
    "StoredQuery",
    "Top",
    "WindowResult",
    "accept",
    "format_duration",
    "parse",
]

FUNCTION_NAMES = tuple(functions.CATALOGUE)  # for the dashboard's builder
# Generous: the builder's server picker may add hundreds of names. The bounds are there so
# that one text's cost is bounded, not to shape queries.
MAX_QUERY_CHARS = 65_536
MAX_SERVERS = 1000  # server entries after FROM, duplicates included
MAX_FUNCTIONS = 64  # functions after COMPUTE, duplicates included
# A ranking is stored per window (apm.ranking): 101 rows a 10 s window keep a day's partition
# near 10 MB (docs/storage.md). Dashboards rank 5 to 20; Datadog's top() stops at 100.
MAX_TOP = 100


def parse(text: str) -> Query:
    """Parses query text into a :class:`Query`, or raises :class:`QueryError`."""
    return _parse(text)[0]


def accept(text: str) -> Query:
    """Parses a text that is about to be stored (the API, the builder, ``apm query add``, the
    repository): :func:`parse`, refusing what the aggregator does not evaluate (nothing today:
    host tags in FROM, WHERE and BY are evaluated since issue 37)."""
    return _parse(text)[0]


def _entries(tokens: Tokens) -> tuple[list[str], list[TagGlob], int | None]:
    """The FROM entries: server globs, ``key:glob`` conditions, and the position of the
    first of those (None when there is none)."""
    servers: list[str] = []
    tags: list[TagGlob] = []
    tag_at: int | None = None
    expected = "'*', a server name, a glob such as web-* or a tag condition such as role:web"
    for entry in range(MAX_SERVERS + 1):
        tok, pos = tokens.take(expected)
        if entry == MAX_SERVERS:
            raise QueryError(f"at most {MAX_SERVERS} servers, globs or tags", pos, "SELECT")
        # A server may be named "where" (and was before WHERE existed): only WHERE followed
        # by a condition is the keyword.
        keyword = tok.upper() == "SELECT" or (
            tok.upper() == "WHERE" and is_tag_entry(tokens.peek()[0])
        )
        if keyword and not servers and not tags:
            raise QueryError(f"expected {expected} before {tok.upper()}", pos, expected)
        if is_tag_entry(tok):
            cond = _tag_glob(tok, pos, expected)
            tag_at = pos if tag_at is None else tag_at
            if cond not in tags:
                tags.append(cond)
        else:
            try:
                glob_to_regex(tok)
            except GlobError as exc:
                raise QueryError(
                    f"invalid server glob {tok!r}: {exc.message}", pos + exc.offset, expected
                ) from None
            if tok not in servers:
                servers.append(tok)
        if not tokens.comma():
            return servers, tags, tag_at
    raise AssertionError("unreachable: the loop returns or raises")


def _tag_glob(tok: str, pos: int, expected: str) -> TagGlob:
    try:
        return tag_glob(tok)
    except TagSyntaxError as exc:
        raise QueryError(exc.message, pos + exc.offset, expected) from None


def _where(tokens: Tokens) -> tuple[list[TagGlob], int | None]:
    """``WHERE key:glob[, key:glob...]`` when there is one."""
    if tokens.peek()[0].upper() != "WHERE":
        return [], None
    _, at = tokens.take("WHERE")
    conditions: list[TagGlob] = []
    expected = "a tag condition such as env:prod"
    for entry in range(MAX_CONDITIONS + 1):
        tok, pos = tokens.take(expected)
        if entry == MAX_CONDITIONS:
            raise QueryError(f"at most {MAX_CONDITIONS} conditions after WHERE", pos, "SELECT")
        if not is_tag_entry(tok):
            raise QueryError(f"expected {expected}, got {tok!r}", pos, expected)
        cond = _tag_glob(tok, pos, expected)
        if cond not in conditions:
            conditions.append(cond)
        if not tokens.comma():
            return conditions, at
    raise AssertionError("unreachable: the loop returns or raises")


def _parse(text: str) -> tuple[Query, int | None]:
    """The query and the position of its first use of host tags (None when it has none)."""
    if not isinstance(text, str) or not text.strip():
        raise QueryError("the query is empty; expected FROM", 0, "FROM")
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(
            f"a query is at most {MAX_QUERY_CHARS} characters, this one has {len(text)}",
            MAX_QUERY_CHARS,
            "the end of the query",
        )
    tokens = Tokens(text)
    tokens.keyword("FROM")
    servers, tags, tag_at = _entries(tokens)
    where, where_at = _where(tokens)
    tokens.keyword("SELECT")
    metric, mpos = tokens.take("a metric name")
    if (err := metric_name_error(metric)) is not None:
        raise QueryError(err, mpos, "a metric name")
    tokens.keyword("WINDOW")
    window = duration(*tokens.take("a duration such as 10s, 1m, 5m or 1h"))
    tokens.keyword("COMPUTE")
    functions: list[Function] = []
    for entry in range(MAX_FUNCTIONS + 1):
        if entry == MAX_FUNCTIONS:
            pos = tokens.peek()[1]
            raise QueryError(f"at most {MAX_FUNCTIONS} functions", pos, "the end of the query")
        fn = function(tokens)
        if fn not in functions:
            functions.append(fn)
        if not tokens.comma():
            break
    group = _grouping(tokens, functions)
    tok, pos = tokens.peek()
    if tok:
        raise _unexpected(tok, pos, group)
    everything = "*" in servers  # then tag entries add nothing to the union
    query = Query(
        ("*",) if everything else tuple(servers),
        metric,
        window,
        tuple(functions),
        group.by_server,
        group.top,
        () if everything else tuple(tags),
        tuple(where),
        tuple(group.keys),
    )
    firsts = [at for at in (tag_at, where_at, group.keys_at) if at is not None]
    if everything and tag_at is not None:  # the tag entries were dropped: '*' has them all
        firsts.remove(tag_at)
    return query, (min(firsts) if firsts else None)


def _unexpected(tok: str, pos: int, group: _Grouping) -> QueryError:
    """The error for a token past the end of a query."""
    expected, after = "BY server, BY a tag key or the end of the query", "the functions"
    if group.by_server or group.keys:
        expected = "the end of the query" if group.top else "TOP, BOTTOM or the end of the query"
        after = "BY " + (", ".join(group.keys) or "server")
    if group.top is not None:
        after = group.top.text
    return QueryError(f"unexpected {tok!r} after {after}; expected {expected}", pos, expected)


class _Grouping(NamedTuple):
    by_server: bool = False
    keys: tuple[str, ...] = ()
    keys_at: int | None = None  # the position of the first tag key
    top: Top | None = None


def _grouping(tokens: Tokens, computed: list[Function]) -> _Grouping:
    """``[BY server | BY key[, key...]] [TOP|BOTTOM n BY function]`` after the functions."""
    if tokens.peek()[0].upper() != "BY":
        return _Grouping()
    tokens.keyword("BY")
    expected = "server or a tag key such as dc"
    tok, pos = tokens.take(expected)
    keys: list[str] = []
    first = pos
    if tok.lower() != "server":
        for entry in range(MAX_GROUP_KEYS + 1):
            if entry > 0:
                tok, pos = tokens.take("a tag key such as dc")
            if tok.lower() == "server":
                raise QueryError(
                    "BY server is a grouping of its own: it takes no tag key", pos, expected
                )
            if entry == MAX_GROUP_KEYS:
                raise QueryError(f"at most {MAX_GROUP_KEYS} keys after BY", pos, "TOP")
            try:
                key = by_key(tok)
            except TagSyntaxError as exc:
                raise QueryError(f"expected BY {expected}: {exc.message}", pos, expected) from None
            if key not in keys:
                keys.append(key)
            if not tokens.comma():
                break
    group = _Grouping(not keys, tuple(keys), first if keys else None)
    word = tokens.peek()[0].upper()
    if word not in ("TOP", "BOTTOM"):
        return group
    tokens.take(word)
    expected = f"a whole number of series from 1 to {MAX_TOP}"
    raw, npos = tokens.take(expected)
    # Digits only, and at most 3 of them counted: int() of a long digit string is quadratic.
    digits = raw.lstrip("0") or "0"
    if not raw.isdigit() or not raw.isascii() or len(digits) > 3 or not 1 <= int(digits) <= MAX_TOP:
        raise QueryError(f"expected {expected} after {word}, got {raw!r}", npos, expected)
    tokens.keyword("BY")
    fpos = tokens.peek()[1]
    fn = function(tokens)
    if fn not in computed:
        listed = ", ".join(f.text for f in computed)
        raise QueryError(
            f"{word} ranks by one of the computed functions ({listed}), not {fn.text!r}",
            fpos,
            "one of the computed functions",
        )
    return group._replace(top=Top(int(digits), fn, word == "BOTTOM"))
