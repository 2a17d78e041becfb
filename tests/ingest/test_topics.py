"""The ingest creates the topics it has not seen with the platform's TopicSpec (apm.kafka),
sized by its settings, and answers 503 when Kafka refuses one."""

from __future__ import annotations

import pytest

from ingest.publisher import KafkaPublisher, PublishUnavailable
from ingest.settings import IngestSettings
from tests.support.kafka import FakeAdmin

pytestmark = pytest.mark.unit


def test_the_ingest_creates_topics_with_its_settings_spec_and_503s_on_a_refusal() -> None:
    settings = IngestSettings(topic_partitions=2, topic_replication=3, topic_retention_s=3600)
    admin = FakeAdmin(existing=["apm.metric.old"], refuse={"apm.metric.bad": (38, "no")})
    publisher = KafkaPublisher(settings, producer=object(), admin=admin)
    publisher.ensure_topics(["apm.metric.old", "apm.metric.new"])
    assert admin.requests == [
        {
            "apm.metric.new": {
                "num_partitions": 2,
                "replication_factor": 3,
                "configs": {"retention.ms": "3600000", "min.insync.replicas": "2"},
            }
        }
    ]
    with pytest.raises(PublishUnavailable, match=r"creating topic apm\.metric\.bad failed: no"):
        publisher.ensure_topics(["apm.metric.bad"])
    publisher.ensure_topics(["apm.metric.new"])  # known: no request
    assert len(admin.requests) == 2


def test_a_broker_that_is_down_is_a_503_and_the_admin_client_is_made_anew() -> None:
    admin = FakeAdmin(down=True)
    publisher = KafkaPublisher(IngestSettings(), producer=object(), admin=admin)
    with pytest.raises(PublishUnavailable, match="Kafka unavailable while creating topics"):
        publisher.ensure_topics(["apm.metric.x"])
    assert admin.closed and publisher._admin is None  # the next call connects again
