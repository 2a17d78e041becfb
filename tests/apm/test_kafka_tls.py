"""apm.kafka_tls: the settings' rule and refusals, each client's options, and (integration)
a topic published and consumed through apm.kafka over TLS on a broker that ``apm stack``'s
code started with an SSL listener, a client trusting another CA refused with the reason."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from apm.kafka import (
    client_config,
    end_offsets,
    ensure_topics,
    new_admin,
    new_consumer,
    new_producer,
)
from apm.kafka_tls import KafkaTls, KafkaTlsError, kafka_tls
from tests.support.certs import make_ca

unit = pytest.mark.unit


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    ca = make_ca(tmp_path_factory.mktemp("kafka-tls"))
    cert, key = ca.issue("client")
    other_cert, _ = ca.issue("other")
    return {"ca": ca.cert, "cert": cert, "key": key, "other_key_cert": other_cert}


@unit
def test_plain_by_default_and_nothing_added_to_the_clients():
    tls = kafka_tls(environ={})
    assert tls == KafkaTls() and not tls.enabled
    assert tls.client_options() == {} and tls.spark_options() == {}
    assert client_config("k:9092", tls=tls) == {"bootstrap_servers": ["k:9092"]}


@unit
def test_service_variable_wins_over_shared_and_explicit_over_both(files):
    env = {
        "APM_KAFKA_SECURITY_PROTOCOL": "ssl",
        "APM_KAFKA_TLS_CA": "/nowhere/shared.pem",
        "APM_INGEST_KAFKA_TLS_CA": str(files["ca"]),
        "APM_KAFKA_TLS_CHECK_HOSTNAME": "false",
    }
    tls = kafka_tls("APM_INGEST_", env)
    assert tls == KafkaTls(enabled=True, ca=files["ca"], check_hostname=False)
    assert kafka_tls("APM_INGEST_", env, tls_check_hostname=True).check_hostname
    with pytest.raises(
        KafkaTlsError, match=r"APM_KAFKA_TLS_CA: /nowhere/shared\.pem: no such file"
    ):
        kafka_tls("APM_AGGREGATOR_", env)


@unit
def test_options_of_kafka_python_and_of_spark(files):
    tls = KafkaTls(enabled=True, ca=files["ca"], cert=files["cert"], key=files["key"])
    assert client_config("k:9093", tls=tls) == {
        "bootstrap_servers": ["k:9093"],
        "security_protocol": "SSL",
        "ssl_check_hostname": True,
        "ssl_cafile": str(files["ca"]),
        "ssl_certfile": str(files["cert"]),
        "ssl_keyfile": str(files["key"]),
    }
    spark = tls.spark_options()
    assert spark["kafka.security.protocol"] == "SSL"
    assert spark["kafka.ssl.truststore.type"] == "PEM"
    assert spark["kafka.ssl.truststore.location"] == str(files["ca"])
    assert spark["kafka.ssl.endpoint.identification.algorithm"] == "https"
    assert spark["kafka.ssl.keystore.key"] == files["key"].read_text()
    assert spark["kafka.ssl.keystore.certificate.chain"] == files["cert"].read_text()
    unchecked = KafkaTls(enabled=True, check_hostname=False).spark_options()
    assert unchecked == {
        "kafka.security.protocol": "SSL",
        "kafka.ssl.endpoint.identification.algorithm": "",
    }


@unit
@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"APM_KAFKA_SECURITY_PROTOCOL": "SASL_SSL"}, "'SASL_SSL' is not supported"),
        ({"APM_KAFKA_TLS_CA": "{ca}"}, "APM_KAFKA_TLS_CA given but APM_KAFKA_SECURITY_PROTOCOL"),
        (
            {"APM_KAFKA_SECURITY_PROTOCOL": "SSL", "APM_KAFKA_TLS_KEY": "{key}"},
            "APM_KAFKA_TLS_CERT and APM_KAFKA_TLS_KEY go together",
        ),
        (
            {"APM_KAFKA_SECURITY_PROTOCOL": "SSL", "APM_KAFKA_TLS_CA": "{key}"},
            "APM_KAFKA_TLS_CA: .*not a PEM certificate",
        ),
        (
            {
                "APM_KAFKA_SECURITY_PROTOCOL": "SSL",
                "APM_KAFKA_TLS_CERT": "{other_key_cert}",
                "APM_KAFKA_TLS_KEY": "{key}",
            },
            "the key does not match the certificate",
        ),
        (
            {"APM_KAFKA_SECURITY_PROTOCOL": "SSL", "APM_KAFKA_TLS_CHECK_HOSTNAME": "maybe"},
            "APM_KAFKA_TLS_CHECK_HOSTNAME: 'maybe' is not a boolean",
        ),
    ],
)
def test_bad_settings_are_refused_naming_the_variable(files, env, says):
    env = {k: v.format(**{n: str(p) for n, p in files.items()}) for k, v in env.items()}
    with pytest.raises(KafkaTlsError, match=says):
        kafka_tls(environ=env)


@unit
def test_every_client_takes_the_shared_variables(files, monkeypatch):
    monkeypatch.setenv("APM_KAFKA_SECURITY_PROTOCOL", "SSL")
    monkeypatch.setenv("APM_KAFKA_TLS_CA", str(files["ca"]))
    assert client_config("k:9093")["ssl_cafile"] == str(files["ca"])
    monkeypatch.setenv("APM_KAFKA_TLS_CA", "/nowhere.pem")
    with pytest.raises(KafkaTlsError, match="no such file"):
        new_admin("k:9093")  # refused before any connection


@pytest.mark.integration
def test_publish_and_consume_over_tls_and_another_ca_is_refused(tls_stack, monkeypatch):
    bootstrap = tls_stack.kafka_bootstrap
    monkeypatch.setenv("APM_KAFKA_SECURITY_PROTOCOL", "SSL")
    monkeypatch.setenv("APM_KAFKA_TLS_CA", str(tls_stack.ca.cert))
    topic = f"apm.tls-test.{uuid.uuid4().hex[:10]}"
    # Every client below takes the shared variables: none is given its TLS explicitly.
    assert ensure_topics(bootstrap, [topic]) == [topic]
    producer = new_producer(bootstrap, acks="all")
    try:
        for i in range(3):
            producer.send(topic, key=b"k", value=f"sample {i}".encode())
        producer.flush(30)
    finally:
        producer.close()
    assert sum(end_offsets(bootstrap, [topic]).values()) == 3
    consumer = new_consumer(
        bootstrap, topic, auto_offset_reset="earliest", consumer_timeout_ms=10_000
    )
    try:
        got = [record.value for record in consumer]
    finally:
        consumer.close()
    assert sorted(got) == [f"sample {i}".encode() for i in range(3)]

    wrong = KafkaTls(enabled=True, ca=tls_stack.other_ca.cert)
    with pytest.raises(KafkaTlsError, match="certificate is not trusted"):
        new_admin(bootstrap, tls=wrong, bootstrap_timeout_ms=3000)
    with pytest.raises(KafkaTlsError, match="certificate is not trusted"):
        new_producer(bootstrap, tls=wrong, max_block_ms=3000)


@unit
def test_the_services_declare_the_variables_they_read():
    from apm.settings import env_names
    from ingest.settings import IngestSettings

    names = env_names(IngestSettings)
    assert {"APM_INGEST_KAFKA_TLS_CA", "APM_KAFKA_TLS_CA", "APM_KAFKA_SECURITY_PROTOCOL"} <= names
