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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from apm.query import QueryError, StoredQuery, WindowResult, accept, parse
from apm.ranking import Ranked
from apm.tiers import WindowPartial
from storage import codec
from storage.driver import execute_many, open_cluster, profile_for
from storage.rankings import RankingStore
from storage.reader import bucket_span, ms_ceil, read_at, read_range, span_ms
from storage.schema import INDEX_REFRESH_S, IndexRows, bucket_of, migrate, missing_tables
from storage.servers import ServerStore
from storage.settings import StorageSettings, keyspace_error
from storage.statements import Statements
from storage.tiers import TierStore

__all__ = ["INDEX_REFRESH_S", "Repository"]

log = logging.getLogger(__name__)


class Repository:
    """Stored queries, window results, server sightings and component status in one keyspace."""

    def __init__(
        self,
        session: Any,
        keyspace: str,
        *,
        clock: Callable[[], float] = time.time,
        concurrency: int = 64,
        owns_cluster: bool = False,
    ) -> None:
        if (err := keyspace_error(keyspace)) is not None:
            raise ValueError(err)
        if missing := missing_tables(session, keyspace):
            raise LookupError(
                f"keyspace {keyspace!r} lacks tables {', '.join(missing)}: "
                "run `apm storage migrate` first"
            )
        self.session, self.keyspace, self.clock = session, keyspace, clock
        self.concurrency, self._owns_cluster = concurrency, owns_cluster
        self.profile = profile_for(session)
        self._cql = Statements(session, keyspace)
        self._indexed = IndexRows(limit=100_000)  # (query, bucket) of result_buckets
        self._servers = ServerStore(
            session, keyspace, concurrency=concurrency, profile=self.profile
        )
        self._tiers = TierStore(
            session, keyspace, concurrency=concurrency, profile=self.profile, clock=clock
        )
        self._rankings = RankingStore(
            session, keyspace, self._servers, concurrency=concurrency, profile=self.profile
        )

    @classmethod
    def connect(
        cls, settings: StorageSettings | None = None, *, ensure_schema: bool = True
    ) -> Repository:
        """Connects to ``settings`` (default: ``APM_STORAGE_*``); creates the schema when it is
        missing (never alters an existing one: that is `apm storage migrate`'s job)."""
        settings = settings or StorageSettings()
        cluster = open_cluster(settings)
        try:
            session = cluster.connect()
            if ensure_schema and missing_tables(session, settings.keyspace):
                migrate(
                    session,
                    settings.keyspace,
                    settings.retention_days,
                    settings.replication,
                    settings.tier_ttl_s,
                )
            return cls(
                session, settings.keyspace, concurrency=settings.concurrency, owns_cluster=True
            )
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

    def _run(self, stmt: Any, params: tuple[Any, ...]) -> Any:
        return self.session.execute(stmt, params, execution_profile=self.profile)

    def _execute_many(self, stmt: Any, groups: list[list[tuple[Any, ...]]]) -> None:
        execute_many(self.session, stmt, groups, concurrency=self.concurrency, profile=self.profile)

    # -- stored queries -------------------------------------------------------------------
    @staticmethod
    def _columns(text: str) -> tuple[Any, ...]:
        # Raises QueryError naming the position and what was expected, or what is not
        # evaluated yet (apm.query.accept).
        q = accept(text)
        return (q.text, q.metric, list(q.entries), q.window_seconds, [f.text for f in q.functions])

    def save_query(self, text: str) -> StoredQuery:
        cols, now = self._columns(text), codec.to_ms(self.clock())
        while True:  # a uuid4 collision is all but impossible, but never overwrite a query
            qid = str(uuid.uuid4())
            if self._run(self._cql.insert_query, (qid, *cols, now, now, now)).was_applied:
                break
        created = codec.from_ms(now)
        return StoredQuery(
            id=qid,
            query=parse(cols[0]),
            created_at=created,
            updated_at=created,
            active_since=created,
        )

    def get_query(self, query_id: str) -> StoredQuery | None:
        row = self._run(self._cql.get_query, (query_id,)).one()
        return None if row is None else codec.stored_query(row)

    def list_queries(self, include_paused: bool = True) -> list[StoredQuery]:
        out = []
        for row in self._run(self._cql.all_queries, ()):
            try:
                stored = codec.stored_query(row)
            except QueryError as exc:  # kept in the table; one bad row must not hide the rest
                log.error("stored query %s no longer parses (%s): skipped", row[0], exc)
                continue
            if include_paused or not stored.paused:
                out.append(stored)
        out.sort(key=lambda s: (s.created_at is None, s.created_at, s.id))
        return out

    def _applied_or_missing(self, query_id: str, stmt: Any, params: tuple[Any, ...]) -> StoredQuery:
        if not self._run(stmt, params).was_applied or (got := self.get_query(query_id)) is None:
            raise KeyError(query_id)
        return got

    def update_query(self, query_id: str, text: str) -> StoredQuery:
        """Redefines a query; one given another metric becomes active anew (active_since), as
        its samples are read from that moment on."""
        cols, now = self._columns(text), codec.to_ms(self.clock())
        if (current := self.get_query(query_id)) is None:
            raise KeyError(query_id)
        since = (
            codec.to_ms(current.active_from)
            if current.active_from is not None and current.query.metric == cols[1]
            else now
        )
        return self._applied_or_missing(
            query_id, self._cql.update_query, (*cols, now, since, query_id)
        )

    def set_paused(self, query_id: str, paused: bool) -> StoredQuery:
        """Pauses or resumes a query; resuming a paused one makes it active from now on."""
        now = codec.to_ms(self.clock())
        if paused:
            return self._applied_or_missing(query_id, self._cql.pause, (now, query_id))
        self._run(self._cql.resume, (now, now, query_id))  # not applied: missing or active
        if (got := self.get_query(query_id)) is None:
            raise KeyError(query_id)
        return got

    def delete_query(self, query_id: str) -> bool:
        """Deletes the query; its results stay readable until they expire with the retention
        (ids are never reused, and deleting partitions would litter TWCS with tombstones)."""
        return bool(self._run(self._cql.delete_query, (query_id,)).was_applied)

    # -- window results -------------------------------------------------------------------
    def upsert_results(self, rows: Iterable[WindowResult]) -> int:
        """Writes every row (all are checked first: one bad row writes nothing). A window given
        twice is written once, as its latest version. Rows with a ``server`` go to the
        per-server tables (storage.servers). Returns the number of windows written."""
        latest = codec.latest_results(rows)
        if per_server := {key: r for key, r in latest.items() if r.server}:
            self._servers.upsert(per_server)
        partitions: dict[tuple[str, int], list[tuple[Any, ...]]] = {}
        for (qid, server, ms), r in latest.items():
            if not server:
                bucket = bucket_of(r.window_start)
                partitions.setdefault((qid, bucket), []).append(
                    (qid, bucket, ms, *codec.result_columns(r))
                )
        # The index first: a reader must never see rows its index does not point to.
        fresh = self._indexed.due(partitions)
        self._execute_many(self._cql.index_put, [[key] for key in fresh])
        self._execute_many(self._cql.upsert, list(partitions.values()))
        self._indexed.written(fresh)
        return len(latest)

    def read_results(
        self,
        query_id: str,
        start: float,
        end: float,
        page_size: int = 5000,
        tier: str | None = None,
    ) -> Iterator[WindowResult]:
        """The query's one series (server "") with start <= window_start < end, ascending:
        its windows, or with ``tier`` (``1m``, ``1h``) that rollup tier's rows."""
        if tier is not None:
            return self._tiers.read_tier(tier, query_id, start, end, page_size)
        lo, hi = span_ms(start, end, page_size)
        if hi <= lo:
            return iter(())
        first, last = bucket_span(lo, hi)
        buckets = sorted(row[0] for row in self._run(self._cql.index_span, (query_id, first, last)))
        return read_range(
            self.session,
            self._cql.range,
            query_id,
            buckets,
            lo,
            hi,
            page_size=page_size,
            ahead=min(8, self.concurrency),
            profile=self.profile,
        )

    # -- rollup tiers (storage.tiers) ------------------------------------------------------
    def upsert_partials(self, partials: Iterable[WindowPartial]) -> int:
        return self._tiers.upsert_partials(partials)

    def read_partials(self, query_id: str, start: float, end: float) -> list[WindowPartial]:
        return self._tiers.read_partials(query_id, start, end)

    def upsert_tier(self, tier: str, rows: Iterable[WindowResult]) -> int:
        return self._tiers.upsert_tier(tier, rows)

    def read_results_at(self, query_id: str, starts: Sequence[float]) -> Iterator[WindowResult]:
        """The windows of ``query_id`` that start exactly at one of ``starts`` (epoch seconds),
        ascending: a chart's or query_range's sparse steps in a few statements (one per day
        bucket and 100 starts, storage.reader.read_at) rather than one range read per step."""
        for ts in starts:
            if not codec.finite(ts) or ts < 0:
                raise ValueError(f"window starts must be finite epoch seconds >= 0, got {ts!r}")
        return read_at(
            self.session,
            self._cql.at_starts,
            query_id,
            [ms_ceil(ts) for ts in starts],
            ahead=min(8, self.concurrency),
            profile=self.profile,
        )

    def last_result_at(self, query_id: str) -> float | None:
        """updated_at of the newest window, its one series' or any server's (None when the
        query has no results)."""
        newest = self._servers.newest(query_id)
        for (bucket,) in self._run(self._cql.index_all, (query_id,)):  # newest bucket first
            row = self._run(self._cql.newest, (query_id, bucket)).one()
            if row is not None:
                plain = codec.epoch(row[0])
                return plain if newest is None or (plain or 0.0) > newest else newest
        return newest

    # -- per-server series and rankings (storage.servers, storage.rankings) ---------------
    def read_server_results(
        self, query_id: str, server: str, start: float, end: float, page_size: int = 5000
    ) -> Iterator[WindowResult]:
        """One server's series of a ``BY server`` query, start <= window_start < end,
        ascending: one partition per day of the range that holds per-server results."""
        return self._servers.read_series(query_id, server, start, end, page_size)

    def read_window_servers(self, query_id: str, window_start: float) -> Iterator[WindowResult]:
        """Every server's result of one window, by server name (one partition)."""
        return self._servers.read_window(query_id, window_start)

    def list_result_servers(self, query_id: str, start: float, end: float) -> list[str]:
        """The servers with per-server results of the query in the days [start, end) touches,
        sorted (day granularity: a server may have no window in the range itself)."""
        return self._servers.servers(query_id, start, end)

    def upsert_ranked(self, rows: Iterable[Ranked]) -> int:
        """Replaces the ranking of each window given (all rows checked first: one bad row or
        ranking writes nothing) unless the stored one is newer (its newest row's updated_at;
        at the same version Cassandra's tie rule decides). Returns the windows written."""
        return self._rankings.upsert(rows)

    def read_ranked(self, query_id: str, start: float, end: float) -> Iterator[Ranked]:
        """Every window's ranking with start <= window_start < end, by window then rank."""
        return self._rankings.read(query_id, start, end)

    # -- servers and status ---------------------------------------------------------------
    def _touch(
        self,
        stmt: Any,
        last_seen: Mapping[str, float],
        error: Callable[[object, object], str | None],
    ) -> None:
        params = []
        for name, ts in last_seen.items():
            if (err := error(name, ts)) is not None:
                raise ValueError(err)
            params.append((name, codec.to_ms(ts), codec.to_us(ts)))
        self._execute_many(stmt, [[p] for p in params])

    def _sightings(self, stmt: Any) -> dict[str, float]:
        return {row[0]: codec.epoch(row[1]) or 0.0 for row in self._run(stmt, ())}

    def touch_servers(self, last_seen: Mapping[str, float]) -> None:
        """Records sightings; a server's stored last_seen only ever moves forward."""
        self._touch(self._cql.touch, last_seen, codec.server_row_error)

    def list_servers(self) -> dict[str, float]:
        return self._sightings(self._cql.servers)

    def touch_metrics(self, last_seen: Mapping[str, float]) -> None:
        """Records each metric's newest sample time; it only ever moves forward."""
        self._touch(self._cql.touch_metric, last_seen, codec.metric_row_error)

    def list_metrics(self) -> dict[str, float]:
        """metric -> its newest sample time, for the metrics some job has read."""
        return self._sightings(self._cql.metrics)

    def put_status(self, component: str, payload: Mapping[str, object]) -> None:
        blob = codec.dumps_payload(component, payload)
        self._run(self._cql.put_status, (component, blob, codec.to_ms(self.clock())))

    def get_status(self) -> dict[str, dict]:
        """component -> its payload plus ``updated_at`` (epoch seconds of the put)."""
        return {
            row[0]: {**json.loads(row[1] or "{}"), "updated_at": codec.epoch(row[2])}
            for row in self._run(self._cql.status, ())
        }
