"""Publishing a validated batch: the Publisher protocol and its Kafka implementation.

A batch's records join those of concurrent requests for ``linger_ms`` (ingest.linger) and
are sent as shared records; only then are the futures awaited, so one request costs a share
of one round of produce requests, not one record per metric. Topics are created on first
sight by ingest.topics' creator thread (shaped by apm.kafka.TopicSpec, new names capped by
its guard); the set of known topics is cached.

Locks: none is held across a wait on Kafka that other requests need. The admin client is used
only by background threads (the topic creator and the readiness probe, under ``_admin_lock``);
request threads take ``_producer_lock`` only to make the producer, and /readyz reads a cached
state (issue 14, items 3 and 8).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from apm.kafka import TopicSpec, create_topics, new_admin, new_producer
from apm.tags import TAGS_TOPIC
from apm.wire import ENCODING_HEADER
from ingest.linger import Coalescer
from ingest.readiness import Readiness
from ingest.records import to_records
from ingest.settings import IngestSettings
from ingest.topics import NewTopics, TopicCreator, TopicsUnavailable

__all__ = ["KafkaPublisher", "PublishUnavailable", "Publisher", "to_records"]

log = logging.getLogger(__name__)


class PublishUnavailable(Exception):
    """Kafka cannot take the batch now (down, timing out, or the buffer is full): 503."""


class Publisher(Protocol):
    def publish(self, records: Mapping[str, Sequence[bytes]]) -> None:
        """Sends every record (topic -> values) and returns once all are acknowledged;
        raises PublishUnavailable otherwise."""
        ...

    def publish_tags(self, records: Sequence[tuple[bytes, bytes]]) -> None:
        """Sends keyed (server, tags) records to the compacted ``apm.tags.TAGS_TOPIC`` and
        returns once all are acknowledged; raises PublishUnavailable otherwise."""
        ...

    def ready(self) -> bool: ...

    def queue_depth(self) -> int:
        """Records handed to the producer and not yet acknowledged or failed."""
        ...

    def lingering(self) -> int:
        """Requests waiting in the open linger window, not yet handed to the producer."""
        ...

    def close(self, timeout_s: float) -> None: ...


class KafkaPublisher:
    """kafka-python producer with acks=all. Connections are made lazily and retried on each
    call, so the service starts, and recovers, while Kafka is down. ``producer`` and
    ``admin`` replace the kafka-python clients (unit tests of the coalescing)."""

    def __init__(self, settings: IngestSettings, producer: Any = None, admin: Any = None) -> None:
        self.settings = settings
        self._producer_lock = threading.Lock()
        self._admin_lock = threading.Lock()
        self._count_lock = threading.Lock()
        self._producer: Any = producer
        self._admin: Any = admin
        self._listed = False
        self._inflight = 0
        self._inflight_bytes = 0
        self._closed = False
        self._headers = [ENCODING_HEADER]
        self._spec = TopicSpec(
            partitions=settings.topic_partitions,
            replication=settings.topic_replication,
            retention_s=settings.topic_retention_s,
        )
        self._tags_spec = TopicSpec(
            partitions=settings.topic_partitions,
            replication=settings.topic_replication,
            compact=True,
        )
        self._topics = TopicCreator(
            self._create_topics,
            settings.topic_create_max_pending,
            refusal_s=settings.retry_after_s,
            guard=NewTopics(settings.new_topics_per_minute, settings.new_topics_max),
        )
        self._coalescer = Coalescer(
            self._send,
            settings.linger_ms / 1000,
            settings.record_max_bytes,
            settings.linger_max_bytes,
        )
        # /readyz: the state the last probe or publish left; probed in the background.
        self._readiness = Readiness(
            self._look, settings.ready_probe_s, settings.kafka_timeout_ms / 1000 + 1
        )

    # --- connections -----------------------------------------------------------------------
    def _common(self) -> dict[str, Any]:
        return {
            "bootstrap_timeout_ms": self.settings.kafka_timeout_ms,
            "tls": self.settings.kafka_tls,
            "reconnect_backoff_max_ms": 1000,
        }

    def _get_producer(self) -> Any:
        if self._producer is not None:
            return self._producer
        with self._producer_lock:
            if self._producer is None:
                if self._closed:
                    raise PublishUnavailable("the service is shutting down")
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

    def _get_admin(self) -> Any:  # with _admin_lock, in a background thread
        if self._admin is None:
            self._admin = new_admin(
                self.settings.kafka_bootstrap,
                **self._common(),
                request_timeout_ms=self.settings.kafka_timeout_ms,
            )
        if not self._listed:  # once: the topics that exist need no create request
            self._topics.known.update(t for t in self._admin.list_topics() if t.startswith("apm."))
            self._listed = True
        return self._admin

    def _drop_admin(self) -> None:  # with _admin_lock
        if self._admin is not None:
            try:
                self._admin.close()
            except Exception:  # closing a broken client may fail; it is dropped anyway
                log.debug("closing the admin client failed", exc_info=True)
            self._admin = None

    # --- topics ------------------------------------------------------------------------------
    def _create_topics(self, topics: list[str]) -> tuple[list[str], Mapping[str, Exception]]:
        """The topic creator's batch (its own thread): one CreateTopics request."""
        from kafka.errors import KafkaError

        with self._admin_lock:
            try:
                admin = self._get_admin()
                wanted = [t for t in topics if t not in self._topics.known]
                created, refused = create_topics(
                    admin,
                    [t for t in wanted if t != TAGS_TOPIC],
                    self._spec,
                    timeout_ms=self.settings.kafka_timeout_ms,
                )
                if TAGS_TOPIC in wanted:  # the one compacted topic, its own spec
                    more, no = create_topics(
                        admin,
                        [TAGS_TOPIC],
                        self._tags_spec,
                        timeout_ms=self.settings.kafka_timeout_ms,
                    )
                    created, refused = created + more, {**refused, **no}
                return created, refused
            except (KafkaError, OSError):
                self._drop_admin()
                self._readiness.healthy = False
                raise

    def ensure_topics(self, topics: Iterable[str], timeout_s: float | None = None) -> None:
        """Makes sure the topics exist (created with the platform's TopicSpec, sized by the
        settings); raises PublishUnavailable if Kafka is down or refuses one, or ApiError
        (422/429) past the cap on new names. Waits only for these topics' creation."""
        wait = self.settings.publish_timeout_s if timeout_s is None else timeout_s
        try:
            self._topics.ensure(topics, wait)
        except TopicsUnavailable as exc:
            raise PublishUnavailable(str(exc)) from exc

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
        started = time.monotonic()
        self._reserve(records)
        self.ensure_topics(records)
        left = self.settings.publish_timeout_s - (time.monotonic() - started)
        try:
            self._coalescer.publish(records, max(0.0, left))
        except (KafkaError, OSError) as exc:
            self._readiness.healthy = False
            raise PublishUnavailable(
                f"Kafka did not acknowledge the batch: {type(exc).__name__}: {exc}"
            ) from exc
        self._readiness.healthy = True

    def publish_tags(self, records: Sequence[tuple[bytes, bytes]]) -> None:
        """Keyed records, sent as they are (not through the linger window: they are few,
        one per server whose tags changed), and waited for up to publish_timeout_s."""
        from kafka.errors import KafkaError

        if self._closed:
            raise PublishUnavailable("the service is shutting down")
        started = time.monotonic()
        self.ensure_topics([TAGS_TOPIC])
        try:
            producer = self._get_producer()
            futures = [producer.send(TAGS_TOPIC, key=k, value=v) for k, v in records]
            for future in futures:
                left = self.settings.publish_timeout_s - (time.monotonic() - started)
                future.get(timeout=max(0.0, left))
        except (KafkaError, OSError) as exc:
            raise PublishUnavailable(f"Kafka did not acknowledge the tags: {exc}") from exc

    # --- health and shutdown -------------------------------------------------------------------
    def ready(self) -> bool:
        """Whether Kafka answered the last probe or publish (ingest.readiness): no lock, no
        I/O, except that the first call waits for the first probe."""
        return self._readiness.ready()

    def probe(self) -> bool:
        """Probes Kafka now and keeps the answer for ready()."""
        return self._readiness.refresh()

    def _look(self) -> bool:
        """One look at Kafka: a metadata request without topics, and the producer made."""
        from kafka.errors import KafkaError

        with self._admin_lock:
            try:
                self._get_admin().describe_cluster()
            except (KafkaError, OSError) as exc:
                log.debug("Kafka probe failed: %s", exc)
                self._drop_admin()
                return False
        try:
            self._get_producer()
        except (KafkaError, OSError, PublishUnavailable) as exc:
            log.debug("making the producer failed: %s", exc)
            return False
        return True

    def queue_depth(self) -> int:
        return self._inflight

    def lingering(self) -> int:
        return self._coalescer.lingering()

    def close(self, timeout_s: float) -> None:
        """Sends what lingers and waits for its acks, for at most ``close_timeout_s`` (and at
        most ``timeout_s``) whether Kafka answers or not; then the clients are closed."""
        from kafka.errors import KafkaError

        deadline = time.monotonic() + min(timeout_s, self.settings.close_timeout_s)
        self._closed = True
        self._readiness.stop()
        self._topics.close()
        self._coalescer.flush()  # a window still lingering goes out now
        producer = self._producer
        if producer is not None:
            try:
                producer.flush(timeout=max(0.0, deadline - time.monotonic()))
            except KafkaError as exc:  # their requests were answered 503 or still wait
                log.warning("records not acknowledged at shutdown: %s", exc)
            producer.close(timeout=max(0.0, deadline - time.monotonic()))
            self._producer = None
        # A probe or a topic creation may still hold the admin client: not waited for.
        if self._admin_lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            try:
                self._drop_admin()
            finally:
                self._admin_lock.release()
