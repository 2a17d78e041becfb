"""The tables of per-server series (a ``BY server`` query) and of their top-N rankings.

Created and migrated by ``storage.schema.migrate`` with the results tables (this module only
holds their DDL, so that ``schema`` can import it without a circle). Sizes at 10,000 servers
are in docs/storage.md, "Per-server series":

- ``server_series``: the servers' series, partition (query_id, day, shard), clustering
  (server, window_start): the ~40 servers of one of the SERVER_SHARDS shards at 10,000 servers.
  A window of a query is then ~256 single-partition batches (one mutation each) where one
  partition a server made it 10,000 mutations; a 24 h chart of one server still reads one slice
  of one partition (8,640 rows for 10 s windows). ``server_shard`` places a server (the Java
  writer, io.apm.aggregator.ServerShard, computes the same).
- ``server_results``: the layout before ``server_series`` (partition (query_id, server, day)),
  no longer created or written. A keyspace that has it from an older release is read from it
  too until the operator drops it, one retention after the upgrade (docs/storage.md).
- ``window_servers``: every server's result of one window, partition (query_id, window_start),
  clustering server: ~10,000 rows, what the aggregator re-ranks a window from.
- ``result_servers``: the servers of a query per day, partition (query_id, day).
- ``server_buckets``: the days that hold a query's per-server results or rankings (the index
  every read starts from, as ``result_buckets`` is for the results), and in its static column
  ``newest`` the updated_at of the query's newest per-server row (``last_result_at``).
- ``rankings``: one row per window, the whole ranking as one frozen list, partition
  (query_id, hour). One cell per window means a re-ranking replaces the previous ranking whole
  (a window re-ranked with fewer rows keeps no stale rank) without a delete, so no tombstones
  under TWCS; the hour bucket keeps a partition at n = 100 and 10 s windows near 4.9 MB
  (measured) where a day would be ~117 MB, past Cassandra's ~100 MB guidance.
"""

from __future__ import annotations

import zlib

__all__ = [
    "LEGACY_SERIES_TABLE",
    "RANKING_BUCKET_SECONDS",
    "SERVER_SHARDS",
    "SERVER_TABLES",
    "legacy_series_ddl",
    "server_ddl",
    "server_shard",
    "server_statements",
]

# table -> True for an index (it outlives the rows it points to: retention + index extra).
SERVER_TABLES = {
    "server_series": False,
    "window_servers": False,
    "result_servers": True,
    "server_buckets": True,
    "rankings": False,
}
RANKING_BUCKET_SECONDS = 3600
# Part of the stored layout: changing it moves every server to another partition, so it is a
# migration, not a setting. 256 keeps a day partition near 44 MB at 10,000 servers and 10 s
# windows (docs/storage.md, "Per-server series").
SERVER_SHARDS = 256
LEGACY_SERIES_TABLE = "server_results"


def server_shard(server: str) -> int:
    """The shard of ``server``'s series: CRC-32 of its UTF-8 name modulo SERVER_SHARDS, which
    java.util.zip.CRC32 computes alike."""
    return zlib.crc32(server.encode()) % SERVER_SHARDS


_TWCS = (
    "compaction = {'class': 'TimeWindowCompactionStrategy', "
    "'compaction_window_unit': 'DAYS', 'compaction_window_size': 1}"
)
# As for results: rows only expire (frozen values, no deletes), so little grace is needed.
_GC_GRACE_S = 3 * 3600
_VALUES = "window_seconds int, vals frozen<map<text, double>>, samples bigint, updated_at timestamp"


def server_ddl(keyspace: str, ttl_s: int, index_extra_s: int) -> dict[str, str]:
    """table -> its CREATE TABLE IF NOT EXISTS, rows expiring ``ttl_s`` after their write."""
    ks, expiring = keyspace, f"default_time_to_live = {ttl_s} AND gc_grace_seconds = {_GC_GRACE_S}"
    index_ttl = f"default_time_to_live = {ttl_s + index_extra_s}"
    return {
        "server_series": f"""
            CREATE TABLE IF NOT EXISTS {ks}.server_series (
                query_id text, bucket int, shard int, server text, window_start timestamp,
                {_VALUES},
                PRIMARY KEY ((query_id, bucket, shard), server, window_start))
            WITH {_TWCS} AND {expiring}""",
        "window_servers": f"""
            CREATE TABLE IF NOT EXISTS {ks}.window_servers (
                query_id text, window_start timestamp, server text, {_VALUES},
                PRIMARY KEY ((query_id, window_start), server))
            WITH {_TWCS} AND {expiring}""",
        "result_servers": f"""
            CREATE TABLE IF NOT EXISTS {ks}.result_servers (
                query_id text, bucket int, server text,
                PRIMARY KEY ((query_id, bucket), server))
            WITH {index_ttl}""",
        "server_buckets": f"""
            CREATE TABLE IF NOT EXISTS {ks}.server_buckets (
                query_id text, bucket int, newest timestamp static,
                PRIMARY KEY ((query_id), bucket))
            WITH CLUSTERING ORDER BY (bucket DESC) AND {index_ttl}""",
        # ranking: (server, vals, samples, updated_at) by rank, 1 first; updated_at is the
        # ranking's version (the newest of its rows), also its write timestamp.
        "rankings": f"""
            CREATE TABLE IF NOT EXISTS {ks}.rankings (
                query_id text, hour int, window_start timestamp, window_seconds int,
                ranking frozen<list<frozen<tuple<text, frozen<map<text, double>>, bigint,
                                                 timestamp>>>>,
                updated_at timestamp,
                PRIMARY KEY ((query_id, hour), window_start))
            WITH CLUSTERING ORDER BY (window_start DESC) AND {_TWCS} AND {expiring}""",
    }


def legacy_series_ddl(keyspace: str, table: str = LEGACY_SERIES_TABLE) -> str:
    """The CREATE TABLE of the layout before ``server_series`` (a partition per query, server
    and day), which ``migrate`` no longer creates: for the upgrade test and the benchmark that
    compares the two layouts, so that both build exactly what older releases built."""
    return f"""CREATE TABLE IF NOT EXISTS {keyspace}.{table} (
            query_id text, server text, bucket int, window_start timestamp,
            {_VALUES},
            PRIMARY KEY ((query_id, server, bucket), window_start))
            WITH CLUSTERING ORDER BY (window_start DESC)"""


_VALUE_COLS = "window_seconds, vals, samples, updated_at"


def server_statements(keyspace: str) -> dict[str, str]:
    """name -> the CQL of each write (and the window read) of the per-server tables: the one
    definition that storage.servers and storage.rankings prepare for the Python driver and that
    the aggregator's executors prepare for the Java one (io.apm.aggregator.ServerResults binds
    them in this order)."""
    ks = keyspace
    return {
        "server_series": (
            f"INSERT INTO {ks}.server_series (query_id, bucket, shard, server, window_start, "
            f"{_VALUE_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?"
        ),
        "window_servers": (
            f"INSERT INTO {ks}.window_servers (query_id, window_start, server, {_VALUE_COLS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?"
        ),
        "result_servers": (
            f"INSERT INTO {ks}.result_servers (query_id, bucket, server) VALUES (?, ?, ?)"
        ),
        "server_buckets": f"INSERT INTO {ks}.server_buckets (query_id, bucket) VALUES (?, ?)",
        # Static: one cell per query, the newest version wins whatever order writes land in.
        "newest": (
            f"UPDATE {ks}.server_buckets USING TIMESTAMP ? SET newest = ? WHERE query_id = ?"
        ),
        "rankings": (
            f"INSERT INTO {ks}.rankings (query_id, hour, window_start, window_seconds, "
            "ranking, updated_at) VALUES (?, ?, ?, ?, ?, ?) USING TIMESTAMP ?"
        ),
        "read_window": (
            f"SELECT server, vals, samples, updated_at FROM {ks}.window_servers "
            "WHERE query_id = ? AND window_start = ?"
        ),
    }
