"""The aggregator job: the windows stream (which also gathers each server's last sample,
aggregator/seen.py), and the control loop that applies query changes and publishes progress,
lag and late counts.

The job reads exactly the metric topics its active queries use (within its ``--metrics`` and
``--shard`` scope): a changed set of active queries stops the stream and starts it again
from the same checkpoint, with the new static query table and the new subscription (plan.py
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

from aggregator.joining import JoinCap
from aggregator.plan import queries_frame
from aggregator.progress import ProgressCounter, state_figures
from aggregator.recovery import StreamRestarts
from aggregator.retrying import RetryingStore, write_results
from aggregator.rollup import Rollup, RollupStore
from aggregator.seen import Batch, Touches
from aggregator.server_writes import ServerWrites
from aggregator.settings import AggregatorSettings
from aggregator.skew import SetAside
from aggregator.store import AggregatorStore
from aggregator.streams import start_windows
from aggregator.tag_map import TagMap
from aggregator.tags_feed import TagsFeed
from aggregator.telemetry import AggregatorTelemetry
from apm.model import topic_for
from apm.query import StoredQuery, WindowResult
from apm.tiers import WindowPartial

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from aggregator.lag import KafkaOffsets

__all__ = ["Aggregator"]

log = logging.getLogger(__name__)


class Aggregator:
    def __init__(
        self,
        spark: SparkSession,
        store: AggregatorStore,
        settings: AggregatorSettings | None = None,
        telemetry: AggregatorTelemetry | None = None,
        offsets: KafkaOffsets | None = None,
        clock: Callable[[], float] = time.time,
        server_writes: ServerWrites | None = None,
        tiers: RollupStore | None = None,
    ) -> None:
        self.spark = spark
        # The executors' writer of BY server queries' rows (aggregator/server_writes.py).
        self.server_writes = server_writes
        self.settings = settings or AggregatorSettings()
        self.telemetry = telemetry or AggregatorTelemetry()
        # Every storage call retries transient failures (aggregator/retrying.py).
        self.store = (
            store
            if isinstance(store, RetryingStore)
            else RetryingStore(
                store,
                self.settings.storage_retry_seconds,
                retried=lambda call: self.telemetry.storage_retries.labels(call).inc(),
            )
        )
        self.offsets = offsets
        self.clock = clock
        # The rollup tiers of the fleet series (aggregator/rollup.py); None: not kept.
        self.rollup = (
            Rollup(
                tiers,
                clock,
                self.settings.rollup_buckets_per_pass,
                lambda tier: self.telemetry.rollup_buckets.labels(tier).inc(),
            )
            if tiers is not None
            else None
        )
        self.windows: StreamingQuery | None = None
        self.active: list[StoredQuery] = []
        self.server_counts: dict[str, int] = {}  # the executors' writes, since the start
        self.reads: list[str] = []  # the metrics whose topics the stream subscribes to now
        self.join_cap = JoinCap(
            self.settings.max_offsets_per_trigger, patience_s=30 * self.settings.trigger_seconds
        )
        self.last_restart_s: float | None = None
        self.last_lag: dict[str, int] = {}
        self.progress = ProgressCounter(self.telemetry)
        self.phases: dict[str, list[float]] = {}  # recent seconds per batch phase (_phase)
        self.set_aside = SetAside(
            lambda metric, reason, n: self.telemetry.set_aside.labels(metric, reason).inc(n)
        )
        # Newest sample per server and metric, written every servers_trigger_seconds.
        self.touches = Touches(self._touch, self.settings.servers_trigger_seconds, time.monotonic)
        # The tags topic's follower, made when a query first uses host tags; it outlives the
        # stream's restarts so that each version keeps the time it was received.
        self.tags: TagsFeed | None = None
        self.restarts = StreamRestarts(
            self.settings.stream_restart_cap_seconds,
            lambda stream: self.telemetry.stream_failures.labels(stream).inc(),
        )

    # --- the streams ------------------------------------------------------------------------

    def mine(self, queries: list[StoredQuery]) -> list[StoredQuery]:
        """The active queries whose metric is in this job's scope (--metrics, --shard)."""
        scope = self.settings.scope
        return sorted(
            (q for q in queries if not q.paused and scope.covers(q.query.metric)),
            key=lambda q: q.id,
        )

    def _write(self, results: list[WindowResult]) -> None:
        refused = self.telemetry.refused.inc
        self.telemetry.results.inc(write_results(self.store, results, lambda row: refused()))

    def _partials(self, partials: list[WindowPartial]) -> None:
        """A batch's fleet windows' partials: written (retried like the results), then their
        tier buckets marked for the rollup. One refused for a deterministic reason is logged
        and left out: raising would fail the same batch on every replay."""
        rollup = self.rollup
        if rollup is None or not partials:
            return
        try:
            self.store.retry("upsert_partials", lambda: rollup.store.upsert_partials(partials))
        except ValueError as exc:
            log.error("window partials refused, left out of the tiers: %s", exc)
            return
        rollup.wrote(partials)

    def roll_up(self) -> None:
        """One rollup pass (bounded), and its lag on /metrics."""
        if self.rollup is None:
            return
        try:
            self.rollup.run_once()
        except Exception as exc:  # storage away: the buckets wait for the next pass
            log.warning("rollup pass failed: %s", exc)
        self.telemetry.rollup_pending.set(self.rollup.pending)
        self.telemetry.rollup_lag.set(self.rollup.lag_seconds())

    def _servers_done(self, counts: dict[str, int]) -> None:
        """A batch's per-server writes in the executors (aggregator/server_writes.py)."""
        for name, n in counts.items():
            self.server_counts[name] = self.server_counts.get(name, 0) + n
        self.telemetry.results.inc(counts.get("written", 0))
        self.telemetry.refused.inc(counts.get("refused", 0))
        if n := counts.get("overflowed", 0):
            self.telemetry.overflowed.labels("server").inc(n)

    def _overflowed(self, key: str) -> None:
        self.telemetry.overflowed.labels(key).inc()

    def _phase(self, name: str, seconds: float) -> None:
        self.telemetry.batch_phase_seconds.labels(name).observe(seconds)
        self.phases.setdefault(name, []).append(seconds)
        del self.phases[name][:-200]  # the benchmark reads the recent ones

    def _touch(self, servers: dict[str, float], metrics: dict[str, float]) -> None:
        if servers:
            self.store.touch_servers(servers)
        if metrics:
            self.store.touch_metrics(metrics)

    def _seen(self, batch: Batch) -> None:
        self.set_aside.add(batch.set_aside)
        self.touches.add(batch.servers, batch.metrics)
        self.touches.flush()

    def _apply(self, active: list[StoredQuery]) -> None:
        """Stops what runs and starts the stream ``active`` needs (none if it is empty)."""
        admitted = sorted({(q.query.metric, q.active_from or 0.0) for q in active})
        if self.windows is not None:
            self.windows.stop()
            self.windows = None
        self.active = active
        if self.rollup is not None:
            self.rollup.queries = {q.id: q.query for q in active}
        self.reads = sorted({q.query.metric for q in active})
        self.telemetry.active.set(len(active))
        self.telemetry.reads.set(len(self.reads))
        if not active:
            self.join_cap.raised = False
            return
        if self.tags is None and any(q.query.uses_tags for q in active):
            s = self.settings
            tag_map = TagMap(s.tags_max_servers, s.tags_max_versions)
            self.tags = TagsFeed(s.kafka_bootstrap, tag_map, s.tags_topic)
            self.tags.start()
        known = {topic for topic, _ in self.processed_offsets()}
        cap = self.join_cap.cap(admitted, known, self.offsets)
        table = queries_frame(self.spark, active)
        self.windows = start_windows(
            self.spark,
            self.settings,
            self.reads,
            {q.id: q.query for q in active},
            table,
            cap,
            self._write,
            self.clock,
            self._phase,
            self._overflowed,
            self._seen if self.settings.track_servers else None,
            self.progress.add_late,
            self.server_writes,
            self._servers_done,
            self._partials if self.rollup is not None else None,
            self.tags,
        )

    def settle(self) -> None:
        """Back to the configured cap once a batch has read the joining topics' backlog."""
        if self.windows is None or not self.windows.lastProgress:
            return
        if self.join_cap.done({topic for topic, _ in self.processed_offsets()}):
            self._collect_progress()
            self._apply(self.active)

    # --- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        self._apply(self.mine(self.store.list_queries(include_paused=False)))
        if self.rollup is not None:
            # A roll lost with the last process: the buckets late data could still refine.
            self.rollup.mark_recent(
                self.rollup.queries, self.settings.allowed_lateness_seconds + 3600
            )
        log.info(
            "aggregator %s started with %d active queries over %d metrics (scope: %s)",
            self.settings.identity,
            len(self.active),
            len(self.reads),
            self.settings.scope.describe(),
        )

    def refresh_queries(self) -> bool:
        """Restarts the streams when the active query set changed; True if it did."""
        active = self.mine(self.store.list_queries(include_paused=False))
        if [(q.id, q.text, q.active_from) for q in active] == [
            (q.id, q.text, q.active_from) for q in self.active
        ]:
            return False
        began = time.monotonic()
        self._collect_progress()
        before = self.reads
        self._apply(active)
        self.last_restart_s = time.monotonic() - began
        self.telemetry.restarts.inc()
        self.telemetry.restart_seconds.set(self.last_restart_s)
        joined, left = sorted(set(self.reads) - set(before)), sorted(set(before) - set(self.reads))
        log.info(
            "query set changed (%d active over %d metrics; joined %s, left %s): streams "
            "restarted in %.2fs",
            len(active),
            len(self.reads),
            joined or "none",
            left or "none",
            self.last_restart_s,
        )
        return True

    def failed(self) -> str | None:
        """'<stream> stopped: <error>' for a stream that stopped on its own, else None."""
        query = self.windows
        if query is not None and not query.isActive:
            return f"stream {query.name} stopped: {query.exception()}"
        return None

    def check(self) -> None:
        """Raises the failure of a stream that stopped on its own."""
        if (failure := self.failed()) is not None:
            raise RuntimeError(failure)

    def recover(self, stop: threading.Event) -> None:
        """Starts the streams again from their checkpoints, after a backoff, if one stopped
        (aggregator/recovery.py); the job keeps running."""

        def restart() -> None:
            self._collect_progress()
            self._apply(self.active)

        self.restarts.handle(self.failed(), stop, restart)

    def stop(self) -> None:
        if self.windows is not None and self.windows.isActive:
            self.windows.stop()
        try:
            self.touches.flush(force=True)
        except Exception as exc:  # storage away at shutdown: the next run sees them again
            log.warning("cannot write the last servers' times: %s", exc)
        if self.offsets is not None:
            self.offsets.close()
        if self.tags is not None:
            self.tags.close()
            self.tags = None

    def run(self, stop: threading.Event) -> None:
        """Runs until ``stop`` is set; query changes are polled every trigger interval."""
        if isinstance(self.store, RetryingStore):
            self.store.stop = stop  # shutdown interrupts a storage retry's wait
        self.start()
        self.restarts.started()
        next_status = 0.0
        try:
            while not stop.wait(self.settings.trigger_seconds):
                self.recover(stop)
                if self.restarts.broken:
                    continue
                self.settle()
                self.roll_up()
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

    def _tags_figures(self) -> dict[str, int]:
        if self.tags is None:
            return {"servers": 0, "dropped": 0}
        servers, dropped = len(self.tags.tags), self.tags.tags.dropped
        self.telemetry.tag_servers.set(servers)
        self.telemetry.tag_records_dropped.set(dropped)
        return {"servers": servers, "dropped": dropped}

    def publish_status(self) -> dict[str, object]:
        newest = self._collect_progress() or {}
        try:
            self.touches.flush()  # when due: a batch flushes them too, an idle job here
        except Exception as exc:
            log.warning("cannot write the servers' newest times: %s", exc)
        windows, dedup_keys, state_bytes = state_figures(newest)
        if self.offsets is not None:
            try:
                self.last_lag = self.offsets.lag(
                    self.processed_offsets(), [topic_for(m) for m in self.reads]
                )
            except Exception as exc:  # the broker briefly away: keep the last figures
                log.warning("cannot read Kafka end offsets: %s", exc)
        self.telemetry.lag.clear()  # a topic that left the subscription has no lag any more
        for topic, lag in self.last_lag.items():
            self.telemetry.lag.labels(topic=topic).set(lag)
        watermark = (newest.get("eventTime") or {}).get("watermark")
        payload: dict[str, object] = {
            "identity": self.settings.identity,
            "scope": self.settings.scope.to_json(),
            "reads": self.reads,
            "idle": not self.active,
            "checkpoint": str(self.settings.checkpoint),
            "active_queries": len(self.active),
            "batch_id": newest.get("batchId"),
            "batch_duration_s": (newest.get("durationMs") or {}).get("triggerExecution", 0) / 1000,
            "input_rows_per_s": newest.get("processedRowsPerSecond"),
            "state_windows": windows,
            "state_dedup_keys": dedup_keys,
            "state_memory_bytes": state_bytes,
            "late_rows_dropped": self.late_rows_total,
            # Per metric, samples ahead of their arrival (set aside) or older than the lateness
            # when they arrived (aggregator/skew.py), since the job started.
            "set_aside": self.set_aside.by_metric,
            "set_aside_total": self.set_aside.totals(),
            "lag": self.last_lag,
            "lag_total": sum(self.last_lag.values()),
            "watermark": watermark,
            "last_restart_s": self.last_restart_s,
            "stream_failures": self.restarts.failures,
            "server_writes": dict(self.server_counts),
            # The driver's tag map (aggregator/tag_map.py): servers, and records dropped past
            # its bound (those servers stay untagged).
            "tags": self._tags_figures(),
            "last_stream_error": self.restarts.last_error,
            "updated_at": self.clock(),
        }
        self.telemetry.state_rows.set(float(windows))
        self.telemetry.state_bytes.set(float(state_bytes))
        try:
            self.store.put_status(self.settings.identity, payload)
        except Exception as exc:
            log.warning("cannot publish status: %s", exc)
        return payload
