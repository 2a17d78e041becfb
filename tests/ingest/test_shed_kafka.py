"""The answer deadline on the real engine (issue 14, item 7): with Kafka stopped and the
default settings, the ingest answers 503 + Retry-After within its 4 s contract, for known
topics (the producer waits on metadata and acks) and new ones (topic creation), so an agent
with a longer timeout hears the 503 instead of resending. A fake publisher cannot show this:
the time goes to kafka-python's own waits."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.ingest.test_resilience import private_kafka  # noqa: F401  (the fixture)

pytestmark = pytest.mark.integration


def test_kafka_down_is_answered_503_within_the_answer_deadline(
    private_kafka,  # noqa: F811
    start_ingest_process,
    make_batch,
):
    limit = 4.0  # docs/ingest.md: "the ingest answers within answer_timeout_s (4 s)"
    ingest = start_ingest_process(private_kafka.bootstrap)  # default deadlines
    with httpx.Client(base_url=ingest.url, headers=ingest.headers, timeout=30) as client:
        assert client.post("/v1/metrics", json=make_batch(prefix="shed.a")).status_code == 202
        private_kafka.stop()
        for prefix in ("shed.a", "shed.b"):  # known topics, then new ones
            started = time.monotonic()
            answer = client.post("/v1/metrics", json=make_batch(prefix=prefix, server_prefix="db"))
            took = time.monotonic() - started
            assert answer.status_code == 503, answer.text
            assert answer.headers["Retry-After"]
            assert answer.json()["error"] == "unavailable"
            assert took < limit + 0.5, (prefix, took, answer.text)
