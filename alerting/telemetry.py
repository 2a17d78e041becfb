"""The evaluator's own metrics, served on /metrics (a registry per process; tests build many)."""

from __future__ import annotations

from dataclasses import dataclass

from apm.telemetry import Telemetry

__all__ = ["AlertingTelemetry"]

_CYCLE_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


@dataclass
class AlertingTelemetry(Telemetry):
    def __post_init__(self) -> None:
        c, g = self.counter, self.gauge
        self.cycles = c("apm_alerting_cycles", "evaluation cycles run")
        self.cycle_errors = c(
            "apm_alerting_cycle_errors", "evaluation cycles that failed (storage down)"
        )
        self.cycle_seconds = self.histogram(
            "apm_alerting_cycle_seconds",
            "time of one evaluation cycle over every rule",
            _CYCLE_BUCKETS,
        )
        self.windows = c("apm_alerting_windows_evaluated", "(rule, window) evaluations")
        self.lag = g(
            "apm_alerting_lag_seconds",
            "how far the oldest complete but unevaluated window is behind",
        )
        self.alerts = g("apm_alerting_alerts", "alerts by state", ["state"])
        self.enqueued = c("apm_alerting_notices_enqueued", "notices put in the outbox")
        self.suppressed = c(
            "apm_alerting_suppressed", "active alerts a silence kept from receivers"
        )
        self.sent = c("apm_alerting_notices_sent", "notices delivered", ["receiver"])
        self.failures = c(
            "apm_alerting_send_failures", "delivery attempts that failed (retried)", ["receiver"]
        )
        self.refused = c(
            "apm_alerting_send_refused",
            "notices a receiver refused for good (4xx), dropped",
            ["receiver"],
        )
        self.leader = g(
            "apm_alerting_lease_held", "1 if this evaluator holds the lease and evaluates"
        )
        self.outbox = g("apm_alerting_outbox", "notices waiting in the outbox", ["receiver"])
