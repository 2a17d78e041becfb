"""The tables of the rollup tiers (docs/storage.md, "Rollup tiers"): each fleet window's
partial (``window_partials``) and one table per tier (``results_1m``, ``results_1h``), each with
its own retention and TWCS window. Created and migrated by ``storage.schema.migrate`` with the
others (this module only holds their DDL and layout, so that ``schema`` imports it without a
circle); written and read by ``storage.tiers``."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "DEFAULT_TIER_TTL_S",
    "PARTIALS_TABLE",
    "TIER_BUCKET_SECONDS",
    "TIER_TABLES",
    "tier_ddl",
    "tier_ttls",
]

PARTIALS_TABLE = "window_partials"
# tier -> its table.
TIER_TABLES = {"1m": "results_1m", "1h": "results_1h"}
# tier -> the span of one partition: a day of minutes is 1,440 rows; 30 days of hours 720.
TIER_BUCKET_SECONDS = {"1m": 86_400, "1h": 30 * 86_400}
# TWCS windows: about 1/30 of each table's retention, so a table has ~30 SSTable windows.
_TWCS = {PARTIALS_TABLE: ("HOURS", 6), "results_1m": ("DAYS", 3), "results_1h": ("DAYS", 30)}
DEFAULT_TIER_TTL_S = {
    PARTIALS_TABLE: 48 * 3600,
    "results_1m": 90 * 86_400,
    "results_1h": 730 * 86_400,
}
# As for results: rows only expire (frozen values, no deletes), so little grace is needed.
_GC_GRACE_S = 3 * 3600


def tier_ttls(partials_hours: int, minute_days: int, hour_days: int) -> dict[str, int]:
    """table -> its default TTL in seconds, from the ``APM_STORAGE_`` settings."""
    return {
        PARTIALS_TABLE: partials_hours * 3600,
        "results_1m": minute_days * 86_400,
        "results_1h": hour_days * 86_400,
    }


def _with(table: str, ttl_s: int) -> str:
    unit, size = _TWCS[table]
    return (
        "WITH compaction = {'class': 'TimeWindowCompactionStrategy', "
        f"'compaction_window_unit': '{unit}', 'compaction_window_size': {size}}} "
        f"AND default_time_to_live = {ttl_s} AND gc_grace_seconds = {_GC_GRACE_S}"
    )


def tier_ddl(keyspace: str, ttl_s: Mapping[str, int]) -> dict[str, str]:
    """table -> its CREATE TABLE IF NOT EXISTS; ``ttl_s`` holds each table's TTL."""
    ks = keyspace
    ddl = {
        # One partition a query and hour: 360 windows of 10 s, each at most ~41 KB of
        # histogram (apm.loghist.MAX_BYTES), in practice a few hundred bytes.
        PARTIALS_TABLE: f"""
            CREATE TABLE IF NOT EXISTS {ks}.{PARTIALS_TABLE} (
                query_id text, hour int, window_start timestamp, window_seconds int,
                n bigint, sum double, min double, max double, hist blob,
                updated_at timestamp,
                PRIMARY KEY ((query_id, hour), window_start))
            {_with(PARTIALS_TABLE, ttl_s[PARTIALS_TABLE])}""",
    }
    for table in TIER_TABLES.values():
        ddl[table] = f"""
            CREATE TABLE IF NOT EXISTS {ks}.{table} (
                query_id text, bucket int, window_start timestamp,
                window_seconds int, vals frozen<map<text, double>>, samples bigint,
                updated_at timestamp,
                PRIMARY KEY ((query_id, bucket), window_start))
            {_with(table, ttl_s[table])}"""
    return ddl
