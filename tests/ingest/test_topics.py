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


# --- issue 14: creation off the request path, the cap on new names, /readyz, close ---------

import threading  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

from ingest.errors import ApiError  # noqa: E402
from ingest.topics import NewTopics  # noqa: E402
from tests.ingest.fake_kafka import FakeProducer  # noqa: E402


class SlowAdmin(FakeAdmin):
    """A FakeAdmin whose create_topics waits until the test lets it go, like a broker slow to
    elect leaders; it counts the metadata requests of the readiness probe."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.release = threading.Event()
        self.creating = threading.Event()
        self.probes = 0

    def create_topics(self, new_topics: dict[str, dict[str, Any]], **kwargs: Any) -> Any:
        self.creating.set()
        assert self.release.wait(30), "never released"
        return super().create_topics(new_topics, **kwargs)

    def describe_cluster(self) -> dict[str, Any]:
        self.probes += 1
        return super().describe_cluster()


def _in_thread(fn: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    out: list[object] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as exc:  # the test looks at it
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def _publisher(admin: FakeAdmin, **overrides: Any) -> tuple[KafkaPublisher, FakeProducer]:
    producer = FakeProducer(auto_ack=True)
    settings = IngestSettings(**{"linger_ms": 0, "publish_timeout_s": 30, **overrides})
    return KafkaPublisher(settings, producer=producer, admin=admin), producer


def test_a_slow_topic_creation_holds_up_no_other_publish_and_no_readyz() -> None:
    admin = SlowAdmin(existing=["apm.metric.old"])
    publisher, producer = _publisher(admin)
    assert publisher.ready()  # the first probe: Kafka answers
    creating, outcome = _in_thread(lambda: publisher.publish({"apm.metric.new": [b"a\t1\t1"]}))
    assert admin.creating.wait(10)

    other, other_outcome = _in_thread(lambda: publisher.publish({"apm.metric.old": [b"b\t1\t2"]}))
    other.join(5)
    assert not other.is_alive() and other_outcome == [None]  # not behind the creation
    # A probe behind the creation would wait until the release below: it answers before it.
    probe, probed = _in_thread(publisher.ready)
    probe.join(10)
    assert not probe.is_alive() and probed == [True]
    assert creating.is_alive()  # still waiting for its own topic

    admin.release.set()
    creating.join(10)
    assert outcome == [None]
    assert sorted(r.topic for r in producer.sent) == ["apm.metric.new", "apm.metric.old"]
    publisher.close(1)


def test_readyz_asks_kafka_in_the_background_not_on_each_call() -> None:
    admin = SlowAdmin()
    publisher, _ = _publisher(admin, ready_probe_s=3600)
    for _ in range(100):
        assert publisher.ready()
    assert admin.probes == 1
    admin.down = True
    assert publisher.probe() is False and publisher.ready() is False
    publisher.close(1)


def test_waiting_topic_creations_are_bounded() -> None:
    admin = SlowAdmin()
    publisher, _ = _publisher(admin, topic_create_max_pending=2)
    first, outcome = _in_thread(lambda: publisher.publish({"apm.metric.a": [b"a\t1\t1"]}))
    assert admin.creating.wait(10)
    with pytest.raises(PublishUnavailable, match="being created already"):
        publisher.publish({"apm.metric.b": [b"a\t1\t1"], "apm.metric.c": [b"a\t1\t1"]})
    admin.release.set()
    first.join(10)
    assert outcome == [None]
    publisher.close(1)


def test_a_refused_topic_is_not_asked_for_again_until_retry_after() -> None:
    admin = FakeAdmin(refuse={"apm.metric.bad": (41, "policy says no")})
    publisher, _ = _publisher(admin, retry_after_s=60)
    for _ in range(3):
        with pytest.raises(PublishUnavailable, match="policy says no"):
            publisher.publish({"apm.metric.bad": [b"a\t1\t1"]})
    assert len(admin.requests) == 1
    publisher.close(1)


def test_the_dot_and_underscore_twins_both_publish_where_kafka_folds_them(
    make_client, make_batch
) -> None:
    """The issue's pair: cpu.util's topic exists, cpu_util is posted. The fake broker folds
    '.' and '_' as Kafka does; before, cpu_util got 503 for ever."""
    admin = FakeAdmin(existing=["apm.metric.twin.cpu.util"])
    publisher, producer = _publisher(admin)
    client = make_client(publisher=publisher)
    batch = {
        "snapshots": [{"server": "web-1", "ts": time.time(), "metrics": {"twin.cpu_util": 1.5}}]
    }
    answer = client.post("/v1/metrics", json=batch)
    assert answer.status_code == 202, answer.text
    from apm.model import topic_for

    assert [r.topic for r in producer.sent] == [topic_for("twin.cpu_util")]
    assert topic_for("twin.cpu_util") in admin.topics  # the fake broker took it


def test_new_names_are_capped_per_minute_and_in_total() -> None:
    now = [0.0]
    guard = NewTopics(per_minute=4, total=6, clock=lambda: now[0])
    guard.check(["a", "b", "c"])
    guard.charge(3)
    with pytest.raises(ApiError) as rate:
        guard.check(["d", "e"])  # 1 token left
    assert rate.value.status == 429 and rate.value.headers["Retry-After"] == "15"
    assert rate.value.reason == "new_names_rate"
    now[0] = 15.0  # a token every 15 s
    guard.check(["d", "e"])
    guard.charge(2)
    with pytest.raises(ApiError) as too_many:
        guard.check(["x"] * 5)  # more than a minute's worth in one batch
    assert too_many.value.status == 422
    now[0] = 600.0
    guard.check(["f"])
    guard.charge(1)
    with pytest.raises(ApiError) as cap:
        guard.check(["g"])  # 6 made: the cap
    assert cap.value.status == 422 and cap.value.reason == "new_names_cap"


def test_a_batch_past_the_cap_on_new_names_is_refused_clearly_and_counted(
    make_client, make_batch
) -> None:
    publisher, producer = _publisher(FakeAdmin(), new_topics_per_minute=3)
    client = make_client(publisher=publisher)
    assert client.post("/v1/metrics", json=make_batch(metrics=2, prefix="cap.a")).status_code == 202
    refused = client.post("/v1/metrics", json=make_batch(metrics=2, prefix="cap.b"))
    assert refused.status_code == 429, refused.text
    assert int(refused.headers["Retry-After"]) >= 1
    assert "new metric name" in refused.json()["detail"]
    assert client.post("/v1/metrics", json=make_batch(metrics=2, prefix="cap.a")).status_code == 202
    too_many = client.post("/v1/metrics", json=make_batch(metrics=4, prefix="cap.c"))
    assert too_many.status_code == 422 and too_many.json()["error"] == "validation"
    scrape = client.get("/metrics").text
    assert 'apm_ingest_requests_total{outcome="rejected",reason="new_names_rate"} 2.0' in scrape
    assert {r.topic for r in producer.sent} == {"apm.metric.cap.a.m0", "apm.metric.cap.a.m1"}


def test_close_is_bounded_when_records_are_never_acknowledged() -> None:
    producer = FakeProducer()  # never acknowledges
    settings = IngestSettings(linger_ms=0, publish_timeout_s=0.1, close_timeout_s=0.3)
    publisher = KafkaPublisher(settings, producer=producer, admin=FakeAdmin())
    with pytest.raises(PublishUnavailable):
        publisher.publish({"apm.metric.a": [b"a\t1\t1"]})
    started = time.monotonic()
    publisher.close(30)  # the lifespan passes shutdown_timeout_s
    # close_timeout_s (0.3 s) bounds it, not the 30 s passed: a generous margin for a loaded
    # machine, far under what the defect would take
    assert time.monotonic() - started < 10
    assert producer.flushed and producer.closed


def test_readyz_answers_at_once_while_a_topic_creation_waits(make_client, make_batch) -> None:
    admin = SlowAdmin()
    publisher, _ = _publisher(admin)
    client = make_client(publisher=publisher)  # the lifespan's first probe: ready
    posting, answers = _in_thread(lambda: client.post("/v1/metrics", json=make_batch()))
    assert admin.creating.wait(10)
    # /readyz behind the creation would wait until the release below: it answers before it.
    probe, probed = _in_thread(lambda: client.get("/readyz"))
    probe.join(10)
    assert not probe.is_alive() and probed[0].status_code == 200  # type: ignore[attr-defined]
    admin.release.set()
    posting.join(10)
    assert [a.status_code for a in answers] == [202]  # type: ignore[attr-defined]


def test_remembered_refusals_expire_and_are_forgotten() -> None:
    from ingest.topics import TopicCreator, TopicsUnavailable

    now = [0.0]
    creator = TopicCreator(
        lambda batch: ([], {t: RuntimeError("no") for t in batch}),
        max_pending=10,
        refusal_s=5,
        clock=lambda: now[0],
    )
    for n in range(20):
        now[0] = n * 10.0  # each refusal has expired when the next comes
        with pytest.raises(TopicsUnavailable, match="no"):
            creator.ensure([f"apm.metric.r{n}"], 5)
    assert len(creator._refused) == 1
    creator.close()
