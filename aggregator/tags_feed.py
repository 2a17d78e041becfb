"""Follows the compacted tags topic (``apm.tags.TAGS_TOPIC``) into the driver's
:class:`aggregator.tag_map.TagMap`: read from its start when the job starts, then each
micro-batch up to its end offsets at that moment, through the project's one Kafka place
(:mod:`apm.kafka`). Bounded in time per call (``budget_s``): what is not read then is read by
the next batch. A record that is no tags record is skipped."""

from __future__ import annotations

import logging
import time
from typing import Any

from aggregator.tag_map import TagMap
from apm.tags import TAGS_TOPIC, decode_tags_record

__all__ = ["TagsFeed"]

log = logging.getLogger(__name__)


class TagsFeed:
    def __init__(
        self, bootstrap: str, tags: TagMap, topic: str = TAGS_TOPIC, budget_s: float = 1.0
    ) -> None:
        from apm.kafka import new_consumer

        self.tags = tags
        self.topic = topic
        self.budget_s = budget_s
        self._consumer: Any = new_consumer(bootstrap, consumer_timeout_ms=1000)
        self._parts: list[Any] = []
        self.skipped = 0

    def _assign(self) -> bool:
        """Assigns the topic's partitions (from their start) once it exists."""
        if self._parts:
            return True
        from apm.kafka import topic_partitions

        self._parts = topic_partitions(self._consumer, [self.topic])
        if self._parts:
            self._consumer.assign(self._parts)
            self._consumer.seek_to_beginning(*self._parts)
        return bool(self._parts)

    def catch_up(self, timeout_s: float = 30.0) -> bool:
        """Reads the topic up to its end offsets; True when it got there in ``timeout_s``."""
        if not self._assign():
            return True
        deadline = time.monotonic() + timeout_s
        end = self._consumer.end_offsets(self._parts)
        while any(self._consumer.position(tp) < end[tp] for tp in self._parts):
            if time.monotonic() > deadline:
                return False
            for records in self._consumer.poll(timeout_ms=200).values():
                for record in records:
                    self._apply(record)
        return True

    def start(self, timeout_s: float = 30.0) -> None:
        """The first read, from the topic's start; the versions it finds are known since the
        start (TagMap.known_since_start)."""
        if not self.catch_up(timeout_s):
            log.warning("the tags topic was not read to its end in %.0f s", timeout_s)
        self.tags.known_since_start()

    def refresh(self) -> bool:
        """One batch's read, at most ``budget_s``; True when it reached the end offsets."""
        return self.catch_up(self.budget_s)

    def _apply(self, record: Any) -> None:
        received = int(record.timestamp)
        if record.value is None:
            self.tags.put((record.key or b"").decode("utf-8", "replace"), None, received)
            return
        try:
            server, tags, _ = decode_tags_record(record.value)
        except ValueError:
            self.skipped += 1
            return
        self.tags.put(server, tags, received)

    def close(self) -> None:
        self._consumer.close()
