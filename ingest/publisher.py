"""Publishing a validated batch: the Publisher protocol and its Kafka implementation.

A batch's records join those of concurrent requests for ``linger_ms`` (ingest.linger) and
are sent as shared records; only then are the futures awaited, so one request costs a share
of one round of produce requests, not one record per metric. Topics are created on first
sight through the admin client, shaped by apm.kafka.TopicSpec; the set of known topics is
cached.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from apm.kafka import TopicError, TopicSpec, new_admin, new_producer
from apm.kafka import ensure_topics as ensure_kafka_topics
from apm.model import topic_for
from apm.wire import ENCODING_HEADER
from ingest.linger import Coalescer
from ingest.settings import IngestSettings
from ingest.validate import Line

__all__ = ["KafkaPublisher", "PublishUnavailable", "Publisher", "to_records"]

log = logging.getLogger(__name__)


class PublishUnavailable(Exception):
    """Kafka cannot take the batch now (down, timing out, or the buffer is full): 503."""


class Publisher(Protocol):
    def publish(self, records: Mapping[str, Sequence[bytes]]) -> None:
        """Sends every record (topic -> values) and returns once all are acknowledged;
        raises PublishUnavailable otherwise."""
        ...

    def ready(self) -> bool: ...

    def queue_depth(self) -> int:
        """Records handed to the producer and not yet acknowledged or failed."""
        ...

    def lingering(self) -> int:
        """Requests waiting in the open linger window, not yet handed to the producer."""
        ...

    def close(self, timeout_s: float) -> None: ...


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


class KafkaPublisher:
    """kafka-python producer with acks=all. Connections are made lazily and retried on each
    call, so the service starts, and recovers, while Kafka is down. ``producer`` and
    ``admin`` replace the kafka-python clients (unit tests of the coalescing)."""

    def __init__(self, settings: IngestSettings, producer: Any = None, admin: Any = None) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._count_lock = threading.Lock()
        self._producer: Any = producer
        self._admin: Any = admin
        self._known: set[str] = set()
        self._inflight = 0
        self._inflight_bytes = 0
        self._closed = False
        self._headers = [ENCODING_HEADER]
        self._spec = TopicSpec(
            partitions=settings.topic_partitions,
            replication=settings.topic_replication,
            retention_s=settings.topic_retention_s,
        )
        self._coalescer = Coalescer(
            self._send,
            settings.linger_ms / 1000,
            settings.record_max_bytes,
            settings.linger_max_bytes,
        )

    # --- connections -----------------------------------------------------------------------
    def _common(self) -> dict[str, Any]:
        return {
            "bootstrap_timeout_ms": self.settings.kafka_timeout_ms,
            "reconnect_backoff_max_ms": 1000,
        }

    def _get_producer(self) -> Any:
        if self._producer is None:
            s = self.settings
            # A busy broker can take seconds over a produce request of hundreds of
            # partitions; timing it out early only closes the connection and resends it all.
            self._producer = new_producer(
                s.kafka_bootstrap,
                **self._common(),
                acks="all",
                request_timeout_ms=s.produce_timeout_ms,
                linger_ms=s.producer_linger_ms,
                batch_size=s.batch_bytes,
                max_block_ms=s.max_block_ms,
                max_request_size=max(s.record_max_bytes * 2, 1024 * 1024),
                delivery_timeout_ms=max(s.produce_timeout_ms + s.producer_linger_ms, 120_000),
            )
        return self._producer

    def _get_admin(self) -> Any:
        if self._admin is None:
            self._admin = new_admin(
                self.settings.kafka_bootstrap,
                **self._common(),
                request_timeout_ms=self.settings.kafka_timeout_ms,
            )
            self._known.update(t for t in self._admin.list_topics() if t.startswith("apm."))
        return self._admin

    def _drop_admin(self) -> None:
        if self._admin is not None:
            try:
                self._admin.close()
            except Exception:  # closing a broken client may fail; it is dropped anyway
                log.debug("closing the admin client failed", exc_info=True)
            self._admin = None

    # --- topics ------------------------------------------------------------------------------
    def ensure_topics(self, topics: Iterable[str]) -> None:
        """Creates the topics not known yet with the platform's TopicSpec (apm.kafka), sized
        by the settings; raises PublishUnavailable if Kafka is down or refuses one."""
        missing = [t for t in topics if t not in self._known]
        if not missing:
            return
        from kafka.errors import KafkaError

        with self._lock:
            try:
                admin = self._get_admin()
                missing = [t for t in missing if t not in self._known]
                if not missing:
                    return
                ensure_kafka_topics(
                    admin, missing, self._spec, timeout_ms=self.settings.kafka_timeout_ms
                )
            except TopicError as exc:
                raise PublishUnavailable(str(exc)) from exc
            except (KafkaError, OSError) as exc:
                self._drop_admin()
                raise PublishUnavailable(f"Kafka unavailable while creating topics: {exc}") from exc
            self._known.update(missing)

    # --- publishing ----------------------------------------------------------------------------
    def _done(self, size: int, _result: object) -> None:
        with self._count_lock:
            self._inflight -= 1
            self._inflight_bytes -= size

    def _reserve(self, records: Mapping[str, Sequence[bytes]]) -> None:
        # kafka-python 3 has no bounded buffer (buffer_memory is gone), so the bound is
        # ours: a batch that would push unacknowledged bytes past it is refused whole.
        size = sum(len(v) for values in records.values() for v in values)
        with self._count_lock:
            waiting = self._inflight_bytes + self._coalescer.pending_bytes
            if waiting and waiting + size > self.settings.buffer_bytes:
                raise PublishUnavailable(
                    f"the producer's buffer is full ({waiting} bytes waiting "
                    f"for Kafka, limit {self.settings.buffer_bytes})"
                )

    def _send(self, topic: str, value: bytes, turn: int) -> Any:
        """Hands one record to the producer (called by the coalescer for each record)."""
        with self._lock:
            producer = self._get_producer()
        # All records of a window go to the same partition index, rotating per window:
        # fewer, fuller batches than the sticky partitioner's per-record choice.
        partitions = producer.partitions_for(topic)
        partition = turn % len(partitions) if partitions else None
        future = producer.send(topic, value=value, headers=self._headers, partition=partition)
        with self._count_lock:
            self._inflight += 1
            self._inflight_bytes += len(value)
        future.add_both(self._done, len(value))
        return future

    def publish(self, records: Mapping[str, Sequence[bytes]]) -> None:
        from kafka.errors import KafkaError

        if self._closed:
            raise PublishUnavailable("the service is shutting down")
        self._reserve(records)
        self.ensure_topics(records)
        try:
            self._coalescer.publish(records, self.settings.publish_timeout_s)
        except (KafkaError, OSError) as exc:
            raise PublishUnavailable(
                f"Kafka did not acknowledge the batch: {type(exc).__name__}: {exc}"
            ) from exc

    # --- health and shutdown -------------------------------------------------------------------
    def ready(self) -> bool:
        from kafka.errors import KafkaError

        with self._lock:
            try:
                self._get_admin().list_topics()
                self._get_producer()
                return True
            except (KafkaError, OSError):
                self._drop_admin()
                return False

    def queue_depth(self) -> int:
        return self._inflight

    def lingering(self) -> int:
        return self._coalescer.lingering()

    def close(self, timeout_s: float) -> None:
        self._closed = True
        self._coalescer.flush()  # a window still lingering goes out now
        with self._lock:
            if self._producer is not None:
                self._producer.flush(timeout=timeout_s)
                self._producer.close(timeout=timeout_s)
                self._producer = None
            self._drop_admin()
