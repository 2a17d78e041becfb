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
            "labels and attributes left out of metric names as unbounded (ids, uuids, numbers), "
            "or of a server's tags (a value the tag rule refuses, or sources that disagree)",
            ["protocol"],
            registry=registry,
        )
        self.rate_series = Gauge(
            "apm_ingest_otlp_rate_series",
            "cumulative OTLP series whose previous point is kept for rates",
            registry=registry,
        )
        self.cache_bytes = Gauge(
            "apm_ingest_cache_bytes",
            "bytes held by each per-process cache (estimated: text plus a fixed overhead per "
            "entry), against its budget (otlp_rate_state_max_bytes, names_cache_max_bytes)",
            ["cache"],
            registry=registry,
        )
        self.cache_evictions = Counter(
            "apm_ingest_cache_evictions",
            "entries dropped from each per-process cache to stay within its budget",
            ["cache"],
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
        s, t = self.settings, self.telemetry
        self.remote_write_names = Namer(
            LabelPolicy.of(
                s.remote_write_name_labels,
                {"__name__", s.remote_write_server_label, *s.remote_write_ignore_labels},
                s.drop_unbounded_labels,
                s.labels_keep,
            ),
            max_bytes=s.names_cache_max_bytes,
            on_evict=t.cache_evictions.labels("remote_write_names").inc,
        )
        self.otlp_names = Namer(
            LabelPolicy.of(
                s.otlp_name_attributes,
                s.otlp_ignore_attributes,
                s.drop_unbounded_labels,
                s.labels_keep,
            ),
            max_bytes=s.names_cache_max_bytes,
            on_evict=t.cache_evictions.labels("otlp_names").inc,
        )
        evictions = t.cache_evictions.labels("otlp_rates")

        def evicted() -> None:
            t.rate_evicted.inc()
            evictions.inc()

        self.rates = RateState(
            s.otlp_rate_series_max,
            evicted,
            max_bytes=s.otlp_rate_state_max_bytes,
            max_per_metric=s.otlp_series_per_metric_max,
        )
        t.rate_series.set_function(self.rates.size)
        t.cache_bytes.labels("otlp_rates").set_function(lambda: self.rates.bytes)
        t.cache_bytes.labels("otlp_names").set_function(lambda: self.otlp_names.bytes)
        t.cache_bytes.labels("remote_write_names").set_function(
            lambda: self.remote_write_names.bytes
        )
