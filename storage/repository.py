"""The one door to Cassandra for the aggregator, the dashboard and the CLI (see docs/storage.md).

Prepared statements only. Every write is idempotent: results and server sightings carry their
own write timestamp (``USING TIMESTAMP`` = the row's updated_at / last_seen), so concurrent or
replayed writes converge on the newest version whatever order they land in.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from apm.query import QueryError, StoredQuery, WindowResult, parse
from storage import codec
from storage.reader import bucket_span, ms_ceil, read_range
from storage.schema import bucket_of, migrate, missing_tables
from storage.settings import StorageSettings, keyspace_error

__all__ = ["BATCH_ROWS", "PROFILE", "Repository", "open_cluster"]

log = logging.getLogger(__name__)

PROFILE = "apm-storage"  # execution profile: tuple rows, LOCAL_QUORUM, token-aware routing
# Rows per single-partition batch: ~32 rows of a few values stay under Cassandra's 5 KiB
# batch-size warning threshold.
BATCH_ROWS = 32
# A writer re-asserts a (query, bucket) index row at most this often (seconds).
INDEX_REFRESH_S = 3600.0
_Q_COLS = "id, text, paused, created_at, updated_at"
_R_COLS = "window_start, window_seconds, vals, samples, updated_at"


def _execution_profile(request_timeout_s: float = 20.0) -> Any:
    from cassandra import ConsistencyLevel
    from cassandra.cluster import ExecutionProfile
    from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy
    from cassandra.query import tuple_factory

    return ExecutionProfile(load_balancing_policy=TokenAwarePolicy(DCAwareRoundRobinPolicy()),
                            consistency_level=ConsistencyLevel.LOCAL_QUORUM,
                            serial_consistency_level=ConsistencyLevel.LOCAL_SERIAL,
                            request_timeout=request_timeout_s, row_factory=tuple_factory)


def open_cluster(settings: StorageSettings) -> Any:
    """A driver Cluster (not yet connected) for ``settings``, with our profile as default."""
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster

    profile = _execution_profile(settings.request_timeout_s)
    return Cluster(settings.host_list, port=settings.port,
                   protocol_version=settings.protocol_version,
                   connect_timeout=settings.connect_timeout_s,
                   execution_profiles={EXEC_PROFILE_DEFAULT: profile, PROFILE: profile})


def _profile_for(session: Any) -> object:
    """Our profile on a session built elsewhere (added once per cluster)."""
    from cassandra.cluster import EXEC_PROFILE_DEFAULT

    cluster = session.cluster
    if PROFILE not in cluster.profile_manager.profiles:
        try:
            cluster.add_execution_profile(PROFILE, _execution_profile())
        except ValueError as exc:  # a cluster built with legacy options, or a racing add
            if PROFILE not in cluster.profile_manager.profiles:
                log.warning("storage: using the session's default profile (%s)", exc)
                return EXEC_PROFILE_DEFAULT
    return PROFILE


class Repository:
    """Stored queries, window results, server sightings and component status in one keyspace."""

    def __init__(self, session: Any, keyspace: str, *, clock: Callable[[], float] = time.time,
                 concurrency: int = 64, owns_cluster: bool = False) -> None:
        if (err := keyspace_error(keyspace)) is not None:
            raise ValueError(err)
        if missing := missing_tables(session, keyspace):
            raise LookupError(f"keyspace {keyspace!r} lacks tables {', '.join(missing)}: "
                              "run `apm storage migrate` first")
        self.session, self.keyspace, self.clock = session, keyspace, clock
        self.concurrency, self._owns_cluster = concurrency, owns_cluster
        self.profile = _profile_for(session)
        ks = keyspace
        prep = self._prepare
        self._insert_query = prep(
            f"INSERT INTO {ks}.queries (id, text, metric, servers, window_seconds, functions, "
            "paused, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, false, ?, ?) IF NOT EXISTS")
        self._update_query = prep(
            f"UPDATE {ks}.queries SET text = ?, metric = ?, servers = ?, window_seconds = ?, "
            "functions = ?, updated_at = ? WHERE id = ? IF EXISTS")
        self._pause = prep(f"UPDATE {ks}.queries SET paused = ?, updated_at = ? WHERE id = ? "
                           "IF EXISTS")
        self._delete_query = prep(f"DELETE FROM {ks}.queries WHERE id = ? IF EXISTS")
        self._get_query = prep(f"SELECT {_Q_COLS} FROM {ks}.queries WHERE id = ?")
        self._all_queries = prep(f"SELECT {_Q_COLS} FROM {ks}.queries")
        self._upsert = prep(
            f"INSERT INTO {ks}.results (query_id, bucket, window_start, window_seconds, vals, "
            "samples, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?", True)
        self._range = prep(
            f"SELECT {_R_COLS} FROM {ks}.results WHERE query_id = ? AND bucket = ? "
            "AND window_start >= ? AND window_start < ? ORDER BY window_start ASC", True)
        self._index_put = prep(f"INSERT INTO {ks}.result_buckets (query_id, bucket) "
                               "VALUES (?, ?)", True)
        self._index_span = prep(f"SELECT bucket FROM {ks}.result_buckets WHERE query_id = ? "
                                "AND bucket >= ? AND bucket <= ?", True)
        self._index_all = prep(f"SELECT bucket FROM {ks}.result_buckets WHERE query_id = ?",
                               True)
        self._indexed: dict[tuple[str, int], float] = {}  # (query, bucket) -> monotonic time
        self._newest = prep(f"SELECT updated_at FROM {ks}.results WHERE query_id = ? "
                            "AND bucket = ? LIMIT 1", True)
        self._touch = prep(f"INSERT INTO {ks}.servers (server, last_seen) VALUES (?, ?) "
                           "USING TIMESTAMP ?", True)
        self._servers = prep(f"SELECT server, last_seen FROM {ks}.servers", True)
        self._put_status = prep(f"INSERT INTO {ks}.status (component, payload, updated_at) "
                                "VALUES (?, ?, ?)", True)
        self._status = prep(f"SELECT component, payload, updated_at FROM {ks}.status", True)

    @classmethod
    def connect(cls, settings: StorageSettings | None = None, *,
                ensure_schema: bool = True) -> Repository:
        """Connects to ``settings`` (default: ``APM_STORAGE_*``); creates the schema when it is
        missing (never alters an existing one: that is `apm storage migrate`'s job)."""
        settings = settings or StorageSettings()
        cluster = open_cluster(settings)
        try:
            session = cluster.connect()
            if ensure_schema and missing_tables(session, settings.keyspace):
                migrate(session, settings.keyspace, settings.retention_days, settings.replication)
            return cls(session, settings.keyspace, concurrency=settings.concurrency,
                       owns_cluster=True)
        except BaseException:
            cluster.shutdown()
            raise

    def close(self) -> None:
        if self._owns_cluster:
            self.session.cluster.shutdown()

    def __enter__(self) -> Repository:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _prepare(self, cql: str, idempotent: bool = False) -> Any:
        stmt = self.session.prepare(cql)
        stmt.is_idempotent = idempotent  # lets the driver retry it on timeouts
        return stmt

    def _run(self, stmt: Any, params: tuple[Any, ...]) -> Any:
        return self.session.execute(stmt, params, execution_profile=self.profile)

    def _execute_many(self, stmt: Any, groups: list[list[tuple[Any, ...]]]) -> None:
        """Runs ``stmt`` for every params tuple, ``concurrency`` requests in flight. Each group
        must share one partition: it goes as unlogged single-partition batches of at most
        BATCH_ROWS, which measured ~7x faster than one request per row (docs/storage.md)."""
        from cassandra.concurrent import execute_concurrent
        from cassandra.query import BatchStatement, BatchType

        work: list[tuple[Any, tuple[Any, ...]]] = []
        for group in groups:
            for i in range(0, len(group), BATCH_ROWS):
                chunk = group[i:i + BATCH_ROWS]
                if len(chunk) == 1:
                    work.append((stmt, chunk[0]))
                    continue
                batch = BatchStatement(batch_type=BatchType.UNLOGGED)
                batch.is_idempotent = True
                for params in chunk:
                    batch.add(stmt, params)
                work.append((batch, ()))
        if work:
            execute_concurrent(self.session, work, concurrency=self.concurrency,
                               raise_on_first_error=True, execution_profile=self.profile)

    # -- stored queries -------------------------------------------------------------------
    @staticmethod
    def _columns(text: str) -> tuple[Any, ...]:
        q = parse(text)  # raises QueryError naming the position and what was expected
        return (q.text, q.metric, list(q.servers), q.window_seconds,
                [f.text for f in q.functions])

    def save_query(self, text: str) -> StoredQuery:
        cols, now = self._columns(text), codec.to_ms(self.clock())
        while True:  # a uuid4 collision is all but impossible, but never overwrite a query
            qid = str(uuid.uuid4())
            if self._run(self._insert_query, (qid, *cols, now, now)).was_applied:
                break
        created = codec.from_ms(now)
        return StoredQuery(id=qid, query=parse(cols[0]), created_at=created, updated_at=created)

    def get_query(self, query_id: str) -> StoredQuery | None:
        row = self._run(self._get_query, (query_id,)).one()
        return None if row is None else codec.stored_query(row)

    def list_queries(self, include_paused: bool = True) -> list[StoredQuery]:
        out = []
        for row in self._run(self._all_queries, ()):
            try:
                stored = codec.stored_query(row)
            except QueryError as exc:  # kept in the table; one bad row must not hide the rest
                log.error("stored query %s no longer parses (%s): skipped", row[0], exc)
                continue
            if include_paused or not stored.paused:
                out.append(stored)
        out.sort(key=lambda s: (s.created_at is None, s.created_at, s.id))
        return out

    def _applied_or_missing(self, query_id: str, stmt: Any, params: tuple[Any, ...]
                            ) -> StoredQuery:
        if not self._run(stmt, params).was_applied or (got := self.get_query(query_id)) is None:
            raise KeyError(query_id)
        return got

    def update_query(self, query_id: str, text: str) -> StoredQuery:
        params = (*self._columns(text), codec.to_ms(self.clock()), query_id)
        return self._applied_or_missing(query_id, self._update_query, params)

    def set_paused(self, query_id: str, paused: bool) -> StoredQuery:
        params = (bool(paused), codec.to_ms(self.clock()), query_id)
        return self._applied_or_missing(query_id, self._pause, params)

    def delete_query(self, query_id: str) -> bool:
        """Deletes the query; its results stay readable until they expire with the retention
        (ids are never reused, and deleting partitions would litter TWCS with tombstones)."""
        return bool(self._run(self._delete_query, (query_id,)).was_applied)

    # -- window results -------------------------------------------------------------------
    def upsert_results(self, rows: Iterable[WindowResult]) -> int:
        """Writes every row (all are checked first: one bad row writes nothing). A window given
        twice is written once, as its latest version. Returns the number of windows written."""
        latest: dict[tuple[str, int], WindowResult] = {}
        for i, row in enumerate(rows):
            if (err := codec.result_error(row)) is not None:
                raise ValueError(f"result row {i}: {err}")
            result = WindowResult(*row)
            key = (result.query_id, codec.to_ms(result.window_start))
            if key not in latest or result.updated_at >= latest[key].updated_at:
                latest[key] = result
        partitions: dict[tuple[str, int], list[tuple[Any, ...]]] = {}
        for (qid, ms), r in latest.items():
            partitions.setdefault((qid, bucket_of(r.window_start)), []).append(
                (qid, bucket_of(r.window_start), ms, r.window_seconds,
                 {k: float(v) for k, v in r.values.items()}, r.samples,
                 codec.to_ms(r.updated_at), codec.to_us(r.updated_at)))
        # The index first: a reader must never see rows its index does not point to.
        now = time.monotonic()
        fresh = [key for key in partitions if now - self._indexed.get(key, -INDEX_REFRESH_S)
                 >= INDEX_REFRESH_S]
        self._execute_many(self._index_put, [[key] for key in fresh])
        self._execute_many(self._upsert, list(partitions.values()))
        if len(self._indexed) > 100_000:
            self._indexed.clear()
        self._indexed.update(dict.fromkeys(fresh, now))
        return len(latest)

    def read_results(self, query_id: str, start: float, end: float,
                     page_size: int = 5000) -> Iterator[WindowResult]:
        if not isinstance(page_size, int) or page_size < 1:
            raise ValueError(f"page_size must be a whole number >= 1, got {page_size!r}")
        for name, ts in (("start", start), ("end", end)):
            if not codec.finite(ts):
                raise ValueError(f"{name} must be finite epoch seconds, got {ts!r}")
        lo, hi = ms_ceil(max(0.0, start)), ms_ceil(end)  # ws >= start <=> ws_ms >= ceil(start)
        if hi <= lo:
            return iter(())
        first, last = bucket_span(lo, hi)
        buckets = sorted(row[0] for row in self._run(self._index_span, (query_id, first, last)))
        return read_range(self.session, self._range, query_id, buckets, lo, hi,
                          page_size=page_size, ahead=min(8, self.concurrency),
                          profile=self.profile)

    def last_result_at(self, query_id: str) -> float | None:
        """updated_at of the newest window (None when the query has no results)."""
        for (bucket,) in self._run(self._index_all, (query_id,)):  # newest bucket first
            row = self._run(self._newest, (query_id, bucket)).one()
            if row is not None:
                return codec.epoch(row[0])
        return None

    # -- servers and status ---------------------------------------------------------------
    def touch_servers(self, last_seen: Mapping[str, float]) -> None:
        """Records sightings; a server's stored last_seen only ever moves forward."""
        params = []
        for server, ts in last_seen.items():
            if (err := codec.server_row_error(server, ts)) is not None:
                raise ValueError(err)
            params.append((server, codec.to_ms(ts), codec.to_us(ts)))
        self._execute_many(self._touch, [[p] for p in params])

    def list_servers(self) -> dict[str, float]:
        return {row[0]: codec.epoch(row[1]) or 0.0 for row in self._run(self._servers, ())}

    def put_status(self, component: str, payload: Mapping[str, object]) -> None:
        blob = codec.dumps_payload(component, payload)
        self._run(self._put_status, (component, blob, codec.to_ms(self.clock())))

    def get_status(self) -> dict[str, dict]:
        """component -> its payload plus ``updated_at`` (epoch seconds of the put)."""
        return {row[0]: {**json.loads(row[1] or "{}"), "updated_at": codec.epoch(row[2])}
                for row in self._run(self._status, ())}

