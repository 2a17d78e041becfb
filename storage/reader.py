"""Reading one query's windows over a time range that spans several day buckets.

The caller passes the buckets known to hold rows (from the ``result_buckets`` index), in
ascending order. Each bucket is one partition, read in ascending window order with driver
paging. The next ``ahead`` buckets' first pages are requested concurrently while the current
one is consumed, so a 30-day range costs about one round trip per ``ahead`` buckets, and memory
stays bounded by ``ahead`` pages whatever the range.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

from apm.query import WindowResult
from storage.codec import window_result
from storage.schema import BUCKET_SECONDS

__all__ = ["bucket_span", "ms_ceil", "read_range"]


def ms_ceil(ts: float) -> int:
    """The smallest whole millisecond >= ``ts`` seconds (rounded to the microsecond first, so
    that 0.3 s is 300 ms and not 301 through float error)."""
    return -(-round(ts * 1_000_000) // 1000)


def bucket_span(lo_ms: int, hi_ms: int) -> tuple[int, int]:
    """First and last bucket that windows with lo_ms <= window_start_ms < hi_ms can be in."""
    bucket_ms = BUCKET_SECONDS * 1000
    return lo_ms // bucket_ms, (hi_ms - 1) // bucket_ms


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
    todo = iter(buckets)
    pending: deque[Any] = deque()

    def submit() -> None:
        bucket = next(todo, None)
        if bucket is not None:
            bound = stmt.bind((query_id, bucket, lo_ms, hi_ms))
            bound.fetch_size = page_size
            pending.append(session.execute_async(bound, execution_profile=profile))

    for _ in range(max(1, ahead)):
        submit()
    while pending:
        rows = pending.popleft().result()
        submit()
        for row in rows:  # the ResultSet fetches further pages of this bucket on demand
            yield window_result(query_id, row)
