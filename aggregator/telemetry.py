"""The aggregator's telemetry: its own Prometheus metrics, in a registry of its own (one per
job instance, so tests can run several); ``serve`` exposes it on /metrics."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import Counter, Gauge, Histogram

from apm.telemetry import Telemetry

__all__ = ["AggregatorTelemetry"]

_BATCH_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 3, 5, 8, 13, 21, 34, 60)


@dataclass
class AggregatorTelemetry(Telemetry):
    def __post_init__(self) -> None:
        r = self.registry
        self.lag = Gauge(
            "apm_aggregator_consumer_lag",
            "Kafka end offset minus processed offset, in records",
            ["topic"],
            registry=r,
        )
        self.batch_seconds = Histogram(
            "apm_aggregator_batch_duration_seconds",
            "micro-batch duration",
            buckets=_BATCH_BUCKETS,
            registry=r,
        )
        # Where a batch's foreachBatch time goes: "spark" is the plan up to the collected
        # window summaries (read, decode, dedup, aggregation), "evaluate" the functions and
        # percentiles on the driver, "upsert" the writes to storage.
        self.batch_phase_seconds = Histogram(
            "apm_aggregator_batch_phase_seconds",
            "time per windows batch in each phase of its foreachBatch",
            ["phase"],
            registry=r,
        )
        self.input_rows = Counter(
            "apm_aggregator_input_rows",
            "samples read from Kafka (before the query filter)",
            registry=r,
        )
        self.tag_servers = Gauge(
            "apm_aggregator_tag_servers",
            "servers in the driver's host-tag map (aggregator/tag_map.py)",
            registry=r,
        )
        self.tag_records_dropped = Gauge(
            "apm_aggregator_tag_records_dropped",
            "tags records of servers past the tag map's bound (they stay untagged), since start",
            registry=r,
        )
        self.late_rows = Counter(
            "apm_aggregator_late_rows_dropped",
            "samples dropped as later than the watermark (partials.window_partials)",
            registry=r,
        )
        self.overflowed = Counter(
            "apm_aggregator_overflowed_values",
            "function values left out of a result row because they overflowed a double",
            ["function"],
            registry=r,
        )
        self.refused = Counter(
            "apm_aggregator_results_refused",
            "result rows storage refused for a deterministic reason, set aside (logged)",
            registry=r,
        )
        self.storage_retries = Counter(
            "apm_aggregator_storage_retries",
            "storage calls retried after a transient failure",
            ["call"],
            registry=r,
        )
        self.stream_failures = Counter(
            "apm_aggregator_stream_failures",
            "streams that stopped on an error and were started again from their checkpoint",
            ["stream"],
            registry=r,
        )
        self.set_aside = Counter(
            "apm_aggregator_samples_set_aside",
            "samples not aggregated: reason=future (ahead of their arrival by more than the "
            "tolerance) or backlog (older than their arrival by more than the watermark delay)",
            ["metric", "reason"],
            registry=r,
        )
        self.results = Counter("apm_aggregator_results_written", "window rows upserted", registry=r)
        self.active = Gauge("apm_aggregator_active_queries", "queries being evaluated", registry=r)
        self.reads = Gauge(
            "apm_aggregator_subscribed_metrics",
            "metric topics the job reads (those of its active queries)",
            registry=r,
        )
        self.state_rows = Gauge(
            "apm_aggregator_state_windows",
            "open (query, window) groups in the state store",
            registry=r,
        )
        self.state_bytes = Gauge(
            "apm_aggregator_state_memory_bytes", "state store memory", registry=r
        )
        self.restarts = Counter(
            "apm_aggregator_query_set_restarts",
            "stream restarts for a changed query set",
            registry=r,
        )
        self.restart_seconds = Gauge(
            "apm_aggregator_last_restart_seconds",
            "how long the last restart for a changed query set took",
            registry=r,
        )
        # The rollup tiers (aggregator/rollup.py, docs/storage.md "Rollup tiers").
        self.rollup_buckets = Counter(
            "apm_aggregator_rollup_buckets",
            "tier buckets rolled up from their windows' partials",
            ["tier"],
            registry=r,
        )
        self.rollup_pending = Gauge(
            "apm_aggregator_rollup_pending", "closed tier buckets waiting for a roll", registry=r
        )
        self.rollup_lag = Gauge(
            "apm_aggregator_rollup_lag_seconds",
            "how long the oldest closed tier bucket still waiting has been closed (0: none)",
            registry=r,
        )
        self.watermark = Gauge(
            "apm_aggregator_watermark_seconds", "event-time watermark (epoch seconds)", registry=r
        )
