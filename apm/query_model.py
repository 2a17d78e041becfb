"""The stored query's model: the parsed query (:class:`Query`, its :class:`Function` and
:class:`Top`), the stored query (:class:`StoredQuery`) and one evaluated window
(:class:`WindowResult`). :mod:`apm.query` parses text into it and re-exports it; import from
there."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from apm import functions
from apm.query_glob import glob_to_regex
from apm.query_tags import TagGlob

__all__ = ["Function", "Query", "StoredQuery", "Top", "WindowResult", "format_duration"]


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
        """Selects or groups by host tags (the aggregator matches these against its tag map)."""
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
