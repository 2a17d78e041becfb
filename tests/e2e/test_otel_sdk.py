"""End to end with a real OpenTelemetry SDK application: opentelemetry-sdk and its OTLP/HTTP
exporter (protobuf) export a gauge, a counter and a histogram to the ingest's
/otlp/v1/metrics; the aggregator evaluates stored queries over them into Cassandra; the
dashboard's results equal, window by window, what numpy computes from the very points the
exporter sent, mapped as docs/interop.md says (gauge values; counter rates between
consecutive cumulative points; the histogram's max and count per second)."""

from __future__ import annotations

import itertools
import math
import time
import uuid
from collections import defaultdict
from typing import Any

import pytest

from tests.e2e.test_pipeline import (  # the module-scoped platform of the e2e tier
    Platform,
    _wait_until_read,
    _windows,
    platform,  # noqa: F401  (a fixture)
)
from tests.support.http import http_json

pytestmark = pytest.mark.e2e

WINDOW = 10


def _expected(exported: list[Any], prefix: str) -> dict[str, list[tuple[float, float]]]:
    """(ts, value) per platform metric, from the SDK's own MetricsData, by the OTLP mapping."""
    points: dict[str, list[Any]] = defaultdict(list)
    for data in exported:
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    points[metric.name].extend(metric.data.data_points)
    out: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for p in points[f"{prefix}otel.gauge"]:
        out[f"{prefix}otel.gauge"].append((p.time_unix_nano / 1e9, float(p.value)))
    rows = points[f"{prefix}otel.requests"]
    for a, b in itertools.pairwise(rows):
        span = (b.time_unix_nano - a.time_unix_nano) / 1e9
        out[f"{prefix}otel.requests"].append((b.time_unix_nano / 1e9, (b.value - a.value) / span))
    rows = points[f"{prefix}otel.latency"]
    for p in rows:
        out[f"{prefix}otel.latency.max"].append((p.time_unix_nano / 1e9, float(p.max)))
    for a, b in itertools.pairwise(rows):
        span = (b.time_unix_nano - a.time_unix_nano) / 1e9
        out[f"{prefix}otel.latency.count"].append(
            (b.time_unix_nano / 1e9, (b.count - a.count) / span)
        )
    return out


def test_an_otel_sdk_app_gets_exact_results(platform: Platform):  # noqa: F811
    import numpy as np
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricExportResult, PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource

    prefix = platform.metric_prefix
    server = f"otel-{uuid.uuid4().hex[:6]}"
    metrics = [f"{prefix}otel.gauge", f"{prefix}otel.requests", f"{prefix}otel.latency.max"]
    metrics.append(f"{prefix}otel.latency.count")
    queries = {}
    for metric in metrics:
        text = f"FROM {server} SELECT {metric} WINDOW {WINDOW}s COMPUTE min, max, count, sum"
        created = http_json(
            f"{platform.dashboard_url}/api/queries", platform.dashboard_token, {"text": text}
        )
        queries[metric] = created["id"]
    for metric in metrics:
        _wait_until_read(platform, metric)

    exported: list[Any] = []
    results: list[MetricExportResult] = []

    class Recording(OTLPMetricExporter):
        def export(self, metrics_data, timeout_millis: float = 10_000, **kwargs):  # type: ignore[override]
            result = super().export(metrics_data, timeout_millis, **kwargs)
            results.append(result)
            if result is MetricExportResult.SUCCESS:
                exported.append(metrics_data)
            return result

    exporter = Recording(
        endpoint=f"{platform.ingest_url}/otlp/v1/metrics",
        headers={"Authorization": f"Bearer {platform.api_key}"},
    )
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000)
    provider = MeterProvider(
        resource=Resource.create({"host.name": server}), metric_readers=[reader]
    )
    meter = provider.get_meter("apm-e2e")
    gauge = meter.create_gauge(f"{prefix}otel.gauge")
    counter = meter.create_counter(f"{prefix}otel.requests")
    histogram = meter.create_histogram(f"{prefix}otel.latency")
    rng = np.random.default_rng(5)
    begun = time.time()
    for _ in range(25):  # one export a second, as an SDK's periodic reader would
        gauge.set(float(rng.normal(50, 10)))
        counter.add(int(rng.integers(1, 100)))
        for value in rng.exponential(0.2, int(rng.integers(1, 20))):
            histogram.record(float(value))
        provider.force_flush()
        time.sleep(1)
    provider.shutdown()
    assert results and all(r is MetricExportResult.SUCCESS for r in results), results

    expected = _expected(exported, prefix)
    assert set(expected) == set(metrics) and all(len(rows) >= 20 for rows in expected.values())
    for metric, rows in expected.items():
        by_window: dict[float, list[float]] = defaultdict(list)
        for ts, value in rows:
            by_window[math.floor(ts / WINDOW) * WINDOW].append(value)
        deadline = time.monotonic() + 240
        while True:
            got = _windows(platform, queries[metric], begun - 60, time.time() + 60)
            if {ws: w["samples"] for ws, w in got.items()} == {
                ws: len(v) for ws, v in by_window.items()
            }:
                break
            assert time.monotonic() < deadline, (
                f"{metric}: windows {got} never became {dict(by_window)}"
            )
            time.sleep(2)
        for ws, values in by_window.items():
            have = got[ws]["values"]
            assert (have["min"], have["max"], have["count"]) == (
                min(values),
                max(values),
                len(values),
            ), metric
            assert have["sum"] == pytest.approx(float(np.sum(values)), rel=1e-12), metric
