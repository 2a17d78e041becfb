"""Kafka as every part of the platform reaches it: clients from one bootstrap string, the
metric topics' shape, and the partitions' offsets.

Why one module: the clients were built in nine places and topics were created by three
functions, so the load generator and the benchmarks made metric topics without the ingest's
retention, and the tests read topics two ways. Whoever creates a metric topic first (the
ingest, ``apm loadgen --direct-kafka``, a benchmark) now gives it the same ``TopicSpec``.

Every client gets the TLS of ``apm.kafka_tls`` (the caller's, else the shared ``APM_KAFKA_*``
variables), and one that cannot make a TLS handshake with a broker says why
(``KafkaTlsError``) instead of kafka-python's bare timeout.

kafka-python is imported inside the functions: ``import apm.kafka`` costs nothing, and the agent,
which has no Kafka extra, can import the contract whole.

Behaviour at the edges, checked on the real broker (tests/apm/test_kafka.py):

- ``create_topics`` answers per topic: one that already exists (a concurrent creator won)
  comes back with ``TopicAlreadyExistsError`` while the others of the request are created;
- a broker accepts ``min.insync.replicas`` above the replication factor and then refuses every
  ``acks=all`` write, so the spec sets it only for replicated topics;
- right after creation a topic may have no leader yet: ``ensure_topics`` waits until every
  partition of the topics it asked for has one;
- ``end_offsets`` of a partition the broker does not know blocks until its timeout; the
  readers below look the partitions up first and skip topics that do not exist.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from apm.kafka_tls import KafkaTls, KafkaTlsError, handshake_error, kafka_tls
from apm.model import TOPIC_PARTITIONS

__all__ = [
    "TOPIC_RETENTION_S",
    "Offsets",
    "TopicError",
    "TopicSpec",
    "client_config",
    "create_topics",
    "delete_topics",
    "end_offsets",
    "ensure_topics",
    "new_admin",
    "new_consumer",
    "new_producer",
    "start_offsets",
    "topic_partitions",
]

log = logging.getLogger(__name__)

Offsets = dict[tuple[str, int], int]

# How long a metric topic keeps raw samples: replayable for a day, and the ingest refuses
# samples older than its topics' retention (IngestSettings.topic_retention_s, the same day).
TOPIC_RETENTION_S = 24 * 3600.0


# --- clients ---------------------------------------------------------------------------------


def client_config(
    bootstrap: str, client_id: str | None = None, *, tls: KafkaTls | None = None, **extra: Any
) -> dict[str, Any]:
    """The keyword arguments of any kafka-python client for ``bootstrap``, a comma-separated
    ``host:port`` list (the platform's ``*_KAFKA_BOOTSTRAP`` settings), with ``tls`` (None:
    the shared ``APM_KAFKA_*`` TLS settings, apm.kafka_tls), plus ``extra``."""
    servers = [s.strip() for s in bootstrap.split(",") if s.strip()]
    if not servers:
        raise ValueError(f"no Kafka bootstrap server in {bootstrap!r}")
    config: dict[str, Any] = {"bootstrap_servers": servers}
    if client_id is not None:
        config["client_id"] = client_id
    return {**config, **(tls if tls is not None else kafka_tls()).client_options(), **extra}


def _connected(
    make: Any, bootstrap: str, client_id: str | None, tls: KafkaTls | None, extra: Any
) -> Any:
    """``make`` with ``client_config``'s arguments; a client that cannot reach a broker over
    TLS raises ``KafkaTlsError`` naming the handshake's failure (kafka-python only logs it
    and raises a bare timeout)."""
    from kafka.errors import KafkaError

    tls = tls if tls is not None else kafka_tls()
    config = client_config(bootstrap, client_id, tls=tls, **extra)
    try:
        return make(**config)
    except KafkaError as exc:
        server = config["bootstrap_servers"][0]
        if not tls.enabled or (why := handshake_error(server, tls)) is None:
            raise
        raise KafkaTlsError(
            f"Kafka at {server} over TLS: {why} (check the KAFKA_TLS_CA, KAFKA_TLS_CERT and "
            "KAFKA_TLS_KEY settings, docs/security.md)"
        ) from exc


def new_admin(
    bootstrap: str, client_id: str | None = None, *, tls: KafkaTls | None = None, **extra: Any
) -> Any:
    """A ``KafkaAdminClient``; connects (and may raise) at once."""
    from kafka import KafkaAdminClient

    return _connected(KafkaAdminClient, bootstrap, client_id, tls, extra)


def new_producer(
    bootstrap: str, client_id: str | None = None, *, tls: KafkaTls | None = None, **extra: Any
) -> Any:
    """A ``KafkaProducer``; ``acks``, batching and timeouts are the caller's."""
    from kafka import KafkaProducer

    return _connected(KafkaProducer, bootstrap, client_id, tls, extra)


def new_consumer(
    bootstrap: str,
    *topics: str,
    client_id: str | None = None,
    tls: KafkaTls | None = None,
    **extra: Any,
) -> Any:
    """A ``KafkaConsumer`` (subscribed to ``topics`` if any). It commits no offsets unless
    ``enable_auto_commit=True`` is passed: the platform's readers only look."""
    from kafka import KafkaConsumer

    return KafkaConsumer(
        *topics,
        **client_config(bootstrap, client_id, tls=tls, **{"enable_auto_commit": False, **extra}),
    )


@contextmanager
def _client(given: Any, make: Any) -> Iterator[Any]:
    """``given`` itself if it is a client, else a client made from the bootstrap string,
    closed on exit."""
    if not isinstance(given, str):
        yield given
        return
    client = make(given)
    try:
        yield client
    finally:
        client.close()


# --- topics ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopicSpec:
    """The shape of a metric topic. ``min.insync.replicas`` is set only when ``replication`` >
    1: the broker accepts a value above the replication factor and then refuses every
    ``acks=all`` write, so a one-broker cluster must not get one. ``min_insync`` None means
    min(2, replication): with ``acks=all``, an acknowledged sample survives the loss of a
    broker (docs/deploy.md). ``compact`` makes a compacted topic (``cleanup.policy=compact``:
    the last record of each key is kept, whatever its age; apm.tags.TAGS_TOPIC), where
    ``retention_s`` does not apply."""

    partitions: int = TOPIC_PARTITIONS
    replication: int = 1
    retention_s: float | None = TOPIC_RETENTION_S  # None: the broker's default
    min_insync: int | None = None
    compact: bool = False

    def __post_init__(self) -> None:
        if self.partitions < 1 or self.replication < 1:
            raise ValueError(
                f"partitions and replication must be >= 1, got "
                f"{self.partitions} and {self.replication}"
            )
        if self.retention_s is not None and not self.retention_s > 0:
            raise ValueError(f"retention_s must be > 0 (or None), got {self.retention_s!r}")
        if self.min_insync is not None and not 1 <= self.min_insync <= self.replication:
            raise ValueError(
                f"min_insync must be within 1..replication ({self.replication}), "
                f"got {self.min_insync}"
            )

    def configs(self) -> dict[str, str]:
        """The topic configs, as strings (what CreateTopics carries)."""
        out: dict[str, str] = {}
        if self.compact:
            out["cleanup.policy"] = "compact"
        elif self.retention_s is not None:
            out["retention.ms"] = str(int(self.retention_s * 1000))
        if self.replication > 1:
            insync = self.min_insync if self.min_insync is not None else min(2, self.replication)
            out["min.insync.replicas"] = str(insync)
        return out

    def request(self) -> dict[str, Any]:
        """One topic's entry of ``KafkaAdminClient.create_topics`` in its dict form."""
        return {
            "num_partitions": self.partitions,
            "replication_factor": self.replication,
            "configs": self.configs(),
        }


class TopicError(RuntimeError):
    """The broker refused to create a topic for another reason than that it exists."""

    def __init__(self, topic: str, code: int, message: str | None) -> None:
        super().__init__(f"creating topic {topic} failed: {message or f'error code {code}'}")
        self.topic, self.code = topic, code


def create_topics(
    admin: Any,
    topics: Iterable[str],
    spec: TopicSpec | None = None,
    *,
    timeout_ms: int | None = None,
    wait_ms: int = 10_000,
) -> tuple[list[str], dict[str, TopicError]]:
    """Asks ``admin`` to create ``topics`` with ``spec`` in one request, without listing the
    cluster's topics first, and waits up to ``wait_ms`` until every partition of those that
    exist now has a leader. Returns (the topics it created, {topic: the broker's refusal});
    the others existed already. Connection failures and a wait that runs out raise
    kafka-python's errors (KafkaError) or OSError."""
    from kafka.errors import TopicAlreadyExistsError

    spec = spec or TopicSpec()
    wanted = list(dict.fromkeys(topics))
    if not wanted:
        return [], {}
    response = admin.create_topics(
        {t: spec.request() for t in wanted}, timeout_ms=timeout_ms, raise_errors=False
    )
    created, there, refused = [], [], {}
    for entry in response.get("topics", []):
        name, code = entry["name"], entry.get("error_code", 0)
        if not code:
            created.append(name)
        elif code == TopicAlreadyExistsError.errno:
            there.append(name)
        else:
            refused[name] = TopicError(name, code, entry.get("error_message"))
    if created or there:
        admin.wait_for_topics([*created, *there], timeout_ms=wait_ms)
    if created:
        log.info("created %d topic(s), e.g. %s", len(created), created[0])
    for topic in wanted:  # a broker that left one out answered nothing about it
        if topic not in created and topic not in there and topic not in refused:
            refused[topic] = TopicError(topic, -1, "no answer from the broker")
    return created, refused


def ensure_topics(
    admin_or_bootstrap: Any,
    topics: Iterable[str],
    spec: TopicSpec | None = None,
    *,
    timeout_ms: int | None = None,
    wait_ms: int = 10_000,
) -> list[str]:
    """Creates those of ``topics`` that do not exist with ``spec`` (default ``TopicSpec()``),
    in one request, and waits up to ``wait_ms`` until every partition of them has a leader.
    Returns the topics it created. Existing topics are kept as they are, and a topic another
    client created meanwhile counts as existing. Raises ``TopicError`` for the first topic the
    broker refused, after the others were created; connection failures raise kafka-python's
    errors (KafkaError) or OSError."""
    wanted = list(dict.fromkeys(topics))
    if not wanted:
        return []
    with _client(admin_or_bootstrap, new_admin) as admin:
        existing = set(admin.list_topics())
        missing = [t for t in wanted if t not in existing]
        if not missing:
            return []
        created, refused = create_topics(
            admin, missing, spec, timeout_ms=timeout_ms, wait_ms=wait_ms
        )
        if refused:
            raise next(iter(refused.values()))
        return created


def delete_topics(admin_or_bootstrap: Any, topics: Iterable[str]) -> list[str]:
    """Deletes those of ``topics`` that exist; returns them."""
    with _client(admin_or_bootstrap, new_admin) as admin:
        existing = set(admin.list_topics())
        doomed = [t for t in dict.fromkeys(topics) if t in existing]
        if doomed:
            admin.delete_topics(doomed)
        return doomed


# --- offsets ---------------------------------------------------------------------------------


def topic_partitions(consumer: Any, topics: Iterable[str]) -> list[Any]:
    """The ``TopicPartition``s of ``topics`` that exist, in order; a topic the broker does not
    know (yet) has none. Unknown topics refresh the consumer's metadata."""
    from kafka import TopicPartition

    return [
        TopicPartition(topic, part)
        for topic in dict.fromkeys(topics)
        for part in sorted(consumer.partitions_for_topic(topic) or ())
    ]


def _offsets(
    which: str, consumer_or_bootstrap: Any, topics: Iterable[str], timeout_ms: int | None
) -> Offsets:
    with _client(consumer_or_bootstrap, new_consumer) as consumer:
        parts = topic_partitions(consumer, topics)
        if not parts:
            return {}
        got = getattr(consumer, which)(parts, timeout_ms=timeout_ms)
        return {(tp.topic, tp.partition): int(offset) for tp, offset in got.items()}


def end_offsets(
    consumer_or_bootstrap: Any, topics: Iterable[str], timeout_ms: int | None = None
) -> Offsets:
    """{(topic, partition): the offset the next record will get} for every partition of the
    ``topics`` that exist. ``timeout_ms`` None: the consumer's ``request_timeout_ms``."""
    return _offsets("end_offsets", consumer_or_bootstrap, topics, timeout_ms)


def start_offsets(
    consumer_or_bootstrap: Any, topics: Iterable[str], timeout_ms: int | None = None
) -> Offsets:
    """{(topic, partition): the offset of the oldest retained record} (the end offset if the
    partition is empty), as ``end_offsets``."""
    return _offsets("beginning_offsets", consumer_or_bootstrap, topics, timeout_ms)
