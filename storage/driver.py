"""How the storage tier uses the Cassandra driver: one execution profile (tuple rows,
LOCAL_QUORUM, token-aware routing), the Cluster built from StorageSettings, and bulk execution
as concurrent single-partition batches."""

from __future__ import annotations

import logging
from typing import Any

from storage.settings import StorageSettings

__all__ = [
    "BATCH_BYTES",
    "BATCH_PARTITIONS",
    "BATCH_ROWS",
    "PROFILE",
    "execute_many",
    "execute_spread",
    "open_cluster",
    "profile_for",
    "spread_chunks",
]

log = logging.getLogger(__name__)

PROFILE = "apm-storage"
# Rows per single-partition batch (Cassandra's batch size warning and limit apply to batches
# of several partitions only, CASSANDRA-10876): ~7x the rate of one request per row.
BATCH_ROWS = 32
# Partitions per multi-partition batch: Cassandra warns past 10
# (unlogged_batch_across_partitions_warn_threshold).
BATCH_PARTITIONS = 10
# The estimated bytes (storage.driver._bytes) of a batch of several partitions: Cassandra
# warns past 5 KiB (batch_size_warn_threshold) and refuses past 50 KiB; a single-partition
# batch is exempt from both. Rows of many functions or long server names go fewer a batch.
BATCH_BYTES = 4096


def _execution_profile(request_timeout_s: float = 20.0) -> Any:
    from cassandra import ConsistencyLevel
    from cassandra.cluster import ExecutionProfile
    from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy
    from cassandra.query import tuple_factory

    # LOCAL_QUORUM reads and writes stay consistent with each other at any replication factor.
    return ExecutionProfile(
        load_balancing_policy=TokenAwarePolicy(DCAwareRoundRobinPolicy()),
        consistency_level=ConsistencyLevel.LOCAL_QUORUM,
        serial_consistency_level=ConsistencyLevel.LOCAL_SERIAL,
        request_timeout=request_timeout_s,
        row_factory=tuple_factory,
    )


def open_cluster(settings: StorageSettings) -> Any:
    """A driver Cluster (not yet connected) for ``settings``, with our profile as default."""
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster

    profile = _execution_profile(settings.request_timeout_s)
    return Cluster(
        settings.host_list,
        port=settings.port,
        protocol_version=settings.protocol_version,
        connect_timeout=settings.connect_timeout_s,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile, PROFILE: profile},
    )


def profile_for(session: Any) -> object:
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


def _bytes(params: tuple[Any, ...]) -> int:
    """About the bytes a row's ``params`` take in a mutation: a batch-size estimate, cheap
    (one pass, per-row cost matters at 10,000 rows a window), not exact."""
    size = 0
    for value in params:
        if isinstance(value, str):
            size += 4 + len(value)
        elif isinstance(value, dict):  # a map of function key to double
            size += 4 + sum(16 + len(key) for key in value)
        else:
            size += 12  # numbers, timestamps
    return size


def _chunks(items: list[Any], sizes: list[int], max_rows: int, max_bytes: float) -> list[list[Any]]:
    """``items`` in order, cut into runs of at most ``max_rows`` and ``max_bytes`` (a run of
    one item may be larger)."""
    out: list[list[Any]] = []
    run_bytes = 0
    for item, size in zip(items, sizes, strict=True):
        if not out or len(out[-1]) >= max_rows or run_bytes + size > max_bytes:
            out.append([])
            run_bytes = 0
        out[-1].append(item)
        run_bytes += size
    return out


def _execute(session: Any, work: list[tuple[Any, Any]], concurrency: int, profile: object) -> None:
    from cassandra.concurrent import execute_concurrent

    if work:
        execute_concurrent(
            session,
            work,
            concurrency=concurrency,
            raise_on_first_error=True,
            execution_profile=profile,
        )


def _batch(stmt: Any, chunk: list[Any]) -> tuple[Any, Any]:
    """One request for ``chunk`` (params tuples of ``stmt``, or bound statements if ``stmt``
    is None): the statement alone, or an unlogged batch."""
    from cassandra.query import BatchStatement, BatchType

    if len(chunk) == 1:
        return (chunk[0], ()) if stmt is None else (stmt, chunk[0])
    batch = BatchStatement(batch_type=BatchType.UNLOGGED)
    batch.is_idempotent = True
    for item in chunk:
        if stmt is None:
            batch.add(item)
        else:
            batch.add(stmt, item)
    return batch, ()


def execute_many(
    session: Any,
    stmt: Any,
    groups: list[list[tuple[Any, ...]]],
    *,
    concurrency: int,
    profile: object,
) -> None:
    """Runs ``stmt`` for every params tuple, ``concurrency`` requests in flight. Each group
    must share one partition: it goes as unlogged single-partition batches of at most
    BATCH_ROWS, measured ~7x faster than one request per row
    (docs/storage.md). Raises the first failure; every statement is idempotent, so the
    caller may simply retry the call."""
    work = [
        _batch(stmt, group[i : i + BATCH_ROWS])
        for group in groups
        for i in range(0, len(group), BATCH_ROWS)
    ]
    _execute(session, work, concurrency, profile)


def _replicas(session: Any, keyspace: str, bound: Any) -> tuple[str, ...]:
    """The hosts holding ``bound``'s partition (() when the driver has no token map)."""
    token_map = session.cluster.metadata.token_map
    if token_map is None or bound.routing_key is None:
        return ()
    token = token_map.token_class.from_key(bound.routing_key)
    return tuple(sorted(str(h.endpoint) for h in token_map.get_replicas(keyspace, token)))


def spread_chunks(
    session: Any, stmt: Any, rows: list[tuple[Any, ...]], keyspace: str
) -> list[list[Any]]:
    """``stmt`` bound to each of ``rows``, in runs of at most BATCH_PARTITIONS and about
    BATCH_BYTES whose partitions have the same replicas (one batch each)."""
    by_replicas: dict[tuple[str, ...], tuple[list[Any], list[int]]] = {}
    for params in rows:
        bound = stmt.bind(params)
        group = by_replicas.setdefault(_replicas(session, keyspace, bound), ([], []))
        group[0].append(bound)
        group[1].append(_bytes(params))
    return [
        chunk
        for bound, sizes in by_replicas.values()
        for chunk in _chunks(bound, sizes, BATCH_PARTITIONS, BATCH_BYTES)
    ]


def execute_spread(
    session: Any,
    stmt: Any,
    rows: list[tuple[Any, ...]],
    *,
    keyspace: str,
    concurrency: int,
    profile: object,
) -> None:
    """Runs ``stmt`` for rows that are mostly one to a partition (one window of each server's
    series) as unlogged batches of :func:`spread_chunks`: each batch is applied by the
    replicas that own all its partitions as one request, several times the rate of one
    request per row (docs/storage.md). Idempotent statements only."""
    work = [_batch(None, chunk) for chunk in spread_chunks(session, stmt, rows, keyspace)]
    _execute(session, work, concurrency, profile)
