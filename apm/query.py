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
servers a query selects and in which group.

Tag conditions and ``BY <key>`` parse, but the aggregator does not evaluate them yet:
:func:`accept`, the check of every text about to be stored, refuses them (the one place).

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

import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from apm import functions
from apm.model import metric_name_error
from apm.query_glob import GlobError, glob_to_regex
from apm.query_tags import (
    MAX_CONDITIONS,
    MAX_GROUP_KEYS,
    TagGlob,
    TagSyntaxError,
    group_key,
    is_tag_entry,
    tag_glob,
)

__all__ = [
    "FUNCTION_NAMES",
    "MAX_FUNCTIONS",
    "MAX_QUERY_CHARS",
    "MAX_SERVERS",
    "MAX_TOP",
    "Function",
    "Query",
    "QueryError",
    "StoredQuery",
    "Top",
    "WindowResult",
    "accept",
    "parse",
]

FUNCTION_NAMES = tuple(functions.CATALOGUE)  # for the dashboard's builder
MAX_WINDOW_SECONDS = 86_400
# Generous: the builder's server picker may add hundreds of names. The bounds are there so
# that one text's cost is bounded, not to shape queries.
MAX_QUERY_CHARS = 65_536
MAX_SERVERS = 1000  # server entries after FROM, duplicates included
MAX_FUNCTIONS = 64  # functions after COMPUTE, duplicates included
# A ranking is stored per window (apm.ranking): 101 rows a 10 s window keep a day's partition
# near 10 MB (docs/storage.md). Dashboards rank 5 to 20; Datadog's top() stops at 100.
MAX_TOP = 100
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
_TOKEN = re.compile(r"\s*(?:(?P<punct>[,()])|(?P<word>[^\s,()]+))")


class QueryError(ValueError):
    """A query that does not parse; ``position`` is the 0-based offset in the text."""

    def __init__(self, message: str, position: int, expected: str) -> None:
        super().__init__(f"at position {position}: {message}")
        self.detail = message
        self.position = position
        self.expected = expected


@dataclass(frozen=True)
class Function:
    name: str
    p: float | None = None

    @property
    def key(self) -> str:
        """The result column name: ``min``, ``avg``, ``p99``, ``p99.9``."""
        return functions.spec(self.name).key(self.p)

    @property
    def text(self) -> str:
        return functions.spec(self.name).text(self.p)


@dataclass(frozen=True)
class Top:
    """``TOP n BY function`` (``bottom``: ``BOTTOM n BY function``) of a grouped query."""

    n: int
    function: Function
    bottom: bool = False

    @property
    def text(self) -> str:
        return f"{'BOTTOM' if self.bottom else 'TOP'} {self.n} BY {self.function.text}"


@dataclass(frozen=True)
class Query:
    servers: tuple[str, ...]  # ("*",) for every server; () when only tags select
    metric: str
    window_seconds: int
    functions: tuple[Function, ...]
    by_server: bool = False  # one series per server (WindowResult.server) instead of one
    top: Top | None = None  # only with by_server or group_by
    tags: tuple[TagGlob, ...] = ()  # FROM key:glob entries, unioned with the server globs
    where: tuple[TagGlob, ...] = ()  # WHERE key:glob conditions, all required
    group_by: tuple[str, ...] = ()  # BY key1, key2: one series per tuple of tag values

    @property
    def text(self) -> str:
        where = f" WHERE {', '.join(c.text for c in self.where)}" if self.where else ""
        by = " BY server" if self.by_server else ""
        by += f" BY {', '.join(self.group_by)}" if self.group_by else ""
        top = f" {self.top.text}" if self.top is not None else ""
        return (
            f"FROM {', '.join(self.entries)}{where} SELECT {self.metric} "
            f"WINDOW {format_duration(self.window_seconds)} "
            f"COMPUTE {', '.join(f.text for f in self.functions)}{by}{top}"
        )

    @property
    def entries(self) -> tuple[str, ...]:
        """The FROM entries as written: server globs, then ``key:glob`` conditions."""
        return self.servers + tuple(t.text for t in self.tags)

    @property
    def all_servers(self) -> bool:
        return "*" in self.servers

    @property
    def uses_tags(self) -> bool:
        """Selects or groups by host tags (what the aggregator does not evaluate yet)."""
        return bool(self.tags or self.where or self.group_by)

    def server_regex(self) -> str:
        """One anchored regex (valid in Python and Java) matching the servers selected by name
        (the server globs alone: :mod:`apm.query_select` adds the tag conditions)."""
        if self.all_servers:
            return "^.*$"
        return "^(?:" + "|".join(glob_to_regex(g) for g in self.servers) + ")$"

    def matches(self, server: str) -> bool:
        """Whether the server globs select ``server`` by its name."""
        return re.fullmatch(self.server_regex()[1:-1], server) is not None


@dataclass
class StoredQuery:
    id: str
    query: Query
    paused: bool = False
    created_at: datetime | None = None
    updated_at: datetime | None = None
    # When the query last started to be evaluated: created, resumed, or given another metric.
    # The aggregator counts only samples that reached Kafka from then on (docs/aggregator.md).
    active_since: datetime | None = None
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.query.text

    @property
    def active_from(self) -> float | None:
        """``active_since`` (else ``created_at``) in epoch seconds; None when unknown."""
        moment = self.active_since or self.created_at
        return None if moment is None else moment.timestamp()


class WindowResult(NamedTuple):
    """One evaluated window of one stored query, as the aggregator writes it and the dashboard
    reads it. ``values`` maps :attr:`Function.key` (``min``, ``p99`` ...) to the result.
    ``server`` is "" for a query's one series over its whole selection, else the server whose
    series this is (a ``BY server`` query has one per server)."""

    query_id: str
    window_start: float  # epoch seconds, aligned to the epoch: a multiple of window_seconds
    window_seconds: int
    values: dict[str, float]
    samples: int  # distinct samples that went into the window
    updated_at: float  # epoch seconds when this version was computed
    server: str = ""


def format_duration(seconds: int) -> str:
    for unit, size in (("d", 86_400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


class _Tokens:
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


def _duration(tok: str, pos: int) -> int:
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


def _param(spec: functions.Spec, raw: str, pos: int) -> float:
    low, high = spec.param or (-math.inf, math.inf)
    try:
        p = float(raw)
    except ValueError:
        raise QueryError(f"expected {spec.param_text}, got {raw!r}", pos, spec.param_text) from None
    if not low < p < high:
        raise QueryError(f"expected {spec.param_text}, got {raw!r}", pos, spec.param_text)
    return p


def _function(tokens: _Tokens) -> Function:
    expected = f"a function: {functions.forms()}"
    tok, pos = tokens.take(expected)
    name = tok.lower()
    spec = functions.CATALOGUE.get(name)
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
    if (short := functions.shorthand(name)) is not None:
        spec, raw = short
        return Function(spec.name, _param(spec, raw, pos + len(name) - len(raw)))
    raise QueryError(f"expected {expected}, got {tok!r}", pos, expected)


def parse(text: str) -> Query:
    """Parses query text into a :class:`Query`, or raises :class:`QueryError`."""
    return _parse(text)[0]


def accept(text: str) -> Query:
    """Parses a text that is about to be stored (the API, the builder, ``apm query add``, the
    repository): :func:`parse`, refusing what the aggregator does not evaluate yet."""
    query, tag_at = _parse(text)
    # The one refusal of host tags until the aggregator evaluates them (issue 37): delete it
    # with the aggregator change that does.
    if tag_at is not None:
        raise QueryError(_NOT_EVALUATED, tag_at, "a query without host tags")
    return query


_NOT_EVALUATED = (
    "host tags (FROM key:glob, WHERE, BY <tag key>) are not evaluated by the aggregator yet, "
    "so this query would never produce a result; select servers by name (FROM web-*) and "
    "group BY server for now"
)


def _entries(tokens: _Tokens) -> tuple[list[str], list[TagGlob], int | None]:
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


def _where(tokens: _Tokens) -> tuple[list[TagGlob], int | None]:
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
    tokens = _Tokens(text)
    tokens.keyword("FROM")
    servers, tags, tag_at = _entries(tokens)
    where, where_at = _where(tokens)
    tokens.keyword("SELECT")
    metric, mpos = tokens.take("a metric name")
    if (err := metric_name_error(metric)) is not None:
        raise QueryError(err, mpos, "a metric name")
    tokens.keyword("WINDOW")
    window = _duration(*tokens.take("a duration such as 10s, 1m, 5m or 1h"))
    tokens.keyword("COMPUTE")
    functions: list[Function] = []
    for entry in range(MAX_FUNCTIONS + 1):
        if entry == MAX_FUNCTIONS:
            pos = tokens.peek()[1]
            raise QueryError(f"at most {MAX_FUNCTIONS} functions", pos, "the end of the query")
        fn = _function(tokens)
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


def _grouping(tokens: _Tokens, computed: list[Function]) -> _Grouping:
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
                key = group_key(tok)
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
    fn = _function(tokens)
    if fn not in computed:
        listed = ", ".join(f.text for f in computed)
        raise QueryError(
            f"{word} ranks by one of the computed functions ({listed}), not {fn.text!r}",
            fpos,
            "one of the computed functions",
        )
    return group._replace(top=Top(int(digits), fn, word == "BOTTOM"))
