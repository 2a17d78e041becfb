"""Reading back what the ingest published: every record of some topics, raw or decoded."""

from __future__ import annotations

from kafka import KafkaConsumer, TopicPartition

from apm.wire import decode

__all__ = ["read_records", "read_samples"]


def read_records(bootstrap: str, topics: list[str]) -> list[tuple[str, bytes]]:
    """(topic, value) of every record now in ``topics`` (missing topics: none), each checked
    to carry the ``enc=tsv1`` header."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=2000)
    try:
        parts = [TopicPartition(t, p) for t in topics
                 for p in sorted(consumer.partitions_for_topic(t) or ())]
        if not parts:
            return []
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        end = consumer.end_offsets(parts)
        out: list[tuple[str, bytes]] = []
        while any(consumer.position(tp) < end[tp] for tp in parts):
            for records in consumer.poll(timeout_ms=1000).values():
                for record in records:
                    assert dict(record.headers).get("enc") == b"tsv1"
                    out.append((record.topic, record.value))
        return out
    finally:
        consumer.close()


def read_samples(bootstrap: str, topics: list[str]) -> list[tuple[str, str, float, float]]:
    """(topic, server, ts, value) for every sample now in ``topics``."""
    return [(topic, *row) for topic, value in read_records(bootstrap, topics)
            for row in decode(value)]
