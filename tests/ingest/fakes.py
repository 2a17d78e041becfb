"""A publisher that keeps what it would send to Kafka, for unit tests of the HTTP layer."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ingest.publisher import PublishUnavailable

__all__ = ["FakePublisher"]


@dataclass
class FakePublisher:
    """Records what would go to Kafka; ``unavailable`` makes it refuse like a down broker."""

    published: list[dict[str, list[bytes]]] = field(default_factory=list)
    tags: list[tuple[bytes, bytes]] = field(default_factory=list)  # keyed tags records
    unavailable: bool = False
    closed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def publish(self, records: Mapping[str, Sequence[bytes]]) -> None:
        if self.unavailable:
            raise PublishUnavailable("Kafka is down (fake)")
        with self.lock:
            self.published.append({t: list(v) for t, v in records.items()})

    def publish_tags(self, records: Sequence[tuple[bytes, bytes]]) -> None:
        if self.unavailable:
            raise PublishUnavailable("Kafka is down (fake)")
        with self.lock:
            self.tags.extend(records)

    def ready(self) -> bool:
        return not self.unavailable

    def queue_depth(self) -> int:
        return 0

    def lingering(self) -> int:
        return 0

    def close(self, timeout_s: float) -> None:
        self.closed = True
