"""launch/stack/tls.py: the stack's TLS settings are checked, a plain stack's configs get
nothing, and a TLS stack's get an SSL listener and client_encryption_options over a PKCS#12
keystore that holds the given pair (openssl reads it back). The engines themselves are started
with TLS by the ``tls_stack`` fixture (tests/apm/test_kafka_tls.py, tests/storage/test_tls.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from launch.stack.config import StackSettings
from launch.stack.tls import cassandra_yaml, client_context, kafka_properties, kafka_tls
from tests.support.certs import make_ca

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[Path, Path, Path]:
    ca = make_ca(tmp_path_factory.mktemp("stack-tls"))
    cert, key = ca.issue("engines")
    return ca.cert, cert, key


def test_plain_by_default(tmp_path):
    settings = StackSettings(var_dir=tmp_path)
    assert not settings.tls
    assert kafka_properties(settings) == "" and cassandra_yaml(settings) == ""
    assert client_context(settings) is None and not kafka_tls(settings).enabled


def test_bad_settings_are_refused(tmp_path, pair):
    ca, cert, key = pair
    with pytest.raises(ValidationError, match="APM_STACK_TLS_CERT and APM_STACK_TLS_KEY go"):
        StackSettings(tls_cert=cert)
    with pytest.raises(ValidationError, match="APM_STACK_TLS_CA is for a stack started with"):
        StackSettings(tls_ca=ca)
    with pytest.raises(ValidationError, match=r"APM_STACK_TLS_CA: .*: not a PEM certificate"):
        StackSettings(tls_cert=cert, tls_key=key, tls_ca=key)


def test_a_tls_stack_configures_both_engines_over_one_keystore(tmp_path, pair):
    ca, cert, key = pair
    settings = StackSettings(var_dir=tmp_path, tls_cert=cert, tls_key=key, tls_ca=ca)
    props = dict(
        line.split("=", 1) for line in kafka_properties(settings).splitlines() if "=" in line
    )
    assert props["listeners"] == "SSL://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
    assert props["listener.security.protocol.map"] == "CONTROLLER:PLAINTEXT,SSL:SSL"
    assert props["ssl.truststore.location"] == str(ca)
    store = Path(props["ssl.keystore.location"])
    assert store.stat().st_mode & 0o077 == 0
    listed = subprocess.run(
        [
            "openssl",
            "pkcs12",
            "-in",
            str(store),
            "-nokeys",
            "-passin",
            f"pass:{props['ssl.keystore.password']}",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert cert.read_text().strip() in listed  # the given certificate, as given
    yaml_block = cassandra_yaml(settings)
    assert "client_encryption_options:\n  enabled: true\n  optional: false\n" in yaml_block
    assert f"keystore: {tmp_path / 'cassandra' / 'keystore.p12'}" in yaml_block
    assert kafka_tls(settings).ca == ca and client_context(settings) is not None
