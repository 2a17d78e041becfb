"""Reading what reached Kafka since a point in time: topics are shared with other tests, so the
agent tests read only from the end offsets taken before they start."""

from __future__ import annotations

from kafka import KafkaConsumer, TopicPartition

from apm.wire import decode

__all__ = ["end_offsets", "samples_since"]

Offsets = dict[tuple[str, int], int]


def end_offsets(bootstrap: str, topics: list[str]) -> Offsets:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        existing = consumer.topics()
        parts = [TopicPartition(t, p) for t in topics if t in existing
                 for p in sorted(consumer.partitions_for_topic(t) or ())]
        return {(tp.topic, tp.partition): o for tp, o in consumer.end_offsets(parts).items()}
    finally:
        consumer.close()


def samples_since(bootstrap: str, topics: list[str], since: Offsets,
                  server: str) -> list[tuple[str, float, float]]:
    """(topic, ts, value) of ``server``'s samples in ``topics`` after the ``since`` offsets."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=2000)
    try:
        existing = consumer.topics()
        parts = [TopicPartition(t, p) for t in topics if t in existing
                 for p in sorted(consumer.partitions_for_topic(t) or ())]
        if not parts:
            return []
        consumer.assign(parts)
        for tp in parts:
            consumer.seek(tp, since.get((tp.topic, tp.partition), 0))
        end = consumer.end_offsets(parts)
        rows: list[tuple[str, float, float]] = []
        while any(consumer.position(tp) < end[tp] for tp in parts):
            for records in consumer.poll(timeout_ms=1000).values():
                for record in records:
                    rows += [(record.topic, ts, value) for who, ts, value in decode(record.value)
                             if who == server]
        return rows
    finally:
        consumer.close()
