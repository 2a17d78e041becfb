"""Per-server results written where they are computed (issue 35): the Python side of
``io.apm.aggregator.ServerResults`` (aggregator/jvm).

Each micro-batch's evaluated rows of ``BY server`` queries (``evaluate``'s rows whose server is
not "") never reach the Python driver: the executors compute each row's stored values with the
catalogue's operations (:func:`series_queries` hands them over; every catalogue entry must have
a JVM operation, :data:`JVM_OPS`), write them to Cassandra with the Java driver in unlogged
batches per partition with a bounded number in flight, and rank every window they touched of a
``TOP``/``BOTTOM`` query (``io.apm.aggregator.Ranking``, held to ``apm.ranking.rank``). Only
counts come back, through accumulators (:class:`WriteCounts`).

The CQL is storage's own (``storage.server_tables.server_statements``), and the connection
settings are the shared ``APM_STORAGE_*`` (:class:`storage.settings.StorageSettings`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from apm.functions import spec
from apm.query import Query
from storage.server_tables import server_statements
from storage.settings import StorageSettings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["JVM_OPS", "ServerWrites", "WriteCounts", "series_queries"]

# Catalogue entry -> the operation io.apm.aggregator.SeriesQuery computes for it. A new entry
# without one fails here, at the job's start, not in the executors (tests check the table).
JVM_OPS = {
    "min": "min",
    "max": "max",
    "avg": "avg",
    "count": "count",
    "sum": "sum",
    "percentile": "percentile",
}


@dataclass(frozen=True)
class ServerWrites:
    """Where and how the executors write: the storage settings (``keyspace`` overrides
    theirs), requests in flight per task, rows per single-partition batch, and how long a
    transient failure is retried before the batch fails (and is replayed)."""

    storage: StorageSettings
    keyspace: str
    concurrency: int = 64
    batch_rows: int = 32
    retry_s: float = 60.0

    @classmethod
    def from_settings(cls, keyspace: str | None = None, retry_s: float = 60.0) -> ServerWrites:
        storage = StorageSettings()
        return cls(
            storage,
            keyspace or storage.keyspace,
            concurrency=storage.concurrency,
            retry_s=retry_s,
        )

    def conf(self) -> dict[str, str]:
        s = self.storage
        return {
            "hosts": ",".join(s.host_list),
            "port": str(s.port),
            "request_timeout_s": str(s.request_timeout_s),
            "connect_timeout_s": str(s.connect_timeout_s),
            "protocol_version": str(s.protocol_version),
            "concurrency": str(self.concurrency),
            "batch_rows": str(self.batch_rows),
            "retry_ms": str(int(self.retry_s * 1000)),
            **s.jvm_tls_conf(),
        }

    def statements(self) -> dict[str, str]:
        return server_statements(self.keyspace)


def series_queries(spark: SparkSession, queries: Mapping[str, Query]) -> Any:
    """The ``BY server`` and ``BY <tag>`` queries as a Java list of
    ``io.apm.aggregator.SeriesQuery`` (a group is written as a server is)."""
    from aggregator.quantiles import levels

    jvm = _jvm(spark)
    out = jvm.java.util.ArrayList()
    for qid, q in sorted(queries.items()):
        if not (q.by_server or q.group_by):
            continue
        ops = []
        for f in q.functions:
            op = JVM_OPS.get(spec(f.name).name)
            if op is None:
                raise ValueError(f"function {f.name!r} has no operation in the aggregator's JVM")
            ops.append(op)
        top = q.top
        out.add(
            jvm.io.apm.aggregator.SeriesQuery(
                qid,
                [f.key for f in q.functions],
                ops,
                [None if f.p is None else float(f.p) for f in q.functions],
                levels(q),
                top.n if top is not None else 0,
                top.function.key if top is not None else None,
                bool(top is not None and top.bottom),
            )
        )
    return out


def _jvm(spark: SparkSession) -> Any:
    jvm = spark._jvm
    if jvm is None:
        raise RuntimeError("the per-server writer needs a classic (JVM) SparkSession")
    return jvm


class WriteCounts:
    """The executors' counts of one job, as accumulators drained after each batch."""

    NAMES = ("written", "refused", "overflowed", "ranked", "retries", "reads")

    def __init__(self, spark: SparkSession, prefix: str) -> None:
        jvm = _jvm(spark)
        sc = spark.sparkContext._jsc.sc()
        self._acc = {name: sc.longAccumulator(f"{prefix}-server-{name}") for name in self.NAMES}
        counters = getattr(jvm.io.apm.aggregator, "ServerResults$Counters")
        self.java = counters(*(self._acc[name] for name in self.NAMES))

    def drain(self) -> dict[str, int]:
        out = {}
        for name, acc in self._acc.items():
            out[name] = int(acc.value())
            acc.reset()
        return out


def write(
    rows: DataFrame,
    java_queries: Any,
    writes: ServerWrites,
    updated_at: float,
    counts: WriteCounts,
) -> None:
    """Writes ``rows`` (``evaluate``'s per-server rows) from the executors."""
    spark = rows.sparkSession
    _jvm(spark).io.apm.aggregator.ServerResults.write(
        rows._jdf,
        java_queries,
        writes.conf(),
        writes.statements(),
        round(updated_at * 1000),
        counts.java,
    )
