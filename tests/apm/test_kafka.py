"""apm.kafka: the client configuration, the topic spec (min.insync.replicas only on replicated
topics), ensure_topics at the edges (exists, a concurrent creator, a refusal) against a fake
that answers as kafka-python's admin does, and the same edges on the real broker with the
offsets readers."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from kafka.errors import KafkaConnectionError

from apm.kafka import (
    TOPIC_RETENTION_S,
    TopicError,
    TopicSpec,
    client_config,
    delete_topics,
    end_offsets,
    ensure_topics,
    start_offsets,
)
from apm.model import TOPIC_PARTITIONS
from tests.support.kafka import FakeAdmin

unit = pytest.mark.unit
integration = pytest.mark.integration

INVALID_REPLICATION_FACTOR = 38  # kafka.errors.InvalidReplicationFactorError.errno


# --- unit ------------------------------------------------------------------------------------


@unit
def test_importing_the_module_loads_no_kafka_client() -> None:
    code = "import sys, apm.kafka; print('kafka' in {m.split('.')[0] for m in sys.modules})"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "False"


@unit
def test_client_config_splits_the_bootstrap_string_and_takes_extras() -> None:
    assert client_config("k1:9092, k2:9092,") == {"bootstrap_servers": ["k1:9092", "k2:9092"]}
    assert client_config("k1:9092", "apm-x", request_timeout_ms=5) == {
        "bootstrap_servers": ["k1:9092"],
        "client_id": "apm-x",
        "request_timeout_ms": 5,
    }
    with pytest.raises(ValueError, match="bootstrap"):
        client_config(" , ")


@unit
def test_the_default_spec_is_the_platform_s_one_partition_and_a_day() -> None:
    spec = TopicSpec()
    assert (spec.partitions, spec.replication) == (TOPIC_PARTITIONS, 1)
    assert spec.configs() == {"retention.ms": str(int(TOPIC_RETENTION_S * 1000))}
    assert spec.request() == {
        "num_partitions": TOPIC_PARTITIONS,
        "replication_factor": 1,
        "configs": {"retention.ms": "86400000"},
    }
    assert TopicSpec(retention_s=None).configs() == {}


@unit
def test_a_compacted_spec_keeps_each_key_s_last_record_whatever_its_age() -> None:
    assert TopicSpec(compact=True).configs() == {"cleanup.policy": "compact"}
    assert TopicSpec(compact=True, replication=3).configs() == {
        "cleanup.policy": "compact",
        "min.insync.replicas": "2",
    }


@unit
@pytest.mark.parametrize(
    ("replication", "min_insync", "want"),
    [(1, None, None), (2, None, "2"), (3, None, "2"), (5, None, "2"), (3, 3, "3"), (2, 1, "1")],
)
def test_min_insync_replicas_is_set_only_on_replicated_topics(
    replication: int, min_insync: int | None, want: str | None
) -> None:
    configs = TopicSpec(replication=replication, min_insync=min_insync).configs()
    assert configs.get("min.insync.replicas") == want


@unit
@pytest.mark.parametrize(
    "bad",
    [
        {"partitions": 0},
        {"replication": 0},
        {"retention_s": 0},
        {"retention_s": float("nan")},
        {"replication": 1, "min_insync": 2},
        {"replication": 3, "min_insync": 0},
    ],
)
def test_a_nonsense_spec_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        TopicSpec(**bad)


@unit
def test_ensure_topics_creates_only_the_missing_in_one_request_and_waits_for_them() -> None:
    admin = FakeAdmin(existing=["a"])
    spec = TopicSpec(partitions=3)
    assert ensure_topics(admin, ["a", "b", "c", "b"], spec) == ["b", "c"]
    assert admin.requests == [{"b": spec.request(), "c": spec.request()}]
    assert admin.waited == [["b", "c"]]
    assert not admin.closed  # the caller's client stays open
    assert ensure_topics(admin, ["a", "b", "c"], spec) == []  # idempotent: no request at all
    assert len(admin.requests) == 1


@unit
def test_a_topic_a_concurrent_creator_made_counts_as_existing() -> None:
    admin = FakeAdmin(racing=["b"])
    assert ensure_topics(admin, ["a", "b"]) == ["a"]
    assert admin.waited == [["a", "b"]]  # the other creator's topic must be usable too
    assert admin.topics["b"] == {"by": "another client"}  # kept as that client made it


@unit
def test_a_refused_topic_raises_naming_it_after_the_others_are_created() -> None:
    admin = FakeAdmin(refuse={"b": (INVALID_REPLICATION_FACTOR, "only 1 broker(s)")})
    with pytest.raises(TopicError, match="creating topic b failed: only 1 broker") as err:
        ensure_topics(admin, ["a", "b", "c"])
    assert (err.value.topic, err.value.code) == ("b", INVALID_REPLICATION_FACTOR)
    assert set(admin.topics) == {"a", "c"}
    assert admin.waited == [["a", "c"]]  # not for the refused one: that would time out


@unit
def test_a_refusal_without_a_message_names_the_code() -> None:
    with pytest.raises(TopicError, match="error code 38"):
        ensure_topics(FakeAdmin(refuse={"a": (38, "")}), ["a"])


@unit
def test_no_broker_is_kafka_python_s_error_and_a_client_made_here_is_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[FakeAdmin] = []

    def new_admin(bootstrap: str) -> FakeAdmin:
        made.append(FakeAdmin(down=bootstrap == "down:9092"))
        return made[-1]

    monkeypatch.setattr("apm.kafka.new_admin", new_admin)
    assert ensure_topics("up:9092", ["a"]) == ["a"]
    with pytest.raises(KafkaConnectionError):
        ensure_topics("down:9092", ["a"])
    assert [a.closed for a in made] == [True, True]


@unit
def test_delete_topics_deletes_only_those_that_exist() -> None:
    admin = FakeAdmin(existing=["a", "b"])
    assert delete_topics(admin, ["b", "zz"]) == ["b"]
    assert set(admin.topics) == {"a"}


class _Consumer:
    """kafka-python's consumer at the edge end_offsets relies on: an unknown topic has no
    partitions, and asking the offsets of an unknown partition would block."""

    def __init__(self, partitions: dict[str, int]) -> None:
        self.partitions = partitions

    def partitions_for_topic(self, topic: str) -> set[int]:
        return set(range(self.partitions[topic])) if topic in self.partitions else set()

    def end_offsets(self, parts: list[Any], timeout_ms: int | None = None) -> dict[Any, int]:
        assert all(tp.topic in self.partitions for tp in parts), "would block until timeout"
        return {tp: 10 * tp.partition + 7 for tp in parts}

    def beginning_offsets(self, parts: list[Any], timeout_ms: int | None = None) -> dict[Any, int]:
        return {tp: tp.partition for tp in parts}


@unit
def test_offsets_cover_every_partition_of_the_topics_that_exist() -> None:
    consumer = _Consumer({"a": 2, "b": 1})
    assert end_offsets(consumer, ["a", "nope", "b"]) == {("a", 0): 7, ("a", 1): 17, ("b", 0): 7}
    assert start_offsets(consumer, ["b", "a"]) == {("b", 0): 0, ("a", 0): 0, ("a", 1): 1}
    assert end_offsets(consumer, ["nope"]) == {}


# --- the real broker -------------------------------------------------------------------------


def _configs(bootstrap: str, topic: str) -> dict[str, dict[str, Any]]:
    from kafka.admin import ConfigResource, ConfigResourceType

    from apm.kafka import new_admin

    admin = new_admin(bootstrap)
    try:
        got = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    finally:
        admin.close()
    configs: dict[str, dict[str, Any]] = got["topic"][topic]
    return configs


@integration
def test_ensure_topics_on_the_broker_is_idempotent_and_applies_the_spec(
    kafka_bootstrap: str, unique_name, own_topics: list[str]
) -> None:
    first, second = unique_name("apmk-a"), unique_name("apmk-b")
    own_topics.extend([first, second])
    spec = TopicSpec(partitions=3, retention_s=3 * 3600)  # not the broker's default day
    assert ensure_topics(kafka_bootstrap, [first], spec) == [first]
    # One existing, one not, in one request: the existing one is skipped, the other made.
    assert ensure_topics(kafka_bootstrap, [first, second], spec) == [second]
    assert ensure_topics(kafka_bootstrap, [first, second], spec) == []
    for topic in (first, second):
        configs = _configs(kafka_bootstrap, topic)
        assert configs["retention.ms"]["value"] == str(3 * 3600 * 1000)
        assert configs["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        # Replication 1: no topic-level min.insync.replicas (the broker's, 1, applies).
        assert "min.insync.replicas" not in configs


@integration
def test_concurrent_creators_both_succeed_and_each_topic_is_made_once(
    kafka_bootstrap: str, unique_name, own_topics: list[str]
) -> None:
    topics = [unique_name("apmk-race") for _ in range(4)]
    own_topics.extend(topics)
    barrier = threading.Barrier(2)
    results: list[list[str]] = []
    errors: list[BaseException] = []

    def create() -> None:
        try:
            barrier.wait()
            results.append(ensure_topics(kafka_bootstrap, topics, TopicSpec(partitions=2)))
        except BaseException as exc:  # the test inspects it
            errors.append(exc)

    threads = [threading.Thread(target=create) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    assert sorted(results[0] + results[1]) == sorted(topics)
    # Every partition has a leader on return, whoever made the topic: offsets are readable.
    assert end_offsets(kafka_bootstrap, topics) == {(t, p): 0 for t in topics for p in (0, 1)}


class _ListsNothing:
    """The real admin client, but its list_topics is stale: as if another client created the
    topics between this one's list_topics and its create_topics."""

    def __init__(self, admin: Any) -> None:
        self._admin = admin

    def list_topics(self) -> list[str]:
        return []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._admin, name)


@integration
def test_losing_the_race_to_another_creator_is_no_error_and_the_rest_is_created(
    kafka_bootstrap: str, unique_name, own_topics: list[str]
) -> None:
    from apm.kafka import new_admin

    theirs, ours = unique_name("apmk-theirs"), unique_name("apmk-ours")
    own_topics.extend([theirs, ours])
    admin = new_admin(kafka_bootstrap)
    try:
        assert ensure_topics(admin, [theirs], TopicSpec(partitions=1)) == [theirs]
        # The broker answers TopicAlreadyExists for theirs and creates ours in one request.
        assert ensure_topics(_ListsNothing(admin), [theirs, ours], TopicSpec(partitions=2)) == [
            ours
        ]
        described = {t["name"]: len(t["partitions"]) for t in admin.describe_topics([theirs, ours])}
        assert described == {theirs: 1, ours: 2}  # theirs kept as its creator made it
    finally:
        admin.close()


@integration
def test_a_topic_the_broker_refuses_raises_naming_it(
    kafka_bootstrap: str, unique_name, own_topics: list[str]
) -> None:
    from apm.kafka import new_admin

    topic = unique_name("apmk-bad")
    own_topics.append(topic)
    admin = new_admin(kafka_bootstrap)
    try:
        too_many = len(admin.describe_cluster()["brokers"]) + 1
        with pytest.raises(TopicError, match=f"creating topic {topic} failed") as err:
            ensure_topics(admin, [topic], TopicSpec(replication=too_many))
        assert err.value.code == INVALID_REPLICATION_FACTOR
        assert topic not in admin.list_topics()
    finally:
        admin.close()


@integration
def test_end_offsets_grow_by_what_was_produced_and_an_unknown_topic_has_none(
    kafka_bootstrap: str, unique_name, own_topics: list[str]
) -> None:
    from apm.kafka import new_consumer, new_producer

    topic = unique_name("apmk-offsets")
    own_topics.append(topic)
    ensure_topics(kafka_bootstrap, [topic], TopicSpec(partitions=2))
    consumer = new_consumer(kafka_bootstrap, request_timeout_ms=5000)
    try:
        before = end_offsets(consumer, [topic])  # right after creation: both partitions
        assert before == {(topic, 0): 0, (topic, 1): 0}
        producer = new_producer(kafka_bootstrap, acks="all")
        for i in range(7):
            producer.send(topic, value=b"x", partition=i % 2)
        producer.flush()
        producer.close()
        assert end_offsets(consumer, [topic]) == {(topic, 0): 4, (topic, 1): 3}
        assert start_offsets(consumer, [topic]) == before
        began = time.monotonic()
        assert end_offsets(consumer, [unique_name("apmk-nope")]) == {}
        assert time.monotonic() - began < 5  # looked up, not asked until the timeout
    finally:
        consumer.close()


@integration
def test_the_broker_folds_dot_and_underscore_and_the_metric_topics_never_do(
    kafka_bootstrap: str, unique_name, own_topics: list[str]
) -> None:
    """Why apm.model.topic_for escapes '_' (issue 14, item 3): the broker refuses a topic
    equal to an existing one once '.' and '_' are read alike. The old naming's twin of a
    dotted name is refused (InvalidTopicException, 17); the new one is created."""
    from apm.kafka import create_topics, new_admin
    from apm.model import topic_for

    base = unique_name("apmk-twin")
    dotted, underscored = f"{base}.cpu.util", f"{base}.cpu_util"
    own_topics.extend([topic_for(dotted), topic_for(underscored), f"apm.metric.{underscored}"])
    admin = new_admin(kafka_bootstrap)
    try:
        assert ensure_topics(admin, [topic_for(dotted)]) == [topic_for(dotted)]
        created, refused = create_topics(admin, [f"apm.metric.{underscored}"])
        assert created == [] and refused[f"apm.metric.{underscored}"].code == 17
        assert "collides" in str(refused[f"apm.metric.{underscored}"])
        assert create_topics(admin, [topic_for(underscored)]) == ([topic_for(underscored)], {})
    finally:
        admin.close()
