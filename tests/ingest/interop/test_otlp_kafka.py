"""OTLP through a real ingest process on the real Kafka, from the real OpenTelemetry SDK and
its OTLP/HTTP exporter: every exported point is in Kafka as the mapping says."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from apm.model import topic_for
from tests.support.kafka import read_samples

pytestmark = pytest.mark.integration


def test_an_sdk_export_is_in_kafka(kafka_bootstrap, start_ingest_process, unique_name, own_topics):
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricExportResult, PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource

    ingest = start_ingest_process(kafka_bootstrap)
    name = unique_name("otlp")
    gauge_name, counter_name = f"{name}.temp", f"{name}.requests"
    topics = [topic_for(f"{gauge_name}.room_a"), topic_for(counter_name)]
    own_topics.extend(topics)
    exported: list[Any] = []

    class Recording(OTLPMetricExporter):
        def export(self, metrics_data, timeout_millis: float = 10_000, **kwargs):  # type: ignore[override]
            result = super().export(metrics_data, timeout_millis, **kwargs)
            assert result is MetricExportResult.SUCCESS
            exported.append(metrics_data)
            return result

    exporter = Recording(endpoint=f"{ingest.url}/otlp/v1/metrics", headers=ingest.headers)
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000)
    provider = MeterProvider(
        resource=Resource.create({"host.name": "otel-1"}), metric_readers=[reader]
    )
    meter = provider.get_meter("apm-test")
    gauge, counter = meter.create_gauge(gauge_name), meter.create_counter(counter_name)
    for i in range(3):
        gauge.set(20.0 + i, {"room": "a"})
        counter.add(10 * (i + 1))
        provider.force_flush()
    provider.shutdown()

    points: dict[str, list[Any]] = {}
    for data in exported:
        for metric in data.resource_metrics[0].scope_metrics[0].metrics:
            points.setdefault(metric.name, []).extend(metric.data.data_points)
    want = [
        (topics[0], "otel-1", p.time_unix_nano / 1e9, float(p.value)) for p in points[gauge_name]
    ]
    want += [
        (
            topics[1],
            "otel-1",
            b.time_unix_nano / 1e9,
            (b.value - a.value) / ((b.time_unix_nano - a.time_unix_nano) / 1e9),
        )
        for a, b in itertools.pairwise(points[counter_name])
    ]
    assert sorted(read_samples(kafka_bootstrap, topics)) == sorted(want)


def test_two_sdks_on_one_host_publish_their_own_rates(
    kafka_bootstrap, start_ingest_process, unique_name, own_topics
):
    """Two real SDKs (services checkout and search) on host otel-2 export one counter at 10
    and 100 per export, interleaved (issue 28, finding 1): each service's rates are in Kafka
    under its own name, none lost, none mixed."""
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource

    ingest = start_ingest_process(kafka_bootstrap)
    name = unique_name("otlp2") + ".requests"
    services = {"checkout": 10, "search": 100}
    topics = {s: topic_for(f"{name}.service_name_{s}") for s in services}
    own_topics.extend(topics.values())
    providers = {}
    for service in services:
        exporter = OTLPMetricExporter(
            endpoint=f"{ingest.url}/otlp/v1/metrics", headers=ingest.headers
        )
        reader = PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000)
        resource = Resource.create({"host.name": "otel-2", "service.name": service})
        providers[service] = MeterProvider(resource=resource, metric_readers=[reader])
    counters = {s: p.get_meter("apm-test").create_counter(name) for s, p in providers.items()}
    for _ in range(4):
        for service, step in services.items():
            counters[service].add(step)
            providers[service].force_flush()
    for provider in providers.values():
        provider.shutdown()
    checkout, search = (read_samples(kafka_bootstrap, [topics[s]]) for s in services)
    for rows in (checkout, search):
        # 3 rates from the adds, and one of 0 from the shutdown's export of the same value
        assert len(rows) == 4 and {r[1] for r in rows} == {"otel-2"}, rows
        assert all(r[3] > 0 for r in rows[:3]) and rows[3][3] == 0, rows
    # over the same exports search counted 10x what checkout did: each its own rates
    ratio = sum(r[3] for r in search) / sum(r[3] for r in checkout)
    assert 3 < ratio < 30, (checkout, search)
