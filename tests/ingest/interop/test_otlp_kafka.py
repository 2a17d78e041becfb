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
