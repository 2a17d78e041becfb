"""Debian's Prometheus remote_writes to the ingest over HTTPS (issue 38: TLS on every hop that
leaves a host), trusting the ingest by a private CA in ``tls_config.ca_file`` and sending an
API key as its bearer token: the samples it scrapes reach the real Kafka, and the series'
``job`` label becomes its server's tag. Without the CA Prometheus would refuse the ingest's
certificate and nothing would arrive."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from apm.model import topic_for
from apm.tags import read_server_tags
from launch.probe import free_port
from tests.support import prometheus
from tests.support.certs import make_ca
from tests.support.debs import require
from tests.support.https_ingest import https_ingests
from tests.support.kafka import read_samples

pytestmark = pytest.mark.integration


def test_prometheus_remote_writes_over_https_with_a_private_ca(tmp_path: Path, kafka_bootstrap):
    require("prometheus", "prometheus")
    ca = make_ca(tmp_path / "ca")
    server = f"prom-tls-{uuid.uuid4().hex[:8]}"
    with https_ingests(tmp_path, kafka_bootstrap) as start:
        url, key = start(ca)
        token = tmp_path / "ingest.key"
        token.write_text(key + "\n")
        port = free_port()
        doc = prometheus.config(
            [prometheus.ScrapeTarget("self", f"127.0.0.1:{port}", {"instance": server})],
            prometheus.RemoteWrite(
                url.replace("/v1/metrics", "/api/v1/write"),
                token,
                keep=("up",),
                keep_labels={"instance": server},
                ca_file=ca.cert,
            ),
        )
        peer = prometheus.Prometheus(port, prometheus.write_config(tmp_path / "prom", doc))
        proc = peer.start(tmp_path / "prom")
        try:
            deadline, got = time.monotonic() + 60, []
            while time.monotonic() < deadline and len(got) < 3:
                time.sleep(1)
                got = read_samples(kafka_bootstrap, [topic_for("up")], server=server)
        finally:
            proc.stop(peer.stop_timeout_s)
    assert len(got) >= 3, f"{len(got)} samples of {server} reached Kafka in 60 s"
    assert {value for *_, value in got} == {1.0}
    assert read_server_tags(kafka_bootstrap, {server})[server][0] == {"job": "self"}
