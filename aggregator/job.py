"""The aggregator job: the windows stream, the server last-seen stream, and the control loop
that applies query changes and publishes progress, lag and late counts.

A changed set of active queries stops the windows stream and starts it again from the same
checkpoint with the new static query table (plan.py explains why the state carries over).
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
from aggregator.plan import decode, keep_shard, queries_frame, window_summaries
from aggregator.progress import ProgressCounter, state_figures
from aggregator.settings import AggregatorSettings, shard_of
from aggregator.store import AggregatorStore
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
        self.last_restart_s: float | None = None
        self.last_lag: dict[str, int] = {}
        self.progress = ProgressCounter(self.metrics)

    # --- the streams ------------------------------------------------------------------------

    def _samples(self) -> DataFrame:
        s = self.settings
        reader = (self.spark.readStream.format("kafka")
                  .option("kafka.bootstrap.servers", s.kafka_bootstrap)
                  .option("startingOffsets", s.starting_offsets)
                  # A deleted topic must not stop the job; unread data lost to retention shows
                  # up as lag first (docs/aggregator.md).
                  .option("failOnDataLoss", "false")
                  .option("kafka.metadata.max.age.ms", "2000")
                  # Spark reads each topic-partition's offset range with its own fetches,
                  # and the last fetch of a range waits fetch.max.wait.ms (500 ms by default)
                  # for data that is not there yet: 20 partitions read 100 records in 5.5 s,
                  # 0.7 s with 10 ms (docs/aggregator.md).
                  .option("kafka.fetch.max.wait.ms", str(s.kafka_fetch_wait_ms)))
        reader = (reader.option("subscribe", ",".join(s.topics)) if s.topics
                  else reader.option("subscribePattern", s.topic_pattern))
        if s.max_offsets_per_trigger:
            reader = reader.option("maxOffsetsPerTrigger", str(s.max_offsets_per_trigger))
        raw = reader.load()
        if s.source_tasks:
            # One Kafka task per topic-partition with new data: with one topic per metric that
            # is hundreds of tiny tasks a batch. Coalescing keeps the reads, in fewer tasks.
            raw = raw.coalesce(s.source_tasks)
        return keep_shard(decode(raw), s.shard_tuple)

    def mine(self, queries: list[StoredQuery]) -> list[StoredQuery]:
        """The active queries whose metric this job reads (its --metrics or --shard)."""
        s, shard = self.settings, self.settings.shard_tuple
        out = [q for q in queries if not q.paused]
        if s.metric_list:
            out = [q for q in out if q.query.metric in s.metric_list]
        if shard is not None:
            out = [q for q in out if shard_of(q.query.metric, shard[1]) == shard[0]]
        return sorted(out, key=lambda q: q.id)

    def _start_windows(self, active: list[StoredQuery]) -> None:
        s = self.settings
        table = queries_frame(self.spark, active)
        by_id = {q.id: q.query for q in active}
        longest = max((q.query.window_seconds for q in active), default=1)
        sets = window_summaries(self._samples(), table, s.allowed_lateness_seconds + longest,
                                dedup=s.dedup)

        def write_batch(batch: DataFrame, batch_id: int) -> None:
            rows = evaluate(batch, table).collect()
            results = to_results(rows, by_id, self.clock)
            if results:
                self.metrics.results.inc(self._upsert(results))

        self.windows = (sets.writeStream.queryName(f"{s.identity}-windows")
                        .outputMode("update").foreachBatch(write_batch)
                        .option("checkpointLocation", str(s.checkpoint / "windows"))
                        .trigger(processingTime=f"{s.trigger_seconds} seconds").start())
        self.active = active
        self.metrics.active.set(len(active))

    def _upsert(self, results: list[WindowResult]) -> int:
        def attempt() -> int:
            try:
                return self.store.upsert_results(results)
            except Exception as exc:  # driver errors differ by cause; the upsert is idempotent
                log.warning("upserting %d results failed, retrying: %s", len(results), exc)
                raise RetryableError(str(exc)) from exc

        return call_with_retry(attempt, deadline_s=60.0)

    def _start_servers(self) -> None:
        from pyspark.sql import functions as F

        s = self.settings

        def write_batch(batch: DataFrame, batch_id: int) -> None:
            seen = batch.groupBy("server").agg(F.max("ts").alias("ts")).collect()
            if seen:
                self.store.touch_servers({r["server"]: float(r["ts"]) for r in seen})

        self.servers = (self._samples().select("server", "ts").writeStream
                        .queryName(f"{s.identity}-servers").foreachBatch(write_batch)
                        .option("checkpointLocation", str(s.checkpoint / "servers"))
                        .trigger(processingTime=f"{s.servers_trigger_seconds} seconds").start())

    # --- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        self._start_windows(self.mine(self.store.list_queries(include_paused=False)))
        if self.settings.track_servers:
            self._start_servers()
        log.info("aggregator %s started with %d active queries", self.settings.identity,
                 len(self.active))

    def refresh_queries(self) -> bool:
        """Restarts the windows stream when the active query set changed; True if it did."""
        active = self.mine(self.store.list_queries(include_paused=False))
        if [(q.id, q.text) for q in active] == [(q.id, q.text) for q in self.active]:
            return False
        began = time.monotonic()
        self._collect_progress()
        if self.windows is not None:
            self.windows.stop()
        self._start_windows(active)
        self.last_restart_s = time.monotonic() - began
        self.metrics.restarts.inc()
        self.metrics.restart_seconds.set(self.last_restart_s)
        log.info("query set changed (%d active): stream restarted in %.2fs", len(active),
                 self.last_restart_s)
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
                self.last_lag = self.offsets.lag(self.processed_offsets())
            except Exception as exc:  # the broker briefly away: keep the last figures
                log.warning("cannot read Kafka end offsets: %s", exc)
        for topic, lag in self.last_lag.items():
            self.metrics.lag.labels(topic=topic).set(lag)
        watermark = (newest.get("eventTime") or {}).get("watermark")
        payload: dict[str, object] = {
            "identity": self.settings.identity,
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
