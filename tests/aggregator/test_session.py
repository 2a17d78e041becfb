"""The aggregator's SparkSession (aggregator/session.py): what it promises beyond Spark's
defaults, checked on a real session."""

from __future__ import annotations

import contextlib
import io

import pytest

pytestmark = pytest.mark.integration


def test_the_kafka_sources_client_key_is_redacted_from_the_plan(spark) -> None:
    """The PEM client key the Kafka source is given for TLS (docs/security.md) would show in
    the plan (the UI, explain) under Spark's own redaction pattern; the session's hides it."""
    secret = "-----BEGIN PRIVATE KEY-----MIIEvQIBADANBgkqhkiG9w0BAQEFAASC-----END PRIVATE KEY-----"
    frame = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", "127.0.0.1:1")
        .option("subscribe", "apm.never")
        .option("kafka.ssl.keystore.type", "PEM")
        .option("kafka.ssl.keystore.key", secret)
        .load()
    )
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown):
        frame.explain(extended=True)
    assert "kafka.ssl.keystore.type" in shown.getvalue() or "Kafka" in shown.getvalue()
    assert "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" not in shown.getvalue()
