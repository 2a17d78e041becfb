"""Reading one query's windows over a time range that spans several day buckets.

The caller passes the buckets known to hold rows (from the ``result_buckets`` index), in
ascending order. Each bucket is one partition, read in ascending window order with driver
paging. The next ``ahead`` buckets' first pages are requested concurrently while the current
one is consumed, so a 30-day range costs about one round trip per ``ahead`` buckets, and memory
stays bounded by ``ahead`` pages whatever the range.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from apm.query import WindowResult
from storage.codec import finite, window_result
from storage.schema import BUCKET_SECONDS

# Window starts per IN list: a partition's rows for at most this many clustering keys per
# statement keeps each read one small page (Cassandra warns about large IN lists).
IN_CHUNK = 100

__all__ = [
    "IN_CHUNK",
    "bucket_span",
    "chunks_at",
    "ms_ceil",
    "pipelined",
    "read_at",
    "read_range",
    "span_ms",
]


def ms_ceil(ts: float) -> int:
    """The smallest whole millisecond >= ``ts`` seconds (rounded to the microsecond first, so
    that 0.3 s is 300 ms and not 301 through float error)."""
    return -(-round(ts * 1_000_000) // 1000)


def span_ms(start: float, end: float, page_size: int = 1) -> tuple[int, int]:
    """[start, end) in epoch seconds -> [lo, hi) in whole ms (hi <= lo: an empty range), with
    a clear ValueError for a bound that is not a finite number or a page size < 1."""
    if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
        raise ValueError(f"page_size must be a whole number >= 1, got {page_size!r}")
    for name, ts in (("start", start), ("end", end)):
        if not finite(ts):
            raise ValueError(f"{name} must be finite epoch seconds, got {ts!r}")
    return ms_ceil(max(0.0, start)), ms_ceil(end)  # ws >= start <=> ws_ms >= ceil(start)


def bucket_span(lo_ms: int, hi_ms: int) -> tuple[int, int]:
    """First and last bucket that windows with lo_ms <= window_start_ms < hi_ms can be in."""
    bucket_ms = BUCKET_SECONDS * 1000
    return lo_ms // bucket_ms, (hi_ms - 1) // bucket_ms


def chunks_at(starts_ms: Iterable[int], chunk: int = IN_CHUNK) -> list[tuple[int, list[int]]]:
    """``starts_ms`` (any order, repeats allowed) as ascending (bucket, starts) groups of at
    most ``chunk`` starts, each within one bucket: one statement each."""
    bucket_ms = BUCKET_SECONDS * 1000
    groups: list[tuple[int, list[int]]] = []
    for start in sorted(set(starts_ms)):
        bucket = start // bucket_ms
        if not groups or groups[-1][0] != bucket or len(groups[-1][1]) >= chunk:
            groups.append((bucket, []))
        groups[-1][1].append(start)
    return groups


def read_at(
    session: Any,
    stmt: Any,
    query_id: str,
    starts_ms: Sequence[int],
    *,
    ahead: int,
    profile: object,
) -> Iterator[WindowResult]:
    """Windows of ``query_id`` whose start is one of ``starts_ms``, ascending by start:
    one statement per (bucket, up to IN_CHUNK starts), ``ahead`` of them in flight. ``stmt``
    selects the result columns for (query_id, bucket, [starts]) with ``window_start IN ?``."""
    bound = (stmt.bind((query_id, bucket, starts)) for bucket, starts in chunks_at(starts_ms))
    return (window_result(query_id, row) for row in pipelined(session, bound, ahead, profile))


def read_range(
    session: Any,
    stmt: Any,
    query_id: str,
    buckets: Iterable[int],
    lo_ms: int,
    hi_ms: int,
    *,
    page_size: int,
    ahead: int,
    profile: object,
) -> Iterator[WindowResult]:
    """Windows of ``query_id`` with lo_ms <= window_start < hi_ms in ``buckets`` (ascending),
    ascending by window_start. ``stmt`` selects (window_start, window_seconds, vals, samples,
    updated_at) for (query_id, bucket, lo_ms, hi_ms) with ``window_start >= ? AND < ?``."""

    def bound() -> Iterator[Any]:
        for bucket in buckets:
            statement = stmt.bind((query_id, bucket, lo_ms, hi_ms))
            statement.fetch_size = page_size
            yield statement

    for row in pipelined(session, bound(), ahead, profile):
        yield window_result(query_id, row)


def pipelined(
    session: Any, statements: Iterator[Any], ahead: int, profile: object
) -> Iterator[Any]:
    """The rows of ``statements`` in their order, the next ``ahead`` requested while one is
    consumed (its ResultSet fetches its further pages on demand)."""
    pending: deque[Any] = deque()

    def submit() -> None:
        statement = next(statements, None)
        if statement is not None:
            pending.append(session.execute_async(statement, execution_profile=profile))

    for _ in range(max(1, ahead)):
        submit()
    while pending:
        rows = pending.popleft().result()
        submit()
        yield from rows
