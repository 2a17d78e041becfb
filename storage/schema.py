"""The Cassandra schema and its idempotent migration.

``results`` is partitioned by (query_id, bucket) where ``bucket`` is the UTC day of the window
start (``window_start // 86400``). One day bounds a partition at 86,400 rows even for 1s windows
(within Cassandra's ~100k rows / ~100 MB guidance), keeps the largest window (1d) in exactly one
partition, and lines up with the one-day TimeWindowCompactionStrategy window, so a whole day's
SSTables expire together. ``result_buckets`` indexes which buckets of a query hold rows, so a
read of any range costs one index query plus one query per non-empty day. The per-server
tables (``storage.server_tables``) are created and migrated with these. See docs/storage.md.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

from storage.server_tables import SERVER_TABLES, server_ddl
from storage.settings import DEFAULT_REPLICATION, keyspace_error
from storage.tier_tables import DEFAULT_TIER_TTL_S, tier_ddl

__all__ = [
    "ADDED_COLUMNS",
    "BUCKET_SECONDS",
    "INDEX_EXTRA_TTL_S",
    "INDEX_REFRESH_S",
    "TABLES",
    "IndexRows",
    "bucket_of",
    "migrate",
    "missing_tables",
    "table_names",
    "table_ttls",
]

log = logging.getLogger(__name__)

BUCKET_SECONDS = 86_400
TABLES = (
    "queries",
    "results",
    "result_buckets",
    "servers",
    "metrics",
    "status",
    *SERVER_TABLES,
    *DEFAULT_TIER_TTL_S,
)
# Columns added after a table was first released: migrate adds them to an older table.
ADDED_COLUMNS = {"queries": {"active_since": "timestamp"}}
# The bucket index outlives the newest row of its bucket: index rows are refreshed at most hourly
# by a writer, results rows expire one retention after their own write.
INDEX_EXTRA_TTL_S = 86_400
# A writer re-asserts an index row at most this often (seconds): well within the extra day.
INDEX_REFRESH_S = 3600.0
# Rows only ever expire (no deletes, frozen maps), so tombstones need little grace time.
_RESULTS_GC_GRACE_S = 3 * 3600


_TTL_TABLES = {
    "results": 0,
    "result_buckets": INDEX_EXTRA_TTL_S,
    "servers": 0,
    "metrics": 0,
    **{table: INDEX_EXTRA_TTL_S if index else 0 for table, index in SERVER_TABLES.items()},
}


class IndexRows:
    """The index rows this process wrote lately, so that each is re-asserted at most every
    INDEX_REFRESH_S rather than with every window. Bounded: cleared past ``limit`` keys (the
    cost is one more write of each)."""

    def __init__(self, limit: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._at: dict[Hashable, float] = {}
        self._limit, self._clock = limit, clock

    def due(self, keys: Iterable[Hashable]) -> list[Any]:
        """The keys of ``keys`` not written within INDEX_REFRESH_S."""
        now = self._clock()
        return [k for k in keys if now - self._at.get(k, -INDEX_REFRESH_S) >= INDEX_REFRESH_S]

    def written(self, keys: Iterable[Hashable]) -> None:
        if len(self._at) > self._limit:
            self._at.clear()
        self._at.update(dict.fromkeys(keys, self._clock()))


def bucket_of(window_start: float) -> int:
    """The partition bucket of a window: its UTC day number since the epoch."""
    return int(window_start // BUCKET_SECONDS)


def _ddl(keyspace: str, ttl_s: int, tier_ttl_s: Mapping[str, int]) -> dict[str, str]:
    return {
        **_results_ddl(keyspace, ttl_s),
        **server_ddl(keyspace, ttl_s, INDEX_EXTRA_TTL_S),
        **tier_ddl(keyspace, tier_ttl_s),
    }


def _results_ddl(keyspace: str, ttl_s: int) -> dict[str, str]:
    return {
        "queries": f"""
            CREATE TABLE IF NOT EXISTS {keyspace}.queries (
                id text PRIMARY KEY, text text, metric text, servers list<text>,
                window_seconds int, functions list<text>, paused boolean,
                created_at timestamp, updated_at timestamp, active_since timestamp)""",
        # vals is frozen: an upsert then overwrites one cell instead of writing a collection
        # tombstone plus cells, which TWCS could otherwise keep around across windows.
        "results": f"""
            CREATE TABLE IF NOT EXISTS {keyspace}.results (
                query_id text, bucket int, window_start timestamp,
                window_seconds int, vals frozen<map<text, double>>, samples bigint,
                updated_at timestamp,
                PRIMARY KEY ((query_id, bucket), window_start))
            WITH CLUSTERING ORDER BY (window_start DESC)
            AND compaction = {{'class': 'TimeWindowCompactionStrategy',
                               'compaction_window_unit': 'DAYS', 'compaction_window_size': 1}}
            AND default_time_to_live = {ttl_s}
            AND gc_grace_seconds = {_RESULTS_GC_GRACE_S}""",
        # Which buckets of a query hold results, so that reading a range (or finding the newest
        # window) touches only those partitions instead of every day of the range.
        "result_buckets": f"""
            CREATE TABLE IF NOT EXISTS {keyspace}.result_buckets (
                query_id text, bucket int, PRIMARY KEY ((query_id), bucket))
            WITH CLUSTERING ORDER BY (bucket DESC)
            AND default_time_to_live = {ttl_s + INDEX_EXTRA_TTL_S}""",
        # A server silent for the whole retention is forgotten rather than listed forever.
        "servers": f"""
            CREATE TABLE IF NOT EXISTS {keyspace}.servers (
                server text PRIMARY KEY, last_seen timestamp)
            WITH default_time_to_live = {ttl_s}""",
        # When each metric last had a sample (its newest event time), for a query's state:
        # "no sample of this metric for 5 minutes" (apm.query_state).
        "metrics": f"""
            CREATE TABLE IF NOT EXISTS {keyspace}.metrics (
                metric text PRIMARY KEY, last_seen timestamp)
            WITH default_time_to_live = {ttl_s}""",
        "status": f"""
            CREATE TABLE IF NOT EXISTS {keyspace}.status (
                component text PRIMARY KEY, payload text, updated_at timestamp)""",
    }


def _existing(session: Any, keyspace: str) -> dict[str, int]:
    """table name -> default_time_to_live, read from the schema tables (no driver metadata lag)."""
    stmt = session.prepare(
        "SELECT table_name, default_time_to_live FROM system_schema.tables WHERE keyspace_name = ?"
    )
    return {row[0]: int(row[1] or 0) for row in session.execute(stmt, (keyspace,))}


def table_ttls(session: Any, keyspace: str) -> dict[str, int]:
    """table name -> its default_time_to_live in seconds (0: none)."""
    return _existing(session, keyspace)


def table_names(session: Any, keyspace: str) -> set[str]:
    """The tables ``keyspace`` has (none if it does not exist)."""
    return set(_existing(session, keyspace))


def _columns(session: Any, keyspace: str, table: str) -> set[str]:
    stmt = session.prepare(
        "SELECT column_name FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ?"
    )
    return {row[0] for row in session.execute(stmt, (keyspace, table))}


def _missing_columns(session: Any, keyspace: str, existing: dict[str, int]) -> list[str]:
    """``table.column`` for each added column an existing table lacks."""
    out = []
    for table, columns in ADDED_COLUMNS.items():
        if table in existing:
            have = _columns(session, keyspace, table)
            out += [f"{table}.{c}" for c in columns if c not in have]
    return out


def missing_tables(session: Any, keyspace: str) -> list[str]:
    """The tables (and ``table.column`` added columns) of this schema that ``keyspace`` lacks
    (every table if it does not exist)."""
    existing = _existing(session, keyspace)
    return [t for t in TABLES if t not in existing] + _missing_columns(session, keyspace, existing)


def migrate(
    session: Any,
    keyspace: str,
    retention_days: int,
    replication: str = DEFAULT_REPLICATION,
    tier_ttl_s: Mapping[str, int] | None = None,
) -> list[str]:
    """Creates the keyspace and tables that are missing and aligns the tables' TTLs with
    ``retention_days`` (the rollup tiers' tables with ``tier_ttl_s``, table -> seconds:
    ``storage.tier_tables.tier_ttls``). Idempotent: a second run changes nothing. Returns
    what it changed."""
    tiers = {**DEFAULT_TIER_TTL_S, **(tier_ttl_s or {})}
    if bad := {
        t: v for t, v in tiers.items() if isinstance(v, bool) or not isinstance(v, int) or v < 3600
    }:
        raise ValueError(f"tier TTLs must be whole seconds >= 3600, got {bad}")
    if (err := keyspace_error(keyspace)) is not None:
        raise ValueError(err)
    if not isinstance(retention_days, int) or retention_days < 1:
        raise ValueError(f"retention_days must be a whole number >= 1, got {retention_days!r}")
    ttl_s = retention_days * 86_400
    changes: list[str] = []
    existing = _existing(session, keyspace)
    if not existing:
        session.execute(
            f"CREATE KEYSPACE IF NOT EXISTS {keyspace} WITH replication = {replication}"
        )
        changes.append(f"keyspace {keyspace}")
    wanted = {table: ttl_s + extra for table, extra in _TTL_TABLES.items()} | tiers
    for table, ddl in _ddl(keyspace, ttl_s, tiers).items():
        if table not in existing:
            session.execute(ddl)
            changes.append(f"table {keyspace}.{table}")
        elif table in wanted and existing[table] != (want := wanted[table]):
            # Applies to rows written from now on; older rows keep the TTL they were written with.
            session.execute(f"ALTER TABLE {keyspace}.{table} WITH default_time_to_live = {want}")
            changes.append(f"ttl {keyspace}.{table} {existing[table]}s -> {want}s")
    for added in _missing_columns(session, keyspace, existing):
        table, column = added.split(".")
        session.execute(
            f"ALTER TABLE {keyspace}.{table} ADD {column} {ADDED_COLUMNS[table][column]}"
        )
        changes.append(f"column {keyspace}.{added}")
    for change in changes:
        log.info("migrate: %s", change)
    return changes
