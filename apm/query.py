"""The stored-query language and model, shared by the aggregator, storage and dashboard::

    FROM <servers> SELECT <metric> WINDOW <duration> COMPUTE <functions>
        [BY server [TOP|BOTTOM <n> BY <function>]]

``<servers>`` is ``*``, or a comma-separated list of names and glob patterns (``web-*``,
``db-?``, ``cache-[12]``). ``<duration>`` is a whole number of ``s``, ``m``, ``h`` or ``d``.
``<functions>`` are the names in ``apm.functions.CATALOGUE``: today ``min``, ``max``, ``avg``,
``count``, ``sum`` and ``percentile(p)`` for 0 < p < 100, with ``p50``, ``p95``, ``p99`` (any
``pN``) as shorthands. ``BY server`` gives one series per server instead of one for the whole
selection; ``TOP n BY f`` (``BOTTOM n BY f``) also ranks, in each window, the ``n`` servers
with the highest (lowest) value of ``f``, one of the computed functions, with a series
"others" for the rest (:mod:`apm.ranking`). Keywords are case-insensitive. :func:`parse`
and :meth:`Query.text` round-trip: ``parse(q.text) == q``.

Every text is parsed in time and memory bounded by its length, or refused with a
:class:`QueryError` naming the position: a query is at most :data:`MAX_QUERY_CHARS`
characters, with at most :data:`MAX_SERVERS` server entries and :data:`MAX_FUNCTIONS`
functions; a glob is at most ``MAX_GLOB_CHARS`` characters with ``MAX_GLOB_STARS`` runs of
``*``, and matching it costs time linear in the name's length (:mod:`apm.query_glob`); a
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
    """``TOP n BY function`` (``bottom``: ``BOTTOM n BY function``) of a ``BY server`` query."""

    n: int
    function: Function
    bottom: bool = False

    @property
    def text(self) -> str:
        return f"{'BOTTOM' if self.bottom else 'TOP'} {self.n} BY {self.function.text}"


@dataclass(frozen=True)
class Query:
    servers: tuple[str, ...]  # ("*",) for every server
    metric: str
    window_seconds: int
    functions: tuple[Function, ...]
    by_server: bool = False  # one series per server (WindowResult.server) instead of one
    top: Top | None = None  # only with by_server

    @property
    def text(self) -> str:
        by = " BY server" if self.by_server else ""
        top = f" {self.top.text}" if self.top is not None else ""
        return (
            f"FROM {', '.join(self.servers)} SELECT {self.metric} "
            f"WINDOW {format_duration(self.window_seconds)} "
            f"COMPUTE {', '.join(f.text for f in self.functions)}{by}{top}"
        )

    @property
    def all_servers(self) -> bool:
        return "*" in self.servers

    def server_regex(self) -> str:
        """One anchored regex (valid in Python and Java) matching the selected servers."""
        if self.all_servers:
            return "^.*$"
        return "^(?:" + "|".join(glob_to_regex(g) for g in self.servers) + ")$"

    def matches(self, server: str) -> bool:
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
    servers: list[str] = []
    seen: set[str] = set()
    for entry in range(MAX_SERVERS + 1):
        expected = "'*', a server name or a glob such as web-*"
        tok, pos = tokens.take(expected)
        if entry == MAX_SERVERS:
            raise QueryError(f"at most {MAX_SERVERS} servers or globs", pos, "SELECT")
        if tok.upper() == "SELECT" and not servers:
            raise QueryError(f"expected {expected} before SELECT", pos, expected)
        try:
            glob_to_regex(tok)
        except GlobError as exc:
            raise QueryError(
                f"invalid server glob {tok!r}: {exc.message}", pos + exc.offset, expected
            ) from None
        if tok not in seen:
            seen.add(tok)
            servers.append(tok)
        if not tokens.comma():
            break
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
    by_server, top = _grouping(tokens, functions)
    tok, pos = tokens.peek()
    if tok:
        expected = "BY server or the end of the query"
        if by_server:
            expected = "the end of the query" if top else "TOP, BOTTOM or the end of the query"
        where = "the functions" if not by_server else "BY server" if not top else top.text
        raise QueryError(f"unexpected {tok!r} after {where}; expected {expected}", pos, expected)
    return Query(
        ("*",) if "*" in servers else tuple(servers),
        metric,
        window,
        tuple(functions),
        by_server,
        top,
    )


def _grouping(tokens: _Tokens, computed: list[Function]) -> tuple[bool, Top | None]:
    """``[BY server [TOP|BOTTOM n BY function]]`` after the functions."""
    if tokens.peek()[0].upper() != "BY":
        return False, None
    tokens.keyword("BY")
    tok, pos = tokens.take("server")
    if tok.lower() != "server":
        raise QueryError(f"expected BY server, got BY {tok!r}", pos, "server")
    word = tokens.peek()[0].upper()
    if word not in ("TOP", "BOTTOM"):
        return True, None
    tokens.take(word)
    expected = f"a whole number of servers from 1 to {MAX_TOP}"
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
    return True, Top(int(digits), fn, word == "BOTTOM")
