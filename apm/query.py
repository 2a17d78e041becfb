"""The stored-query language and model, shared by the aggregator, storage and dashboard::

    FROM <servers> SELECT <metric> WINDOW <duration> COMPUTE <functions>

``<servers>`` is ``*``, or a comma-separated list of names and glob patterns (``web-*``,
``db-?``, ``cache-[12]``). ``<duration>`` is a whole number of ``s``, ``m``, ``h`` or ``d``.
``<functions>`` are the names in ``apm.functions.CATALOGUE``: today ``min``, ``max``, ``avg``,
``count``, ``sum`` and ``percentile(p)`` for 0 < p < 100, with ``p50``, ``p95``, ``p99`` (any
``pN``) as shorthands. Keywords are case-insensitive. :func:`parse` and :meth:`Query.text`
round-trip: ``parse(q.text) == q``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from apm import functions
from apm.model import metric_name_error

__all__ = [
    "FUNCTION_NAMES",
    "Function",
    "Query",
    "QueryError",
    "StoredQuery",
    "WindowResult",
    "parse",
]

FUNCTION_NAMES = tuple(functions.CATALOGUE)  # for the dashboard's builder
MAX_WINDOW_SECONDS = 86_400
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
_TOKEN = re.compile(r"\s*(?:(?P<punct>[,()])|(?P<word>[^\s,()]+))")
_GLOB = re.compile(r"[A-Za-z0-9_.\-*?\[\]!]+")


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
class Query:
    servers: tuple[str, ...]  # ("*",) for every server
    metric: str
    window_seconds: int
    functions: tuple[Function, ...]

    @property
    def text(self) -> str:
        return (
            f"FROM {', '.join(self.servers)} SELECT {self.metric} "
            f"WINDOW {format_duration(self.window_seconds)} "
            f"COMPUTE {', '.join(f.text for f in self.functions)}"
        )

    @property
    def all_servers(self) -> bool:
        return "*" in self.servers

    def server_regex(self) -> str:
        """One anchored regex (valid in Python and Java) matching the selected servers."""
        if self.all_servers:
            return "^.*$"
        return "^(?:" + "|".join(_glob_to_regex(g) for g in self.servers) + ")$"

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
    reads it. ``values`` maps :attr:`Function.key` (``min``, ``p99`` ...) to the result."""

    query_id: str
    window_start: float  # epoch seconds, aligned to the epoch: a multiple of window_seconds
    window_seconds: int
    values: dict[str, float]
    samples: int  # distinct samples that went into the window
    updated_at: float  # epoch seconds when this version was computed


def _glob_to_regex(glob: str) -> str:
    out, i = [], 0
    while i < len(glob):
        ch = glob[i]
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "[":
            end = glob.find("]", i + 1)
            body = glob[i + 1 : end]
            negate = body.startswith("!")
            # Inside a class only '-' (a range, as in shell globs) and '[' need care; the
            # glob alphabet admits no backslash, caret or ']' there. Valid in Java too.
            members = body[1 if negate else 0 :].replace("[", "\\[")
            out.append("[" + ("^" if negate else "") + members + "]")
            i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


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
    seconds = int(m.group(1)) * _UNITS[m.group(2).lower()]
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
    tokens = _Tokens(text)
    tokens.keyword("FROM")
    servers: list[str] = []
    while True:
        expected = "'*', a server name or a glob such as web-*"
        tok, pos = tokens.take(expected)
        if tok.upper() == "SELECT" and not servers:
            raise QueryError(f"expected {expected} before SELECT", pos, expected)
        if not _GLOB.fullmatch(tok) or tok.count("[") != tok.count("]"):
            raise QueryError(f"expected {expected}, got {tok!r}", pos, expected)
        try:
            re.compile(_glob_to_regex(tok))
        except re.error as exc:  # an empty class, or a range such as [z-a]
            raise QueryError(f"invalid server glob {tok!r}: {exc.msg}", pos, expected) from None
        if tok not in servers:
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
    while True:
        fn = _function(tokens)
        if fn not in functions:
            functions.append(fn)
        if not tokens.comma():
            break
    tok, pos = tokens.peek()
    if tok:
        raise QueryError(f"unexpected {tok!r} after the functions", pos, "the end of the query")
    return Query(("*",) if "*" in servers else tuple(servers), metric, window, tuple(functions))
