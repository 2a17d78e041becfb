"""``APM_ALERTING_*``: the evaluator's timing and its receivers."""

from __future__ import annotations

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings

from alerting.receiver_url import webhook_url_error
from apm.settings import env_config

__all__ = ["OWN_PORTS", "AlertingSettings"]

# The platform's own default ports (ingest, dashboard, the services' /metrics): a receiver on
# loopback at one of them would post alerts into the platform itself.
OWN_PORTS = frozenset({8080, 8050, 9101, 9102, 9103, 9104, 9105, 9106, 9107})


class AlertingSettings(BaseSettings):
    model_config = env_config("APM_ALERTING_")

    # How often the evaluator looks for completed windows (wall clock).
    interval_s: float = Field(default=5.0, gt=0, le=3600)
    # A window counts as complete this long after its end: the aggregator's freshness bound.
    settle_s: float = Field(default=5.0, ge=0, le=3600)
    # Windows younger than this past their end may still be refined by late data, so they are
    # refolded each cycle; match the aggregator's allowed_lateness_seconds.
    lateness_s: float = Field(default=600.0, ge=0, le=86_400)
    # A new rule is evaluated from at most this many windows before now.
    backfill_windows: int = Field(default=60, ge=1, le=100_000)
    # Windows evaluated per rule per cycle when catching up (the rest follow next cycle).
    max_windows_per_cycle: int = Field(default=1000, ge=1, le=100_000)
    renotify_s: float = Field(default=600.0, gt=0)
    # An alert row unchanged in substance (state, severity, since, fired_at, notified) is
    # rewritten at least this often; a restart refolds at most this much more (0: every cycle;
    # alerting/persist.py).
    state_refresh_s: float = Field(default=60.0, ge=0, le=3600)
    # A rule on a BY server query reads each open window again (late data) at least this often,
    # not every cycle; new windows every cycle (0: every window every cycle;
    # alerting/server_reads.py).
    server_recheck_s: float = Field(default=60.0, ge=0, le=3600)
    # Receivers: each one set gets every notice.
    alertmanager_url: str = ""
    webhook_url: str = ""
    webhook_secret: str = ""
    smtp_host: str = ""
    smtp_port: int = Field(default=25, ge=1, le=65535)
    smtp_from: str = "apm-alerts@localhost"
    smtp_to: str = ""  # comma-separated
    send_timeout_s: float = Field(default=5.0, gt=0, le=120)
    retry_deadline_s: float = Field(default=30.0, gt=0)
    # The meta-alert: the aggregator's status older than this (seconds) fires.
    freshness_bound_s: float = Field(default=60.0, gt=0)
    # Failover: evaluators sharing a keyspace take turns through a lease in Cassandra; a holder
    # that stops renewing (kill -9) loses it this long after its last cycle.
    lease_ttl_s: int = Field(default=15, ge=2, le=3600)
    metrics_host: str = "127.0.0.1"
    metrics_port: int = Field(default=9107, ge=0, le=65535)

    @field_validator("alertmanager_url", "webhook_url")
    @classmethod
    def _receiver_url(cls, url: str) -> str:
        # urllib would open file:// (and others) even with a POST body: refuse to start.
        if url:
            error = webhook_url_error(url, OWN_PORTS)
            if error:
                raise ValueError(f"receiver URL {error}")
        return url
