"""The real OpenTelemetry SDK's OTLP/HTTP exporter to the ingest over HTTPS (issue 38), trusting
the ingest by a private CA (``certificate_file``, OTEL_EXPORTER_OTLP_CERTIFICATE's argument):
its points reach the real Kafka, and its resource's service.name and deployment.environment
become its server's tags (issue 37). With a CA that did not sign the ingest's certificate
the export fails and nothing arrives."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from apm.model import topic_for
from apm.tags import read_server_tags
from tests.support.certs import make_ca
from tests.support.https_ingest import https_ingests
from tests.support.kafka import read_samples

pytestmark = pytest.mark.integration


def _export(url: str, key: str, ca: Path, host: str, metric: str, value: float) -> bool:
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricExportResult, PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource

    results: list[MetricExportResult] = []

    class Recording(OTLPMetricExporter):
        def export(self, metrics_data, timeout_millis: float = 10_000, **kwargs):  # type: ignore[override]
            results.append(super().export(metrics_data, timeout_millis, **kwargs))
            return results[-1]

    exporter = Recording(
        endpoint=url.replace("/v1/metrics", "/otlp/v1/metrics"),
        headers={"Authorization": f"Bearer {key}"},
        certificate_file=str(ca),
        timeout=5,
    )
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000)
    resource = Resource.create(
        {"host.name": host, "service.name": "checkout", "deployment.environment": "prod"}
    )
    provider = MeterProvider(resource=resource, metric_readers=[reader])
    provider.get_meter("apm-test").create_gauge(metric).set(value)
    provider.force_flush()
    provider.shutdown()
    return bool(results) and all(r is MetricExportResult.SUCCESS for r in results)


def test_an_sdk_exports_over_https_trusting_a_private_ca(
    tmp_path: Path, kafka_bootstrap, unique_name, own_topics, monkeypatch
):
    # requests lets REQUESTS_CA_BUNDLE (or CURL_CA_BUNDLE) override a session's verify
    # (psf/requests#3829), so the Python exporter ignores certificate_file where they are set,
    # as on this machine; docs/interop.md says so.
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    ca, other = make_ca(tmp_path / "ca"), make_ca(tmp_path / "other", name="other")
    host = f"otel-tls-{uuid.uuid4().hex[:8]}"
    metric = unique_name("otlptls") + ".depth"
    topic = topic_for(f"{metric}.service_name_checkout")  # the service is a name part too
    own_topics.append(topic)
    with https_ingests(tmp_path, kafka_bootstrap) as start:
        url, key = start(ca)
        assert not _export(url, key, other.cert, host, metric, 1.0)  # the wrong CA: refused
        assert _export(url, key, ca.cert, host, metric, 2.0)
    got = read_samples(kafka_bootstrap, [topic], server=host)
    # The flush's and the shutdown's exports of the gauge; none of the refused one's 1.0.
    assert got and {value for *_, value in got} == {2.0}
    tags = read_server_tags(kafka_bootstrap, {host})[host][0]
    assert tags == {"service": "checkout", "env": "prod"}
