"""The dashboard's telemetry: its own Prometheus metrics (on /metrics), in a registry per app
(tests build many apps)."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Histogram

__all__ = ["DashboardTelemetry"]


@dataclass
class DashboardTelemetry:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.requests = Counter(
            "apm_dashboard_requests",
            "HTTP requests by route kind and status",
            ["kind", "status"],
            registry=r,
        )
        self.logins = Counter(
            "apm_dashboard_logins", "login attempts by outcome", ["outcome"], registry=r
        )
        self.refused = Counter(
            "apm_dashboard_refused",
            "requests refused by auth, CSRF, role or a callback body past its bound",
            ["reason"],
            registry=r,
        )
        self.chart_seconds = Histogram(
            "apm_dashboard_chart_seconds",
            "time to read and shape one chart's data",
            buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=r,
        )
        self.windows_read = Counter("apm_dashboard_windows_read", "result windows read", registry=r)
        self.points_served = Counter(
            "apm_dashboard_points_served", "points sent to charts after downsampling", registry=r
        )
        self.storage_errors = Counter(
            "apm_dashboard_storage_errors", "storage calls that failed", ["op"], registry=r
        )
        self.audit_failures = Counter(
            "apm_dashboard_audit_failures",
            "changes made but not recorded in the audit log (its insert failed), by kind",
            ["kind"],
            registry=r,
        )
