"""The ingest's HTTPS: uvicorn serving through ingest.cli's context hook, over real sockets."""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from ingest.cli import tls_context_factory
from ingest.settings import IngestSettings
from tests.support.certs import Ca, make_ca
from tests.support.http import uvicorn_thread

pytestmark = pytest.mark.unit


async def _hello(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def https(tmp_path: Path) -> Iterator[tuple[int, Ca]]:
    ca = make_ca(tmp_path / "ca")
    cert, key = ca.issue("server")
    settings = IngestSettings(tls_cert=cert, tls_key=key)
    factory = tls_context_factory(settings)
    with uvicorn_thread(_hello, lifespan="off", ssl_context_factory=factory) as port:
        yield port, ca


def test_the_service_answers_https_to_a_client_trusting_the_ca(https: tuple[int, Ca]) -> None:
    port, ca = https
    ctx = ssl.create_default_context(cafile=str(ca.cert))
    with urllib.request.urlopen(f"https://localhost:{port}/", context=ctx, timeout=10) as r:
        assert r.read() == b"ok"


def test_a_client_not_trusting_the_ca_is_refused(https: tuple[int, Ca]) -> None:
    port, _ = https
    with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
        urllib.request.urlopen(f"https://localhost:{port}/", timeout=10)


def test_plain_http_is_the_default() -> None:
    assert tls_context_factory(IngestSettings()) is None


def test_a_cert_without_its_key_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(
        ValidationError, match="APM_INGEST_TLS_CERT and APM_INGEST_TLS_KEY go together"
    ):
        IngestSettings(tls_cert=tmp_path / "c.pem")


def test_a_certificate_in_place_of_the_key_needs_a_client_ca(tmp_path: Path) -> None:
    ca = make_ca(tmp_path)
    cert, key = ca.issue("ingest")
    with pytest.raises(ValidationError, match="instead_of_key needs APM_INGEST_TLS_CLIENT_CA"):
        IngestSettings(tls_cert=cert, tls_key=key, tls_client_auth="instead_of_key")
    with pytest.raises(ValidationError, match="tls_client_auth"):
        IngestSettings(tls_client_auth="sometimes")
    assert (
        IngestSettings(
            tls_cert=cert, tls_key=key, tls_client_ca=ca.cert, tls_client_auth="instead_of_key"
        ).tls_client_auth
        == "instead_of_key"
    )


def _apm_ingest(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).parent / "apm"), "ingest", "--port", "0"],
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_apm_ingest_exits_2_naming_a_missing_tls_file(tmp_path: Path) -> None:
    done = _apm_ingest(
        {
            "APM_INGEST_TLS_CERT": str(tmp_path / "ingest.pem"),
            "APM_INGEST_TLS_KEY": str(tmp_path / "ingest.key"),
        }
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        f"apm ingest: APM_INGEST_TLS_CERT: {tmp_path / 'ingest.pem'}: no such file"
    )


def test_apm_ingest_exits_2_naming_a_bad_kafka_tls_setting(tmp_path: Path) -> None:
    """The ingest's own Kafka TLS variable wins over the shared one (a good CA here), and is
    checked at start (docs/security.md, Kafka and Cassandra TLS)."""
    from tests.support.certs import make_ca

    done = _apm_ingest(
        {
            "APM_KAFKA_SECURITY_PROTOCOL": "SSL",
            "APM_KAFKA_TLS_CA": str(make_ca(tmp_path / "ca").cert),
            "APM_INGEST_KAFKA_TLS_CA": str(tmp_path / "kafka-ca.pem"),
        }
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        f"apm ingest: APM_INGEST_KAFKA_TLS_CA: {tmp_path / 'kafka-ca.pem'}: no such file"
    )


def test_the_ingest_clients_take_its_kafka_tls(tmp_path: Path, monkeypatch) -> None:
    from apm.kafka_tls import KafkaTls
    from ingest.publisher import KafkaPublisher
    from tests.support.certs import make_ca

    ca = make_ca(tmp_path)
    monkeypatch.setenv("APM_INGEST_KAFKA_SECURITY_PROTOCOL", "SSL")
    monkeypatch.setenv("APM_KAFKA_TLS_CA", str(ca.cert))
    settings = IngestSettings()
    assert settings.kafka_tls == KafkaTls(enabled=True, ca=ca.cert)
    assert KafkaPublisher(settings)._common()["tls"] == settings.kafka_tls
