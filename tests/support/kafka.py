"""Kafka in the tests: reading back what reached the metric topics, publishing agent
versions as the ingest does, and a stand-in for kafka-python's admin client that answers as
the real one does at the edges apm.kafka relies on (checked against the broker in
tests/apm/test_kafka.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import kafka.errors as Errors

from apm.kafka import Offsets, new_consumer, topic_partitions
from apm.wire import decode

__all__ = ["FakeAdmin", "publish_versions", "read_keyed", "read_records", "read_samples"]


def _read(bootstrap: str, topics: Iterable[str], since: Offsets | None) -> list[Any]:
    """Every record now in ``topics`` after ``since`` (a partition not in it: from its
    oldest record), as kafka-python's ConsumerRecords."""
    since = since or {}
    consumer = new_consumer(bootstrap, consumer_timeout_ms=2000)
    try:
        parts = topic_partitions(consumer, topics)
        if not parts:
            return []
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        for tp in parts:
            if (tp.topic, tp.partition) in since:
                consumer.seek(tp, since[(tp.topic, tp.partition)])
        end = consumer.end_offsets(parts)
        out: list[Any] = []
        while any(consumer.position(tp) < end[tp] for tp in parts):
            for records in consumer.poll(timeout_ms=1000).values():
                out.extend(records)
        return out
    finally:
        consumer.close()


def read_records(
    bootstrap: str, topics: Iterable[str], since: Offsets | None = None
) -> list[tuple[str, bytes]]:
    """(topic, value) of every record now in ``topics`` (missing topics: none), each checked
    to carry the ``enc=tsv1`` header. ``since`` (apm.kafka.end_offsets taken before the test
    sent anything) skips what other tests left in shared topics; a partition not in it is read
    from its oldest record."""
    out = []
    for record in _read(bootstrap, topics, since):
        assert dict(record.headers).get("enc") == b"tsv1"
        out.append((record.topic, record.value))
    return out


def read_keyed(
    bootstrap: str, topic: str, since: Offsets | None = None
) -> list[tuple[bytes | None, bytes]]:
    """(key, value) of every record now in ``topic`` after ``since`` (as read_records), for
    keyed topics such as apm.tags.TAGS_TOPIC (no encoding header)."""
    return [(record.key, record.value) for record in _read(bootstrap, [topic], since)]


def read_samples(
    bootstrap: str, topics: Iterable[str], since: Offsets | None = None, server: str | None = None
) -> list[tuple[str, str, float, float]]:
    """(topic, server, ts, value) for every sample now in ``topics`` (after ``since``, as
    read_records), only ``server``'s if given."""
    return [
        (topic, who, ts, value)
        for topic, record in read_records(bootstrap, topics, since)
        for who, ts, value in decode(record)
        if server is None or who == server
    ]


def _folded(topic: str) -> str:
    return topic.replace(".", "_")


class FakeAdmin:
    """kafka-python's KafkaAdminClient as far as apm.kafka and the ingest use it.

    ``existing``: topics the cluster has. ``racing``: topics another client creates between
    this client's list_topics and its create_topics (they answer TopicAlreadyExistsError).
    ``refuse``: topic -> (error code, message) the broker answers instead of creating it.
    ``down``: every call raises, as with no broker. As the real broker, it refuses a topic
    that equals an existing one once '.' and '_' are read alike (InvalidTopicException).
    ``requests`` keeps each create_topics request (topic -> its dict entry); ``waited`` the
    topics each wait_for_topics waited for.
    """

    def __init__(
        self,
        existing: Iterable[str] = (),
        racing: Iterable[str] = (),
        refuse: Mapping[str, tuple[int, str]] | None = None,
        down: bool = False,
    ) -> None:
        self.topics: dict[str, dict[str, Any]] = {t: {} for t in existing}
        self.racing = set(racing)
        self.refuse = dict(refuse or {})
        self.down = down
        self.requests: list[dict[str, dict[str, Any]]] = []
        self.waited: list[list[str]] = []
        self.closed = False

    def _check(self) -> None:
        if self.down:
            raise Errors.KafkaConnectionError("fake: no broker")

    def list_topics(self) -> list[str]:
        self._check()
        return list(self.topics)

    def create_topics(
        self,
        new_topics: dict[str, dict[str, Any]],
        timeout_ms: int | None = None,
        validate_only: bool = False,
        raise_errors: bool = True,
        wait_for_metadata: bool = False,
    ) -> dict[str, Any]:
        self._check()
        self.requests.append({t: dict(v) for t, v in new_topics.items()})
        for topic in self.racing & set(new_topics):
            self.topics.setdefault(topic, {"by": "another client"})
        answers = []
        for topic, entry in new_topics.items():
            if topic in self.topics:
                code, message = (
                    Errors.TopicAlreadyExistsError.errno,
                    f"Topic '{topic}' already exists.",
                )
            elif topic in self.refuse:
                code, message = self.refuse[topic]
            elif twins := [t for t in self.topics if _folded(t) == _folded(topic)]:
                code, message = (
                    Errors.InvalidTopicError.errno,
                    f"Topic '{topic}' collides with existing topics: {twins[0]}",
                )
            else:
                self.topics[topic] = dict(entry)
                code, message = 0, None
            answers.append({"name": topic, "error_code": code, "error_message": message})
            if code and raise_errors:
                raise Errors.for_code(code)(message)
        return {"topics": answers}

    def describe_cluster(self) -> dict[str, Any]:
        self._check()
        return {"cluster_id": "fake", "brokers": [{"node_id": 1}]}

    def wait_for_topics(self, topic_names: list[str], timeout_ms: int = 10000) -> None:
        self._check()
        self.waited.append(list(topic_names))
        if pending := [t for t in topic_names if t not in self.topics]:
            raise Errors.KafkaTimeoutError(f"Topics not ready after {timeout_ms}ms: {pending}")

    def delete_topics(
        self, topics: list[str], timeout_ms: int | None = None, raise_errors: bool = True
    ) -> dict[str, Any]:
        self._check()
        for topic in topics:
            if topic not in self.topics and raise_errors:
                raise Errors.UnknownTopicOrPartitionError(topic)
            self.topics.pop(topic, None)
        return {"topics": [{"name": t, "error_code": 0} for t in topics]}

    def close(self) -> None:
        self.closed = True


def publish_versions(
    bootstrap: str, samples: list[tuple[str, float, str]], age_s: float = 0
) -> None:
    """``(server, ts, version)`` agent.version samples as the ingest writes them into the real
    topic, the records stamped ``age_s`` seconds ago."""
    import time

    from apm.agentversion import METRIC, version_number
    from apm.kafka import ensure_topics, new_producer
    from apm.model import topic_for
    from apm.wire import encode_chunks

    ensure_topics(bootstrap, [topic_for(METRIC)])
    producer = new_producer(bootstrap)
    stamp = int((time.time() - age_s) * 1000)
    for server, ts, version in samples:
        for chunk in encode_chunks([(server, ts, version_number(version))]):
            producer.send(topic_for(METRIC), chunk, timestamp_ms=stamp)
    producer.flush(10)
    producer.close()
