"""The aggregator job: the windows stream, the server last-seen stream, and the control loop
that applies query changes and publishes progress, lag and late counts.

The job reads exactly the metric topics its active queries use (within its ``--metrics`` and
``--shard`` scope): a changed set of active queries stops both streams and starts them again
from the same checkpoints, with the new static query table and the new subscription (plan.py
explains why the window state and the offsets of the topics it keeps carry over, and what a
topic that joins starts from). With no active query there is no stream at all: the job only
polls the query table.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aggregator.evaluate import evaluate, to_results
from aggregator.metrics import AggregatorMetrics
from aggregator.plan import admit, decode, queries_frame, topic_regex, window_summaries
from aggregator.progress import ProgressCounter, state_figures
from aggregator.settings import AggregatorSettings
from aggregator.store import AggregatorStore
from apm.model import topic_for
from apm.query import StoredQuery, WindowResult
from apm.retry import RetryableError, call_with_retry

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from aggregator.lag import KafkaOffsets

__all__ = ["Aggregator"]

log = logging.getLogger(__name__)


class Aggregator:
    def __init__(self, spark: SparkSession, store: AggregatorStore,
                 settings: AggregatorSettings | None = None,
                 metrics: AggregatorMetrics | None = None,
                 offsets: KafkaOffsets | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.spark = spark
        self.store = store
        self.settings = settings or AggregatorSettings()
        self.metrics = metrics or AggregatorMetrics()
        self.offsets = offsets
        self.clock = clock
        self.windows: StreamingQuery | None = None
        self.servers: StreamingQuery | None = None
        self.active: list[StoredQuery] = []
        self.reads: list[str] = []  # the metrics whose topics the streams subscribe to now
        self._admitted: list[tuple[str, float]] = []  # (metric, since) the servers stream uses
        self.last_restart_s: float | None = None
        self.last_lag: dict[str, int] = {}
        self.progress = ProgressCounter(self.metrics)

    # --- the streams ------------------------------------------------------------------------

    def _samples(self, metrics: list[str]) -> DataFrame:
        s = self.settings
        reader = (self.spark.readStream.format("kafka")
                  .option("kafka.bootstrap.servers", s.kafka_bootstrap)
                  # Exactly these metrics' topics. A pattern, not a list: a topic that does
                  # not exist yet is waited for (picked up within the metadata age) instead of
                  # failing the stream with UnknownTopicOrPartitionException.
                  .option("subscribePattern", topic_regex(metrics))
                  .option("startingOffsets", s.starting_offsets)
                  # A deleted topic, or one that leaves the subscription, must not stop the
                  # job; unread data lost to retention shows up as lag first.
                  .option("failOnDataLoss", "false")
                  .option("kafka.metadata.max.age.ms", "2000")
                  # Spark reads each topic-partition's offset range with its own fetches,
                  # and the last fetch of a range waits fetch.max.wait.ms (500 ms by default)
                  # for data that is not there yet: 20 partitions read 100 records in 5.5 s,
                  # 0.7 s with 10 ms (docs/aggregator.md).
                  .option("kafka.fetch.max.wait.ms", str(s.kafka_fetch_wait_ms)))
        if s.max_offsets_per_trigger:
            reader = reader.option("maxOffsetsPerTrigger", str(s.max_offsets_per_trigger))
        raw = reader.load()
        if s.source_tasks:
            # One Kafka task per topic-partition with new data: with one topic per metric that
            # is hundreds of tiny tasks a batch. Coalescing keeps the reads, in fewer tasks.
            raw = raw.coalesce(s.source_tasks)
        return decode(raw)

    def mine(self, queries: list[StoredQuery]) -> list[StoredQuery]:
        """The active queries whose metric is in this job's scope (--metrics, --shard)."""
        scope = self.settings.scope
        return sorted((q for q in queries if not q.paused and scope.covers(q.query.metric)),
                      key=lambda q: q.id)

    def _start_windows(self, active: list[StoredQuery], table: DataFrame) -> None:
        s = self.settings
        by_id = {q.id: q.query for q in active}
        longest = max(q.query.window_seconds for q in active)
        sets = window_summaries(self._samples(self.reads), table,
                                s.allowed_lateness_seconds + longest, dedup=s.dedup)

        def write_batch(batch: DataFrame, batch_id: int) -> None:
            rows = evaluate(batch, table).collect()
            results = to_results(rows, by_id, self.clock)
            if results:
                self.metrics.results.inc(self._upsert(results))

        self.windows = (sets.writeStream.queryName(f"{s.identity}-windows")
                        .outputMode("update").foreachBatch(write_batch)
                        .option("checkpointLocation", str(s.checkpoint / "windows"))
                        .trigger(processingTime=f"{s.trigger_seconds} seconds").start())

    def _upsert(self, results: list[WindowResult]) -> int:
        def attempt() -> int:
            try:
                return self.store.upsert_results(results)
            except Exception as exc:  # driver errors differ by cause; the upsert is idempotent
                log.warning("upserting %d results failed, retrying: %s", len(results), exc)
                raise RetryableError(str(exc)) from exc

        return call_with_retry(attempt, deadline_s=60.0)

    def _start_servers(self, table: DataFrame) -> None:
        from pyspark.sql import functions as F

        s = self.settings

        def write_batch(batch: DataFrame, batch_id: int) -> None:
            # One pass for both: rows with a null metric are per server, and the reverse.
            seen = (batch.groupingSets([["server"], ["metric"]], "server", "metric")
                    .agg(F.max("ts").alias("ts")).collect())
            servers = {r["server"]: float(r["ts"]) for r in seen if r["metric"] is None}
            metrics = {r["metric"]: float(r["ts"]) for r in seen if r["server"] is None}
            if servers:
                self.store.touch_servers(servers)
            if metrics:
                self.store.touch_metrics(metrics)

        samples = admit(self._samples(self.reads), table).select("metric", "server", "ts")
        self.servers = (samples.writeStream
                        .queryName(f"{s.identity}-servers").foreachBatch(write_batch)
                        .option("checkpointLocation", str(s.checkpoint / "servers"))
                        .trigger(processingTime=f"{s.servers_trigger_seconds} seconds").start())

    def _apply(self, active: list[StoredQuery]) -> None:
        """Stops what runs and starts the streams ``active`` needs (none if it is empty)."""
        admitted = sorted({(q.query.metric, q.active_from or 0.0) for q in active})
        if self.windows is not None:
            self.windows.stop()
            self.windows = None
        restart_servers = admitted != self._admitted or not active
        if restart_servers and self.servers is not None:
            self.servers.stop()
            self.servers = None
        self.active, self._admitted = active, admitted
        self.reads = sorted({q.query.metric for q in active})
        self.metrics.active.set(len(active))
        self.metrics.reads.set(len(self.reads))
        if not active:
            return
        table = queries_frame(self.spark, active)
        self._start_windows(active, table)
        if self.settings.track_servers and self.servers is None:
            self._start_servers(table)

    # --- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        self._apply(self.mine(self.store.list_queries(include_paused=False)))
        log.info("aggregator %s started with %d active queries over %d metrics (scope: %s)",
                 self.settings.identity, len(self.active), len(self.reads),
                 self.settings.scope.describe())

    def refresh_queries(self) -> bool:
        """Restarts the streams when the active query set changed; True if it did."""
        active = self.mine(self.store.list_queries(include_paused=False))
        if [(q.id, q.text, q.active_from) for q in active] == \
                [(q.id, q.text, q.active_from) for q in self.active]:
            return False
        began = time.monotonic()
        self._collect_progress()
        before = self.reads
        self._apply(active)
        self.last_restart_s = time.monotonic() - began
        self.metrics.restarts.inc()
        self.metrics.restart_seconds.set(self.last_restart_s)
        joined, left = sorted(set(self.reads) - set(before)), sorted(set(before) - set(self.reads))
        log.info("query set changed (%d active over %d metrics; joined %s, left %s): streams "
                 "restarted in %.2fs", len(active), len(self.reads), joined or "none",
                 left or "none", self.last_restart_s)
        return True

    def check(self) -> None:
        """Raises the failure of a stream that stopped on its own."""
        for query in (self.windows, self.servers):
            if query is not None and not query.isActive:
                exc = query.exception()
                raise RuntimeError(f"stream {query.name} stopped: {exc}")

    def stop(self) -> None:
        for query in (self.windows, self.servers):
            if query is not None and query.isActive:
                query.stop()
        if self.offsets is not None:
            self.offsets.close()

    def run(self, stop: threading.Event) -> None:
        """Runs until ``stop`` is set; query changes are polled every trigger interval."""
        self.start()
        next_status = 0.0
        try:
            while not stop.wait(self.settings.trigger_seconds):
                self.check()
                try:
                    self.refresh_queries()
                except Exception as exc:  # storage briefly away: keep the running query set
                    log.warning("cannot refresh the query set: %s", exc)
                if time.monotonic() >= next_status:
                    next_status = time.monotonic() + self.settings.status_every_seconds
                    self.publish_status()
        finally:
            self.stop()

    # --- progress, lag, status --------------------------------------------------------------

    def _collect_progress(self) -> dict[str, Any] | None:
        """Feeds unseen progress reports into the counters; returns the newest report."""
        if self.windows is None:
            return None
        return self.progress.feed(self.windows.recentProgress)

    @property
    def late_rows_total(self) -> int:
        return self.progress.late_rows_total

    def processed_offsets(self) -> dict[tuple[str, int], int]:
        from aggregator.lag import checkpoint_offsets, parse_source_offsets

        progress = self.windows.lastProgress if self.windows is not None else None
        if progress is not None:
            sources = json.loads(progress.json).get("sources") or []
            if sources and sources[0].get("endOffset"):
                return parse_source_offsets(sources[0]["endOffset"])
        return checkpoint_offsets(self.settings.checkpoint / "windows")

    def publish_status(self) -> dict[str, object]:
        newest = self._collect_progress() or {}
        windows, dedup_keys, state_bytes = state_figures(newest)
        if self.offsets is not None:
            try:
                self.last_lag = self.offsets.lag(self.processed_offsets(),
                                                 [topic_for(m) for m in self.reads])
            except Exception as exc:  # the broker briefly away: keep the last figures
                log.warning("cannot read Kafka end offsets: %s", exc)
        self.metrics.lag.clear()  # a topic that left the subscription has no lag any more
        for topic, lag in self.last_lag.items():
            self.metrics.lag.labels(topic=topic).set(lag)
        watermark = (newest.get("eventTime") or {}).get("watermark")
        payload: dict[str, object] = {
            "identity": self.settings.identity,
            "scope": self.settings.scope.to_json(),
            "reads": self.reads,
            "idle": not self.active,
            "checkpoint": str(self.settings.checkpoint),
            "active_queries": len(self.active),
            "batch_id": newest.get("batchId"),
            "batch_duration_s": (newest.get("durationMs") or {}).get("triggerExecution", 0)
            / 1000,
            "input_rows_per_s": newest.get("processedRowsPerSecond"),
            "state_windows": windows,
            "state_dedup_keys": dedup_keys,
            "state_memory_bytes": state_bytes,
            "late_rows_dropped": self.late_rows_total,
            "lag": self.last_lag,
            "lag_total": sum(self.last_lag.values()),
            "watermark": watermark,
            "last_restart_s": self.last_restart_s,
            "updated_at": self.clock(),
        }
        self.metrics.state_rows.set(float(windows))
        self.metrics.state_bytes.set(float(state_bytes))
        try:
            self.store.put_status(self.settings.identity, payload)
        except Exception as exc:
            log.warning("cannot publish status: %s", exc)
        return payload
