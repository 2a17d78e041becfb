"""Publishing a validated batch: the Publisher protocol and its Kafka implementation.

All of a batch's records are handed to the producer first and only then are their futures
awaited, so one request costs one round of produce requests, not one per record. Topics are
created on first sight through the admin client; the set of known topics is cached.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from apm.model import topic_for
from apm.wire import ENCODING_HEADER
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

    def close(self, timeout_s: float) -> None: ...


def _chunks(lines: list[Line], max_bytes: int) -> list[bytes]:
    if sum(map(len, lines)) + len(lines) - 1 <= max_bytes:
        return ["\n".join(lines).encode()]
    out: list[bytes] = []
    start, size = 0, 0
    for end, line in enumerate(lines):  # the same cut points as apm.wire.encode_chunks
        if end > start and size + len(line) + 1 > max_bytes:
            out.append("\n".join(lines[start:end]).encode())
            start, size = end, 0
        size += len(line) + 1
    out.append("\n".join(lines[start:]).encode())
    return out


def to_records(by_metric: Mapping[str, list[Line]], max_bytes: int) -> dict[str, list[bytes]]:
    """One record per metric (a few if large), byte for byte what apm.wire.encode_chunks
    makes of the same samples."""
    return {topic_for(metric): _chunks(lines, max_bytes) for metric, lines in by_metric.items()}


class KafkaPublisher:
    """kafka-python producer with acks=all. Connections are made lazily and retried on each
    call, so the service starts, and recovers, while Kafka is down."""

    def __init__(self, settings: IngestSettings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._count_lock = threading.Lock()
        self._producer: Any = None
        self._admin: Any = None
        self._known: set[str] = set()
        self._inflight = 0
        self._turn = 0
        self._inflight_bytes = 0
        self._closed = False

    # --- connections -----------------------------------------------------------------------
    def _common(self) -> dict[str, Any]:
        s = self.settings
        return {"bootstrap_servers": s.kafka_bootstrap.split(","),
                "bootstrap_timeout_ms": s.kafka_timeout_ms,
                "reconnect_backoff_max_ms": 1000}

    def _get_producer(self) -> Any:
        if self._producer is None:
            from kafka import KafkaProducer

            s = self.settings
            # A busy broker can take seconds over a produce request of hundreds of
            # partitions; timing it out early only closes the connection and resends it all.
            self._producer = KafkaProducer(
                **self._common(), acks="all", request_timeout_ms=s.produce_timeout_ms,
                linger_ms=s.linger_ms, batch_size=s.batch_bytes,
                max_block_ms=s.max_block_ms,
                max_request_size=max(s.record_max_bytes * 2, 1024 * 1024),
                delivery_timeout_ms=max(s.produce_timeout_ms + s.linger_ms, 120_000))
        return self._producer

    def _get_admin(self) -> Any:
        if self._admin is None:
            from kafka import KafkaAdminClient

            self._admin = KafkaAdminClient(**self._common(),
                                           request_timeout_ms=self.settings.kafka_timeout_ms)
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
        missing = [t for t in topics if t not in self._known]
        if not missing:
            return
        from kafka.errors import KafkaError, TopicAlreadyExistsError

        s = self.settings
        with self._lock:
            try:
                admin = self._get_admin()
                missing = [t for t in missing if t not in self._known]
                if not missing:
                    return
                spec = {"num_partitions": s.topic_partitions,
                        "replication_factor": s.topic_replication,
                        "configs": {"retention.ms": str(int(s.topic_retention_s * 1000))}}
                response = admin.create_topics({t: dict(spec) for t in missing},
                                               timeout_ms=s.kafka_timeout_ms, raise_errors=False,
                                               wait_for_metadata=True)
            except (KafkaError, OSError) as exc:
                self._drop_admin()
                raise PublishUnavailable(f"Kafka unavailable while creating topics: {exc}") \
                    from exc
            for entry in response.get("topics", []):
                code = entry.get("error_code", 0)
                if code and code != TopicAlreadyExistsError.errno:
                    raise PublishUnavailable(f"creating topic {entry.get('name')} failed: "
                                             f"{entry.get('error_message') or code}")
            self._known.update(missing)
            log.info("created %d topic(s), e.g. %s", len(missing), missing[0])

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
            if self._inflight_bytes and self._inflight_bytes + size > self.settings.buffer_bytes:
                raise PublishUnavailable(
                    f"the producer's buffer is full ({self._inflight_bytes} bytes waiting "
                    f"for Kafka, limit {self.settings.buffer_bytes})")

    def publish(self, records: Mapping[str, Sequence[bytes]]) -> None:
        from kafka.errors import KafkaError

        if self._closed:
            raise PublishUnavailable("the service is shutting down")
        self._reserve(records)
        self.ensure_topics(records)
        deadline = time.monotonic() + self.settings.publish_timeout_s
        futures = []
        try:
            with self._lock:
                producer = self._get_producer()
            headers = [ENCODING_HEADER]
            # All records of a request go to the same partition index, rotating per request:
            # fewer, fuller batches than the sticky partitioner's per-record choice.
            self._turn += 1
            for topic, values in records.items():
                partitions = producer.partitions_for(topic)
                partition = self._turn % len(partitions) if partitions else None
                for value in values:
                    future = producer.send(topic, value=value, headers=headers,
                                           partition=partition)
                    with self._count_lock:
                        self._inflight += 1
                        self._inflight_bytes += len(value)
                    future.add_both(self._done, len(value))
                    futures.append(future)
            for future in futures:
                future.get(timeout=max(0.0, deadline - time.monotonic()))
        except (KafkaError, OSError) as exc:
            raise PublishUnavailable(f"Kafka did not acknowledge the batch: "
                                     f"{type(exc).__name__}: {exc}") from exc

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

    def close(self, timeout_s: float) -> None:
        self._closed = True
        with self._lock:
            if self._producer is not None:
                self._producer.flush(timeout=timeout_s)
                self._producer.close(timeout=timeout_s)
                self._producer = None
            self._drop_admin()
