"""Reading the per-server series of one ``BY server`` query for a request: one range read per
server selected (``read_server_results``, that server's own partitions), or, when the request
wants at least half the query's servers over fewer windows than servers, one read per window
of every server's result (``read_window_servers``, one partition of about as many rows as
the query has servers). An instant ``topk(10, ...)`` over 10,000 servers then reads the two
windows that can give its point, not 10,000 partitions; ``server="web-42"`` still reads one
server. Either way at most twice the rows of the series wanted are read, and every row read
is counted against the request's budget. An instant selector at one time needs only each
server's newest window in its look-back: read a window at a time, newest first, it stops
once every server has one (one or two windows of the 31 of a 5-minute look-back)."""

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


def by_window(width_ms: int, span: Span, servers: int, fleet: int) -> list[float] | None:
    """The window starts to read one partition each (windows are aligned to the epoch), when
    that is fewer reads than one a server and at most twice the rows (``servers`` of the
    query's ``fleet`` are wanted); else None: read each server."""
    lo, hi = math.ceil(round(span[0] * 1000, 3)), math.ceil(round(span[1] * 1000, 3))
    first = max(0, -(-lo // width_ms) * width_ms)
    count = max(0, -(-(hi - first) // width_ms))
    if count >= servers or fleet > 2 * servers:
        return None
    return [(first + i * width_ms) / 1000 for i in range(count)]


def planned_rows(width_ms: int, span: Span, servers: int, fleet: int) -> int:
    """The rows :func:`read_servers` reads at most."""
    starts = by_window(width_ms, span, servers, fleet)
    if starts is not None:
        return len(starts) * fleet
    return servers * max(0, math.ceil((span[1] - span[0]) * 1000 / width_ms))


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
    newest: bool = False,
) -> dict[str, list[WindowResult]]:
    """server -> its windows in ``span``, ascending by start (``spend`` is called for each
    row read, kept or not). ``newest``: only each server's newest window is wanted (an
    instant selector at one time), so windows read one at a time stop, newest first, once
    every server has one."""
    out: dict[str, list[WindowResult]] = {s: [] for s in servers}
    starts = by_window(width_ms, span, len(servers), fleet)
    if starts is not None:
        missing = set(servers)
        for start in reversed(starts) if newest else starts:
            deadline.check()
            every = partial(repo.read_window_servers, query_id, start)
            for w in guard("read_window_servers", partial(collect, every, spend, deadline)):
                if w.server in out:
                    out[w.server].append(w)
                    if w.window_seconds * 1000 == width_ms:  # not an older definition's
                        missing.discard(w.server)
            if newest and not missing:
                break
        if newest:
            for rows in out.values():
                rows.reverse()
        return out
    for server in servers:
        deadline.check()
        one = partial(repo.read_server_results, query_id, server, *span)
        out[server] = guard("read_server_results", partial(collect, one, spend, deadline))
    return out


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
