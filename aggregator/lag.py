"""Consumer lag per topic: Kafka's end offsets minus the offsets the job has processed.

The processed offsets come from the running query's progress, or, when the job is not running
(``apm aggregator status``), from its checkpoint: ``offsets/N`` holds the offsets batch N read
up to, and ``commits/N`` exists once batch N finished.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from apm.kafka import Offsets, end_offsets, new_consumer, start_offsets, topic_partitions
from apm.kafka_tls import KafkaTls

__all__ = ["KafkaOffsets", "checkpoint_offsets", "lag_per_topic", "parse_source_offsets"]


def parse_source_offsets(raw: str | Mapping[str, Any] | None) -> Offsets:
    """Spark's Kafka source offset JSON ``{"topic": {"0": 12}}`` -> {(topic, 0): 12}."""
    if raw is None:
        return {}
    data = json.loads(raw) if isinstance(raw, str) else raw
    return {
        (topic, int(part)): int(off) for topic, parts in data.items() for part, off in parts.items()
    }


def checkpoint_offsets(checkpoint: Path) -> Offsets:
    """The offsets of the newest committed batch in a streaming checkpoint ({} if none)."""
    commits = checkpoint / "commits"
    done = (
        sorted((int(p.name) for p in commits.glob("[0-9]*") if p.name.isdigit()), reverse=True)
        if commits.is_dir()
        else []
    )
    for batch in done:
        path = checkpoint / "offsets" / str(batch)
        try:
            lines = path.read_text().splitlines()
        except OSError:
            continue
        # v1, the batch metadata, then one line per source; ours has one source.
        if len(lines) >= 3:
            return parse_source_offsets(lines[2])
    return {}


def lag_per_topic(
    end: Mapping[tuple[str, int], int],
    start: Mapping[tuple[str, int], int],
    processed: Mapping[tuple[str, int], int],
) -> dict[str, int]:
    """Per topic, the sum over partitions of end - processed; a partition the job has not read
    yet counts from its start offset."""
    out: dict[str, int] = {}
    for key, end_offset in end.items():
        done = processed.get(key, start.get(key, 0))
        out[key[0]] = out.get(key[0], 0) + max(0, end_offset - done)
    return out


class KafkaOffsets:
    """Start and end offsets of the metric topics a job reads, from the broker."""

    def __init__(self, bootstrap: str, tls: KafkaTls | None = None) -> None:
        self._consumer = new_consumer(bootstrap, tls=tls, request_timeout_ms=15000)

    def partitions(self, topics: Iterable[str]) -> list[Any]:
        """The partitions of ``topics``; a topic that does not exist (yet) has none."""
        return topic_partitions(self._consumer, topics)

    def start_end(self, topics: Iterable[str]) -> tuple[Offsets, Offsets]:
        topics = list(topics)
        begin = start_offsets(self._consumer, topics)
        if not begin:
            return {}, {}
        return begin, end_offsets(self._consumer, topics)

    def records_before(self, since: Mapping[str, float]) -> dict[str, int]:
        """Per topic, how many retained records arrived before its ``since`` (epoch s): what a
        job reads and drops when the topic joins its subscription (plan.admit). A topic that
        does not exist has none."""
        from kafka import TopicPartition

        begin, end = self.start_end(since)
        if not begin:
            return {}
        first_new = self._consumer.offsets_for_times(
            {TopicPartition(*key): max(0, int(since[key[0]] * 1000)) for key in begin}
        )
        out: dict[str, int] = {}
        for key, start in begin.items():
            found = first_new.get(TopicPartition(*key))
            out[key[0]] = (
                out.get(key[0], 0) + (found.offset if found is not None else end[key]) - start
            )
        return out

    def lag(
        self, processed: Mapping[tuple[str, int], int], topics: Iterable[str]
    ) -> dict[str, int]:
        start, end = self.start_end(topics)
        return lag_per_topic(end, start, processed)

    def close(self) -> None:
        self._consumer.close()
