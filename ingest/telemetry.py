"""The service's telemetry: its own Prometheus metrics (on /metrics), in a registry per app so
tests can build many apps."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from ingest.validate import Rejection

__all__ = ["IngestTelemetry"]


class IngestTelemetry:
    def __init__(
        self,
        queue_depth: Callable[[], float],
        lingering: Callable[[], float] = lambda: 0,
        inflight: Callable[[], float] = lambda: 0,
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
        self.snapshots = Counter(
            "apm_ingest_snapshots",
            "snapshots accepted, or left out of an accepted batch by reason (per-snapshot "
            "verdict: ts_ahead is clock skew, ts_old a backlog past the retention)",
            ["outcome", "reason"],
            registry=self.registry,
        )
        self.inflight = Gauge(
            "apm_ingest_inflight_requests",
            "POST requests at work (admitted, not yet answered or still publishing)",
            registry=self.registry,
        )
        self.inflight.set_function(inflight)
        self._tag_records = Counter(
            "apm_ingest_tag_records",
            "server-tags records sent to apm.server-tags (a server's tags changed or were not "
            "known), or failed (sent again with the server's next snapshot), or agent_kept "
            "(a protocol's tags of a server whose agent's tags win: not sent)",
            ["outcome"],
            registry=self.registry,
        )
        self.tag_servers = Gauge(
            "apm_ingest_tag_servers",
            "servers whose last published tags the ingest keeps (tags_seen_max_bytes)",
            registry=self.registry,
        )

    def tag_records(self, outcome: str, records: int) -> None:
        self._tag_records.labels(outcome).inc(records)

    def accepted(self, samples: int, snapshots: int, rejected: Iterable[Rejection] = ()) -> None:
        """A 202: all of the batch, or (``rejected`` not empty) the good snapshots of it."""
        partial = False
        for snap in rejected:
            partial = True
            self.snapshots.labels("rejected", snap.reason).inc()
            if snap.samples:
                self.samples.labels("rejected", snap.reason).inc(snap.samples)
        self.requests.labels("accepted", "partial" if partial else "ok").inc()
        self.samples.labels("accepted", "ok").inc(samples)
        self.snapshots.labels("accepted", "ok").inc(snapshots)

    def rejected(self, reason: str, samples: int) -> None:
        self.requests.labels("rejected", reason).inc()
        if samples:
            self.samples.labels("rejected", reason).inc(samples)
