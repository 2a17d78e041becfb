"""Writes and reads of the rollup tiers (the tables of ``storage.tier_tables``, docs/storage.md
"Rollup tiers"); ``storage.repository.Repository`` delegates to :class:`TierStore`.

Every write is ``USING TIMESTAMP`` = the row's updated_at, like the results: a replayed
partial or roll writes the same row, an older version never overwrites a newer one. The tier
tables have no bucket index: a read clamps its start to the table's retention (plus a day,
for rows rewritten late) and reads each partition of the range, 8 in flight.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from apm.loghist import LogHistogram
from apm.query import WindowResult
from apm.tiers import TIERS, WindowPartial
from storage import codec
from storage.driver import execute_many
from storage.reader import read_range, span_ms
from storage.schema import table_ttls
from storage.tier_tables import PARTIALS_TABLE, TIER_BUCKET_SECONDS, TIER_TABLES

__all__ = ["TierStore", "partial_error"]

_R_COLS = "window_start, window_seconds, vals, samples, updated_at"
_P_COLS = "window_start, window_seconds, n, sum, min, max, hist, updated_at"


def partial_error(p: object) -> str | None:
    """Why ``p`` cannot be stored as a window's partial, or None."""
    if not isinstance(p, WindowPartial):
        return f"a partial is a WindowPartial, got {type(p).__name__}"
    if not isinstance(p.query_id, str) or not p.query_id:
        return f"query_id must be a non-empty string, got {p.query_id!r}"
    for name in ("window_start", "sum", "min", "max", "updated_at"):
        if not codec.finite(getattr(p, name)):
            return f"{name} must be a finite number, got {getattr(p, name)!r}"
    if not isinstance(p.window_seconds, int) or p.window_seconds < 1:
        return f"window_seconds must be a whole number >= 1, got {p.window_seconds!r}"
    if not isinstance(p.n, int) or p.n < 0:
        return f"n must be a whole number >= 0, got {p.n!r}"
    if p.hist is not None:
        try:
            LogHistogram.decode(p.hist)
        except ValueError as exc:
            return f"hist: {exc}"
    return None


class TierStore:
    """The tier tables of ``keyspace``, statements prepared once."""

    def __init__(
        self,
        session: Any,
        keyspace: str,
        *,
        concurrency: int,
        profile: object,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.session, self.concurrency, self.profile = session, concurrency, profile
        self.clock, self.ahead = clock, min(8, concurrency)
        ks = keyspace
        self.ttl_s = table_ttls(session, ks)
        self._put_partial = self._prep(
            f"INSERT INTO {ks}.{PARTIALS_TABLE} (query_id, hour, {_P_COLS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?"
        )
        self._partials = self._prep(
            f"SELECT {_P_COLS} FROM {ks}.{PARTIALS_TABLE} WHERE query_id = ? AND hour = ? "
            "AND window_start >= ? AND window_start < ?"
        )
        self._put = {
            tier: self._prep(
                f"INSERT INTO {ks}.{table} (query_id, bucket, window_start, window_seconds, "
                "vals, samples, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?"
            )
            for tier, table in TIER_TABLES.items()
        }
        self._range = {
            tier: self._prep(
                f"SELECT {_R_COLS} FROM {ks}.{table} WHERE query_id = ? AND bucket = ? "
                "AND window_start >= ? AND window_start < ? ORDER BY window_start ASC"
            )
            for tier, table in TIER_TABLES.items()
        }

    def _prep(self, cql: str) -> Any:
        stmt = self.session.prepare(cql)
        stmt.is_idempotent = True
        return stmt

    def _many(self, stmt: Any, groups: dict[Any, list[tuple[Any, ...]]]) -> None:
        execute_many(
            self.session,
            stmt,
            list(groups.values()),
            concurrency=self.concurrency,
            profile=self.profile,
        )

    # -- partials ---------------------------------------------------------------------------
    def upsert_partials(self, partials: Iterable[WindowPartial]) -> int:
        """Writes every partial (all checked first: one bad one writes nothing); a window
        given twice is written once, as its newest version. Returns the windows written."""
        latest: dict[tuple[str, int], WindowPartial] = {}
        for i, p in enumerate(partials):
            if (err := partial_error(p)) is not None:
                raise ValueError(f"partial {i}: {err}")
            key = (p.query_id, codec.to_ms(p.window_start))
            if key not in latest or p.updated_at >= latest[key].updated_at:
                latest[key] = p
        groups: dict[tuple[str, int], list[tuple[Any, ...]]] = {}
        for (qid, ms), p in latest.items():
            hour = int(p.window_start // 3600)
            groups.setdefault((qid, hour), []).append(
                (
                    qid,
                    hour,
                    ms,
                    p.window_seconds,
                    p.n,
                    float(p.sum),
                    float(p.min),
                    float(p.max),
                    None if p.hist is None else bytes(p.hist),
                    codec.to_ms(p.updated_at),
                    codec.to_us(p.updated_at),
                )
            )
        self._many(self._put_partial, groups)
        return len(latest)

    def read_partials(self, query_id: str, start: float, end: float) -> list[WindowPartial]:
        """The partials of ``query_id`` with start <= window_start < end, ascending."""
        lo, hi = span_ms(start, end)
        out: list[WindowPartial] = []
        if hi <= lo:
            return out
        for hour in range(lo // 3_600_000, (hi - 1) // 3_600_000 + 1):
            for row in self.session.execute(
                self._partials.bind((query_id, hour, lo, hi)), execution_profile=self.profile
            ):
                ws, seconds, n, total, low, high, hist, updated = row
                out.append(
                    WindowPartial(
                        query_id,
                        codec.epoch(ws) or 0.0,
                        int(seconds),
                        int(n),
                        float(total),
                        float(low),
                        float(high),
                        None if hist is None else bytes(hist),
                        codec.epoch(updated) or 0.0,
                    )
                )
        return out

    # -- tier rows --------------------------------------------------------------------------
    def upsert_tier(self, tier: str, rows: Iterable[WindowResult]) -> int:
        """Writes the rows of ``tier`` (each ``window_seconds`` the tier's resolution, all
        checked first); returns how many were written."""
        if tier not in TIER_TABLES:
            raise ValueError(f"tier must be one of {', '.join(TIER_TABLES)}, got {tier!r}")
        latest = codec.latest_results(rows)
        span = TIER_BUCKET_SECONDS[tier]
        groups: dict[tuple[str, int], list[tuple[Any, ...]]] = {}
        for (qid, server, ms), r in latest.items():
            if server or r.window_seconds != TIERS[tier] or r.window_start % TIERS[tier]:
                raise ValueError(
                    f"a {tier} tier row is a fleet row of {TIERS[tier]} s aligned to its "
                    f"resolution, got {r!r}"
                )
            bucket = int(r.window_start // span)
            groups.setdefault((qid, bucket), []).append((qid, bucket, ms, *codec.result_columns(r)))
        self._many(self._put[tier], groups)
        return len(latest)

    def read_tier(
        self, tier: str, query_id: str, start: float, end: float, page_size: int = 5000
    ) -> Iterator[WindowResult]:
        """The ``tier`` rows of ``query_id`` with start <= window_start < end, ascending."""
        if tier not in TIER_TABLES:
            raise ValueError(f"tier must be one of {', '.join(TIER_TABLES)}, got {tier!r}")
        lo, hi = span_ms(start, end, page_size)
        # Nothing older than the retention (plus a day for a late rewrite) can be stored.
        kept = self.ttl_s.get(TIER_TABLES[tier]) or 0
        if kept:
            lo = max(lo, math.floor((self.clock() - kept - 86_400) * 1000))
        if hi <= lo:
            return iter(())
        span_ms_ = TIER_BUCKET_SECONDS[tier] * 1000
        buckets = range(lo // span_ms_, (hi - 1) // span_ms_ + 1)
        return read_range(
            self.session,
            self._range[tier],
            query_id,
            buckets,
            lo,
            hi,
            page_size=page_size,
            ahead=self.ahead,
            profile=self.profile,
        )
