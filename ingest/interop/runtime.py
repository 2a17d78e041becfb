"""What the OTLP and remote_write routes share in one app: their settings, label policies,
the cumulative-sum state (OTLP rates) and their Prometheus metrics, on the ingest's registry."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge

from apm.labels import LabelPolicy, Namer
from ingest.errors import ApiError
from ingest.interop.points import Tally
from ingest.interop.rates import RateState
from ingest.interop.settings import InteropSettings

__all__ = ["Interop", "InteropTelemetry"]


class InteropTelemetry:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "apm_ingest_interop_requests",
            "OTLP and remote_write requests by protocol, HTTP status and reason",
            ["protocol", "status", "reason"],
            registry=registry,
        )
        self.points = Counter(
            "apm_ingest_interop_points",
            "OTLP data points and remote_write samples: accepted, dropped (not a sample by the "
            "protocol's rules: NaN, stale markers, the first point of a cumulative series) or "
            "rejected, by reason",
            ["protocol", "outcome", "reason"],
            registry=registry,
        )
        self.labels_dropped = Counter(
            "apm_ingest_interop_labels_dropped",
            "labels and attributes left out of metric names as unbounded (ids, uuids, numbers)",
            ["protocol"],
            registry=registry,
        )
        self.rate_series = Gauge(
            "apm_ingest_otlp_rate_series",
            "cumulative OTLP series whose previous point is kept for rates",
            registry=registry,
        )
        self.rate_evicted = Counter(
            "apm_ingest_otlp_rate_series_evicted",
            "cumulative OTLP series forgotten (least recently seen) past otlp_rate_series_max",
            registry=registry,
        )

    def answered(self, protocol: str, status: int, tally: Tally, error: ApiError | None) -> None:
        """Counts one answered request and the fate of its points. After a refusal nothing
        of the request is in (a 5xx or 429 is retried by the sender), so the points the
        mapping had accepted count as rejected with the refusal's reason."""
        reason = error.reason if error is not None else "ok"
        self.requests.labels(protocol, str(status), reason).inc()
        for (outcome, why), n in tally.points.items():
            if outcome == "accepted" and error is not None and status != 400:
                outcome, why = "rejected", error.reason
            self.points.labels(protocol, outcome, why).inc(n)
        if tally.labels_dropped:
            self.labels_dropped.labels(protocol).inc(tally.labels_dropped)


@dataclass
class Interop:
    settings: InteropSettings
    telemetry: InteropTelemetry
    remote_write_names: Namer = field(init=False)
    otlp_names: Namer = field(init=False)
    rates: RateState = field(init=False)

    def __post_init__(self) -> None:
        s = self.settings
        self.remote_write_names = Namer(
            LabelPolicy.of(
                s.remote_write_name_labels,
                {"__name__", s.remote_write_server_label, *s.remote_write_ignore_labels},
                s.drop_unbounded_labels,
                s.labels_keep,
            )
        )
        self.otlp_names = Namer(
            LabelPolicy.of(
                s.otlp_name_attributes,
                s.otlp_ignore_attributes,
                s.drop_unbounded_labels,
                s.labels_keep,
            )
        )
        self.rates = RateState(s.otlp_rate_series_max, self.telemetry.rate_evicted.inc)
        self.telemetry.rate_series.set_function(self.rates.size)
