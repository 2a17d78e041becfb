"""Every CQL statement the repository runs, prepared once per Repository."""

from __future__ import annotations

from typing import Any

__all__ = ["Statements"]

_Q_COLS = "id, text, paused, created_at, updated_at, active_since"
_R_COLS = "window_start, window_seconds, vals, samples, updated_at"


class Statements:
    """Prepared statements on ``keyspace``. Idempotent ones are marked so: the driver may then
    retry them on a timeout. The LWTs on ``queries`` (IF [NOT] EXISTS) are not."""

    def __init__(self, session: Any, keyspace: str) -> None:
        self._session = session
        ks = keyspace
        self.insert_query = self._prep(
            f"INSERT INTO {ks}.queries (id, text, metric, servers, window_seconds, functions, "
            "paused, created_at, updated_at, active_since) "
            "VALUES (?, ?, ?, ?, ?, ?, false, ?, ?, ?) IF NOT EXISTS"
        )
        self.update_query = self._prep(
            f"UPDATE {ks}.queries SET text = ?, metric = ?, servers = ?, window_seconds = ?, "
            "functions = ?, updated_at = ?, active_since = ? WHERE id = ? IF EXISTS"
        )
        self.pause = self._prep(
            f"UPDATE {ks}.queries SET paused = true, updated_at = ? WHERE id = ? IF EXISTS"
        )
        # Only a paused query is resumed, so resuming an active one keeps its active_since.
        self.resume = self._prep(
            f"UPDATE {ks}.queries SET paused = false, updated_at = ?, "
            "active_since = ? WHERE id = ? IF paused = true"
        )
        self.delete_query = self._prep(f"DELETE FROM {ks}.queries WHERE id = ? IF EXISTS")
        self.get_query = self._prep(f"SELECT {_Q_COLS} FROM {ks}.queries WHERE id = ?", True)
        self.all_queries = self._prep(f"SELECT {_Q_COLS} FROM {ks}.queries", True)
        self.upsert = self._prep(
            f"INSERT INTO {ks}.results (query_id, bucket, window_start, window_seconds, vals, "
            "samples, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?",
            True,
        )
        self.range = self._prep(
            f"SELECT {_R_COLS} FROM {ks}.results WHERE query_id = ? AND bucket = ? "
            "AND window_start >= ? AND window_start < ? ORDER BY window_start ASC",
            True,
        )
        self.at_starts = self._prep(
            f"SELECT {_R_COLS} FROM {ks}.results WHERE query_id = ? AND bucket = ? "
            "AND window_start IN ? ORDER BY window_start ASC",
            True,
        )
        self.newest = self._prep(
            f"SELECT updated_at FROM {ks}.results WHERE query_id = ? AND bucket = ? LIMIT 1", True
        )
        self.index_put = self._prep(
            f"INSERT INTO {ks}.result_buckets (query_id, bucket) VALUES (?, ?)", True
        )
        self.index_span = self._prep(
            f"SELECT bucket FROM {ks}.result_buckets "
            "WHERE query_id = ? AND bucket >= ? AND bucket <= ?",
            True,
        )
        self.index_all = self._prep(
            f"SELECT bucket FROM {ks}.result_buckets WHERE query_id = ?", True
        )
        self.touch = self._prep(
            f"INSERT INTO {ks}.servers (server, last_seen) VALUES (?, ?) USING TIMESTAMP ?", True
        )
        self.servers = self._prep(f"SELECT server, last_seen FROM {ks}.servers", True)
        self.touch_metric = self._prep(
            f"INSERT INTO {ks}.metrics (metric, last_seen) VALUES (?, ?) USING TIMESTAMP ?", True
        )
        self.metrics = self._prep(f"SELECT metric, last_seen FROM {ks}.metrics", True)
        self.put_status = self._prep(
            f"INSERT INTO {ks}.status (component, payload, updated_at) VALUES (?, ?, ?)", True
        )
        self.status = self._prep(f"SELECT component, payload, updated_at FROM {ks}.status", True)

    def _prep(self, cql: str, idempotent: bool = False) -> Any:
        stmt = self._session.prepare(cql)
        stmt.is_idempotent = idempotent
        return stmt
