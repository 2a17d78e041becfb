"""The evaluator's own metrics, served on /metrics (a registry per process; tests build many)."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["AlertingTelemetry"]


@dataclass
class AlertingTelemetry:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.cycles = Counter("apm_alerting_cycles", "evaluation cycles run", registry=r)
        self.cycle_errors = Counter(
            "apm_alerting_cycle_errors", "evaluation cycles that failed (storage down)", registry=r
        )
        self.cycle_seconds = Histogram(
            "apm_alerting_cycle_seconds",
            "time of one evaluation cycle over every rule",
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
            registry=r,
        )
        self.windows = Counter(
            "apm_alerting_windows_evaluated", "(rule, window) evaluations", registry=r
        )
        self.lag = Gauge(
            "apm_alerting_lag_seconds",
            "how far the oldest complete but unevaluated window is behind",
            registry=r,
        )
        self.alerts = Gauge("apm_alerting_alerts", "alerts by state", ["state"], registry=r)
        self.enqueued = Counter(
            "apm_alerting_notices_enqueued", "notices put in the outbox", registry=r
        )
        self.suppressed = Counter(
            "apm_alerting_suppressed", "active alerts a silence kept from receivers", registry=r
        )
        self.sent = Counter(
            "apm_alerting_notices_sent", "notices delivered", ["receiver"], registry=r
        )
        self.failures = Counter(
            "apm_alerting_send_failures",
            "delivery attempts that failed (retried)",
            ["receiver"],
            registry=r,
        )
        self.refused = Counter(
            "apm_alerting_send_refused",
            "notices a receiver refused for good (4xx), dropped",
            ["receiver"],
            registry=r,
        )
        self.outbox = Gauge(
            "apm_alerting_outbox", "notices waiting in the outbox", ["receiver"], registry=r
        )
