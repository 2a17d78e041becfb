"""Reading the per-server series of one ``BY server`` query for a request: one range read per
server selected (``read_server_results``, that server's own partitions), or, when the request
wants at least half the query's servers over fewer windows than servers, one read per window
of every server's result (``read_window_servers``, one partition of about as many rows as
the query has servers). An instant ``topk(10, ...)`` over 10,000 servers then reads the two
windows that can give its point, not 10,000 partitions; ``server="web-42"`` still reads one
server. Either way at most twice the rows of the series wanted are read, and every row read
is counted against the request's budget. An instant selector needs, of the windows before its
first step, only each server's newest (the look-back): read a window at a time, newest first,
they stop once every server has one (one window of the 31 of a 5-minute look-back when every
server reports), or read the few servers still without one on their own (servers that stopped
earlier in the day), then every window of the range is read."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from functools import partial

from apm.query import WindowResult
from dashboard.promapi.alert_range import Guard
from dashboard.promapi.evaluate import Deadline
from dashboard.promapi.store import PromRepository

__all__ = ["by_window", "planned_rows", "read_servers"]

Span = tuple[float, float]  # [from, to) of window starts, epoch seconds
# What one more statement costs in rows read (measured on the test Cassandra: ~2.2 ms a
# one-server read, ~46 us a row of a window's partition): the few servers still without a
# look-back window are read on their own when that costs fewer rows than the windows left.
STATEMENT_ROWS = 50


def by_window(width_ms: int, span: Span, servers: int, fleet: int) -> list[int] | None:
    """The window starts (ms) to read one partition each (windows are aligned to the epoch),
    when that is fewer reads than one a server and at most twice the rows (``servers`` of the
    query's ``fleet`` are wanted); else None: read each server."""
    lo, hi = math.ceil(round(span[0] * 1000, 3)), math.ceil(round(span[1] * 1000, 3))
    first = max(0, -(-lo // width_ms) * width_ms)
    count = max(0, -(-(hi - first) // width_ms))
    if count >= servers or fleet > 2 * servers:
        return None
    return [first + i * width_ms for i in range(count)]


def planned_rows(
    width_ms: int, span: Span, servers: int, fleet: int, newest_until: int | None = None
) -> int:
    """The rows :func:`read_servers` reads at most; with ``newest_until``, if every server
    has a window of the look-back in the newest one (past that, the budget stops the read)."""
    starts = by_window(width_ms, span, servers, fleet)
    if starts is None:
        return servers * max(0, math.ceil((span[1] - span[0]) * 1000 / width_ms))
    if newest_until is not None:
        ahead = sum(1 for s in starts if s > newest_until)
        return (ahead + (ahead < len(starts))) * fleet
    return len(starts) * fleet


def read_servers(
    repo: PromRepository,
    guard: Guard,
    query_id: str,
    servers: Sequence[str],
    fleet: int,
    width_ms: int,
    span: Span,
    spend: Callable[[], None],
    deadline: Deadline,
    newest_until: int | None = None,
) -> dict[str, list[WindowResult]]:
    """server -> its windows in ``span``, ascending by start (``spend`` is called for each
    row read, kept or not). ``newest_until`` (ms, instant selectors): of the windows starting
    at or before it, the look-back of the first step, only each server's newest is wanted,
    so those are read newest first until every server has one, or, once the servers that lack
    one cost less to read on their own (:data:`STATEMENT_ROWS`), their own series over what is
    left."""
    starts = by_window(width_ms, span, len(servers), fleet)
    if starts is None:
        out: dict[str, list[WindowResult]] = {}
        for server in servers:
            deadline.check()
            one = partial(repo.read_server_results, query_id, server, *span)
            out[server] = guard("read_server_results", partial(collect, one, spend, deadline))
        return out
    cut = -1 if newest_until is None else newest_until  # starts by then: the look-back
    behind: dict[str, list[WindowResult]] = {s: [] for s in servers}  # newest first
    missing = set(servers)
    left = [s for s in starts if s <= cut]  # the look-back's windows not read yet
    while left and missing:
        if len(missing) * STATEMENT_ROWS < len(left) * fleet:  # a few stopped: read just them
            for server in sorted(missing):
                span_left = (left[0] / 1000, (left[-1] + 1) / 1000)
                one = partial(repo.read_server_results, query_id, server, *span_left)
                rows = guard("read_server_results", partial(collect, one, spend, deadline))
                behind[server] += rows[::-1]
            break
        for w in _window(repo, guard, query_id, left.pop(), spend, deadline):
            if w.server in behind:
                behind[w.server].append(w)
                if w.window_seconds * 1000 == width_ms:  # not an older definition's
                    missing.discard(w.server)
    out = {s: rows[::-1] for s, rows in behind.items()}
    for start in (s for s in starts if s > cut):
        for w in _window(repo, guard, query_id, start, spend, deadline):
            if w.server in out:
                out[w.server].append(w)
    return out


def _window(
    repo: PromRepository,
    guard: Guard,
    query_id: str,
    start_ms: int,
    spend: Callable[[], None],
    deadline: Deadline,
) -> list[WindowResult]:
    deadline.check()
    every = partial(repo.read_window_servers, query_id, start_ms / 1000)
    return guard("read_window_servers", partial(collect, every, spend, deadline))


def collect(
    read: Callable[[], Iterable[WindowResult]], spend: Callable[[], None], deadline: Deadline
) -> list[WindowResult]:
    """``read()``'s windows, each counted with ``spend`` as it comes."""
    out: list[WindowResult] = []
    for i, w in enumerate(read()):
        if i % 1000 == 999:
            deadline.check()
        spend()
        out.append(w)
    return out
