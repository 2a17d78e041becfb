"""A validated batch's samples as Kafka records: one per metric (a few if large), in the
``apm.wire`` encoding, keyed by the metric's topic (``apm.model.topic_for``). Kept apart from
the publisher so that the route and the encoding tests need no Kafka client."""

from __future__ import annotations

from collections.abc import Mapping

from apm.model import topic_for
from ingest.validate import Line

__all__ = ["to_records"]


def _chunks(lines: list[Line], max_bytes: int) -> list[bytes]:
    if sum(map(len, lines)) + len(lines) - 1 <= max_bytes:
        return ["\n".join(lines).encode()]
    out: list[bytes] = []
    start, size = 0, -1  # size: the joined length of lines[start:end]
    for end, line in enumerate(lines):  # the same cut points as apm.wire.encode_chunks
        if end > start and size + 1 + len(line) > max_bytes:
            out.append("\n".join(lines[start:end]).encode())
            start, size = end, -1
        size += 1 + len(line)
    out.append("\n".join(lines[start:]).encode())
    return out


def to_records(by_metric: Mapping[str, list[Line]], max_bytes: int) -> dict[str, list[bytes]]:
    """One record per metric (a few if large), byte for byte what apm.wire.encode_chunks
    makes of the same samples."""
    return {topic_for(metric): _chunks(lines, max_bytes) for metric, lines in by_metric.items()}
