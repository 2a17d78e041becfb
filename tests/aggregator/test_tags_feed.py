"""The driver's follower of the tags topic (aggregator/tags_feed.py) on the real Kafka: the
first read from the topic's start (those versions known since the start), then each batch's
read on to the end offsets, with tombstones, records that are no tags records, a topic that
does not exist yet, and the record's Kafka timestamp as the time it was received."""

from __future__ import annotations

import time

import pytest

from aggregator.tag_map import TagMap
from aggregator.tags_feed import TagsFeed

pytestmark = pytest.mark.integration


def test_the_feed_reads_the_topic_from_its_start_then_on_each_batch(
    kafka_bootstrap, unique_name, own_topics
):
    from apm.kafka import TopicSpec, ensure_topics, new_producer
    from apm.tags import encode_tags_record

    topic = unique_name("tags")
    own_topics.append(topic)
    tags = TagMap()
    feed = TagsFeed(kafka_bootstrap, tags, topic)
    try:
        began = time.monotonic()
        feed.start()  # no topic yet: nothing to read, and no wait for it
        assert feed.refresh() and len(tags) == 0
        assert time.monotonic() - began < 20
        ensure_topics(kafka_bootstrap, [topic], TopicSpec(partitions=2, compact=True))
        producer = new_producer(kafka_bootstrap, acks="all")

        def send(server: str, value: bytes | None) -> int:
            future = producer.send(topic, key=server.encode(), value=value)
            return int(future.get(timeout=30).timestamp)

        first = send("web-1", encode_tags_record("web-1", {"dc": "a"}, 1.0)[1])
        send("web-2", b"not json")
        assert feed.refresh() and feed.skipped == 1
        # Read during the run: from the next window on, none before (the per-window rule)
        assert tags.at("web-1", -(-first // 10_000) * 10, 10) == {"dc": "a"}
        assert tags.at("web-1", first // 10_000 * 10 - 10, 10) == {}
        received = send("web-1", encode_tags_record("web-1", {"dc": "b"}, 2.0)[1])
        send("db-1", encode_tags_record("db-1", {"role": "db"}, 3.0)[1])
        gone = send("db-1", None)  # a tombstone: db-1 has no tags from then on
        before = tags.version
        assert feed.refresh() and tags.version > before
        assert [v.received_ms for v in tags.versions("web-1")][1] == received
        assert tags.at("web-1", -(-received // 10_000) * 10, 10) == {"dc": "b"}
        assert tags.at("db-1", -(-gone // 10_000) * 10, 10) == {}
        producer.close()
    finally:
        feed.close()
    # A job that starts now reads the same from the topic's start, each server's oldest
    # version known since the start (it covers the windows before it too).
    again = TagMap()
    late = TagsFeed(kafka_bootstrap, again, topic)
    try:
        late.start()
    finally:
        late.close()
    assert again.at("web-1", 0, 10) == {"dc": "a"} and len(again) == 2
