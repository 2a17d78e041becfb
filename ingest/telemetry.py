"""The service's telemetry: its own Prometheus metrics (on /metrics), in a registry per app so
tests can build many apps."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["IngestTelemetry"]


class IngestTelemetry:
    def __init__(
        self, queue_depth: Callable[[], float], lingering: Callable[[], float] = lambda: 0
    ) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "apm_ingest_requests",
            "POST /v1/metrics requests by outcome and reason",
            ["outcome", "reason"],
            registry=self.registry,
        )
        self.samples = Counter(
            "apm_ingest_samples",
            "samples accepted, or rejected by reason",
            ["outcome", "reason"],
            registry=self.registry,
        )
        self.publish_seconds = Histogram(
            "apm_ingest_publish_seconds",
            "time from handing a batch to Kafka until every record is acknowledged",
            registry=self.registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        self.queue = Gauge(
            "apm_ingest_producer_queue_depth",
            "records handed to the producer and not yet acknowledged",
            registry=self.registry,
        )
        self.queue.set_function(queue_depth)
        self.lingering = Gauge(
            "apm_ingest_linger_requests",
            "requests waiting in the open linger window to share records",
            registry=self.registry,
        )
        self.lingering.set_function(lingering)

    def accepted(self, samples: int) -> None:
        self.requests.labels("accepted", "ok").inc()
        self.samples.labels("accepted", "ok").inc(samples)

    def rejected(self, reason: str, samples: int) -> None:
        self.requests.labels("rejected", reason).inc()
        if samples:
            self.samples.labels("rejected", reason).inc(samples)
