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
    under its own name, none lost, none mixed.

    Checked without the wall clock (issue 35): each rate times the interval between the
    export times the SDK sent gives back that service's own delta, 10 or 100 per add and 0
    for the shutdown's export, where a mixed-up previous point would give 90 or -90."""
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import (
        MetricExportResult,
        PeriodicExportingMetricReader,
    )
    from opentelemetry.sdk.resources import Resource

    class Recording(OTLPMetricExporter):
        def __init__(self, kept: list[Any]) -> None:
            super().__init__(endpoint=f"{ingest.url}/otlp/v1/metrics", headers=ingest.headers)
            self.kept = kept

        def export(self, metrics_data, timeout_millis: float = 10_000, **kwargs):  # type: ignore[override]
            result = super().export(metrics_data, timeout_millis, **kwargs)
            assert result is MetricExportResult.SUCCESS
            self.kept.append(metrics_data)
            return result

    ingest = start_ingest_process(kafka_bootstrap)
    name = unique_name("otlp2") + ".requests"
    services = {"checkout": 10, "search": 100}
    topics = {s: topic_for(f"{name}.service_name_{s}") for s in services}
    own_topics.extend(topics.values())
    exported: dict[str, list[Any]] = {s: [] for s in services}
    providers = {}
    for service in services:
        reader = PeriodicExportingMetricReader(
            Recording(exported[service]), export_interval_millis=3_600_000
        )
        resource = Resource.create({"host.name": "otel-2", "service.name": service})
        providers[service] = MeterProvider(resource=resource, metric_readers=[reader])
    counters = {s: p.get_meter("apm-test").create_counter(name) for s, p in providers.items()}
    for _ in range(4):
        for service, step in services.items():
            counters[service].add(step)
            providers[service].force_flush()
    for provider in providers.values():
        provider.shutdown()
    for service, step in services.items():
        points = [
            point
            for data in exported[service]
            for resource_metrics in data.resource_metrics
            for scope in resource_metrics.scope_metrics
            for metric in scope.metrics
            for point in metric.data.data_points
        ]
        # what the SDK sent: its count after each add, then the same count at shutdown
        assert [p.value for p in points] == [step, 2 * step, 3 * step, 4 * step, 4 * step]
        rows = sorted(read_samples(kafka_bootstrap, [topics[service]]), key=lambda r: r[2])
        # the first point gives no rate; every later one a rate at its own export time
        assert [(r[1], r[2]) for r in rows] == [
            ("otel-2", p.time_unix_nano / 1e9) for p in points[1:]
        ]
        deltas = [
            row[3] * (b.time_unix_nano - a.time_unix_nano) / 1e9
            for row, (a, b) in zip(rows, itertools.pairwise(points), strict=True)
        ]
        assert deltas == pytest.approx([step, step, step, 0], rel=1e-9), (service, rows)
