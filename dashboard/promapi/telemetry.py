"""The read API's counters, in the dashboard's own registry (served on its /metrics)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

__all__ = ["PromApiTelemetry"]


class PromApiTelemetry:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "apm_dashboard_prom_requests",
            "Prometheus read API requests by endpoint and HTTP status",
            ["endpoint", "code"],
            registry=registry,
        )
        self.points = Counter(
            "apm_dashboard_prom_points",
            "points (one stored window at one step) answered by the Prometheus read API",
            registry=registry,
        )
