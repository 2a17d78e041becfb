"""The health page's agent versions read from the real Kafka topic (dashboard/agents.py):
each server's newest sample of the lookback, older records left out, bounded reads."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from dashboard.agents import KafkaAgentVersions
from tests.support.kafka import publish_versions

pytestmark = pytest.mark.integration


def test_each_servers_newest_version_of_the_lookback(kafka_bootstrap: str) -> None:
    a, b, gone = (f"agents-{uuid.uuid4().hex[:8]}" for _ in range(3))
    now = time.time()
    publish_versions(kafka_bootstrap, [(gone, now - 300, "0.9.0")], age_s=300)
    publish_versions(
        kafka_bootstrap, [(a, now - 2, "1.2.3"), (a, now - 1, "1.3.0"), (b, now - 1, "1.2.3")]
    )
    publish_versions(kafka_bootstrap, [(b, now - 5, "0.1.0")])  # late: an older sample
    seen: dict[str, Any] = KafkaAgentVersions(kafka_bootstrap, lookback_s=60).versions()
    assert seen[a].version == "1.3.0" and seen[a].ts == now - 1
    assert seen[b].version == "1.2.3"
    assert gone not in seen  # its record is older than the lookback


def test_the_read_is_bounded_and_cached(kafka_bootstrap: str) -> None:
    server = f"agents-{uuid.uuid4().hex[:8]}"
    publish_versions(kafka_bootstrap, [(server, time.time(), "2.0.0")] * 3)
    bounded = KafkaAgentVersions(kafka_bootstrap, lookback_s=60, max_records=2)
    bounded.versions()
    assert bounded.records_read == 2
    now = [time.time()]
    source = KafkaAgentVersions(kafka_bootstrap, lookback_s=60, clock=lambda: now[0])
    first = source.versions()
    assert first[server].version == "2.0.0" and source.records_read >= 3
    publish_versions(kafka_bootstrap, [(server, time.time(), "3.0.0")])
    assert source.versions() is first  # cached for cache_s (10 s)
    now[0] += 11
    assert source.versions()[server].version == "3.0.0"


def test_kafka_down_is_an_os_error() -> None:
    with pytest.raises(OSError, match="unreachable"):
        KafkaAgentVersions("127.0.0.1:1", timeout_s=1).versions()
