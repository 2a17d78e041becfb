"""Which servers of a ``BY server`` query a chart, a panel or a table shows, in which order,
and the sentence that says so where they are shown.

A ``BY server`` query has one series per server (``WindowResult.server``) and no series over
all of them. A chart cannot draw 10,000 lines, so it draws at most :data:`MAX_LINES` (servers
x functions) and says which ones and how many are left out:

- the server filter (a dashboard's glob, ``*`` for all) keeps the servers it matches;
- they are ordered by their newest value, as the query ranks them (:mod:`apm.ranking`'s rule:
  ``TOP``/``BOTTOM``'s function highest/lowest first, else the first function highest first;
  ties by name); a server with no value in the newest windows is counted, not shown; with no
  newest window at all, the servers listed for the range's days are taken by name;
- a ``TOP n``/``BOTTOM n`` query draws its first ``n`` only (within the cap): with no filter,
  straight from its newest stored ranking (``n + 1`` rows read, not every server's).

"Newest value" is each server's value in the newest window that has per-server results, or
in the one before it. A server's window is written once, when it closes (the job's newest
event time passes its end plus a grace of 2 s, docs/aggregator.md), so a chart shows closed
windows only; a server whose samples arrive later than that is written as a refinement.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial

from apm.query import Query, StoredQuery, WindowResult
from apm.query_glob import glob_to_regex
from apm.query_state import format_time
from apm.ranking import OTHERS, Ranked
from dashboard.context import AppContext
from dashboard.guard import guarded

__all__ = [
    "MAX_LINES",
    "MAX_ROWS",
    "PROBES",
    "TAIL_S",
    "Choice",
    "Latest",
    "choice_note",
    "choose",
    "filter_note",
    "latest",
    "listed_servers",
    "matcher",
    "newest_ranking",
    "order",
    "ranked_choice",
]

# Lines of one per-server query on a chart or a panel: 20 lines stay readable, with a legend
# that fits, and 20 x 8,640 windows (24 h of 10 s) is what a cold draw can still read.
MAX_LINES = 20
MAX_ROWS = 20  # rows of a table of a per-server query without TOP
# Windows tried back from the range's end for the newest one with per-server results: each
# try is one small partition read; a query stopped for longer is ordered by server name.
PROBES = 10
TAIL_S = 600  # a ranking is looked for in the range's last 10 min (or PROBES windows)


@dataclass(frozen=True)
class Latest:
    at: float | None  # start of the newest window with per-server results, None: none found
    rows: dict[str, WindowResult]  # server -> its newest result (that window or the one before)


@dataclass(frozen=True)
class Choice:
    servers: list[str]  # shown, in order
    matching: int  # the query's servers (listed for the range's days) that the filter keeps
    total: int  # the query's servers listed for the range's days (list_result_servers)
    at: float | None  # the newest window the order comes from (None: ordered by name)
    key: str  # the function ordering them
    bottom: bool  # lowest first


def matcher(server_filter: str) -> re.Pattern[str] | None:
    """The filter's compiled glob, None for ``*`` (every server)."""
    return None if server_filter == "*" else re.compile(glob_to_regex(server_filter))


def listed_servers(app_ctx: AppContext, q: StoredQuery, start: float, end: float) -> list[str]:
    read = partial(app_ctx.repo.list_result_servers, q.id, start, end)
    return guarded(app_ctx.metrics, "list_result_servers", read)


def _window(app_ctx: AppContext, q: StoredQuery, at: float) -> list[WindowResult]:
    read = partial(app_ctx.repo.read_window_servers, q.id, at)
    rows = guarded(app_ctx.metrics, "read_window_servers", lambda: list(read()))
    # A window stored under an older definition of the query (another length) is not this one.
    return [r for r in rows if r.server and r.window_seconds == q.query.window_seconds]


def latest(app_ctx: AppContext, q: StoredQuery, start: float, end: float) -> Latest:
    """Each server's newest result in [start, end): the newest window with per-server results
    (at most :data:`PROBES` windows back from ``end``) and the one before it."""
    w = q.query.window_seconds
    at = math.floor(end / w) * w
    if at >= end:
        at -= w
    for _ in range(PROBES):
        if at < start:
            break
        newest = _window(app_ctx, q, at)
        if newest:
            older = _window(app_ctx, q, at - w) if at - w >= start else []
            return Latest(at, {r.server: r for r in [*older, *newest]})
        at -= w
    return Latest(None, {})


def newest_ranking(app_ctx: AppContext, q: StoredQuery, start: float, end: float) -> list[Ranked]:
    """A TOP/BOTTOM query's newest stored ranking among the last :data:`PROBES` windows (at
    least the last :data:`TAIL_S` seconds) of [start, end), by rank; empty when none."""
    tail = max(start, end - max(TAIL_S, PROBES * q.query.window_seconds))
    read = partial(app_ctx.repo.read_ranked, q.id, tail, end)
    rows = guarded(app_ctx.metrics, "read_ranked", lambda: list(read()))
    if not rows:
        return []
    at = max(r.window_start for r in rows)
    return sorted((r for r in rows if r.window_start == at), key=lambda r: r.rank)


def ranked_choice(q: StoredQuery, ranking: list[Ranked], listed: list[str], cap: int) -> Choice:
    """The servers of a stored ranking (no server filter): its first ``cap``, in rank order."""
    servers = [r.server for r in ranking if r.server != OTHERS][:cap]
    known = len(set(listed) | {r.server for r in ranking if r.server != OTHERS})
    key, bottom = _rank_key(q.query)
    return Choice(servers, known, known, ranking[0].window_start, key, bottom)


def _rank_key(q: Query) -> tuple[str, bool]:
    if q.top is not None:
        return q.top.function.key, q.top.bottom
    return q.functions[0].key, False


def order(q: Query, rows: Iterable[WindowResult]) -> list[str]:
    """The servers of ``rows`` that have a finite value of the ranking function, ordered as
    :func:`apm.ranking.rank` ranks them (its first ``n`` are a TOP query's ranking)."""
    key, bottom = _rank_key(q)
    sign = 1.0 if bottom else -1.0
    valued = []
    for r in rows:
        v = r.values.get(key)
        if isinstance(v, int | float) and math.isfinite(v):
            valued.append((sign * v, r.server))
    return [s for _, s in sorted(valued)]


def choose(
    q: StoredQuery, listed: Iterable[str], newest: Latest, server_filter: str, cap: int
) -> Choice:
    """The servers to show (at most ``cap``; a TOP query's ``n`` at most) of those listed in
    the range or present in the newest windows, under ``server_filter``."""
    keep = matcher(server_filter)
    known = sorted(set(listed) | set(newest.rows))
    matching = [s for s in known if keep is None or keep.fullmatch(s)]
    ordered = order(q.query, (newest.rows[s] for s in matching if s in newest.rows))
    limit = cap if q.query.top is None else min(cap, q.query.top.n)
    # By name only when no newest window says which are the busiest: the listing is per day,
    # so a listed server may have nothing in the range to draw.
    chosen = (ordered or matching)[:limit]
    key, bottom = _rank_key(q.query)
    at = newest.at if ordered else None
    return Choice(chosen, len(matching), len(known), at, key, bottom)


def filter_note(choice: Choice, server_filter: str) -> str | None:
    """What the server filter did to a per-server query (None for ``*``)."""
    if server_filter == "*":
        return None
    if not choice.total:
        return f"server filter {server_filter!r}: none of its servers has results in this range"
    if not choice.matching:
        return f"server filter {server_filter!r}: none of its {choice.total} servers matches"
    return f"server filter {server_filter!r}: {choice.matching} of its {choice.total} servers match"


def choice_note(q: StoredQuery, choice: Choice, verb: str, cap: str) -> str | None:
    """Which servers are shown and why, and how many are not (``verb``: drawn, listed;
    ``cap``: the limit in words, "at most 20 lines")."""
    if not choice.matching:
        return None
    n, of = len(choice.servers), choice.matching
    label = q.query.metric
    high = "lowest" if choice.bottom else "highest"
    if choice.at is None:
        why = (
            f"ordered by name: none of the last {PROBES} windows of the range has per-server "
            "results"
        )
    elif q.query.top is not None:
        why = (
            f"its {q.query.top.text}: the {high} {choice.key} in the newest closed window "
            f"({format_time(choice.at)})"
        )
    else:
        why = f"the {high} {choice.key} in the newest closed window ({format_time(choice.at)})"
    if n == of:
        return f"{label} per server: all {n} servers {verb}, {why}"
    return f"{label} per server: {n} of {of} servers {verb} ({cap}), {why}; {of - n} not {verb}"
