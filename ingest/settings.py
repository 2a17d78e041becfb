"""IngestSettings: every knob of the ingest service, from ``APM_INGEST_*`` or explicit args."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings

from apm.model import TOPIC_PARTITIONS
from apm.settings import env_config, shared

__all__ = ["IngestSettings"]

MIB = 1024 * 1024


class IngestSettings(BaseSettings):
    model_config = env_config("APM_INGEST_")

    host: str = "127.0.0.1"
    port: int = 8080
    # APM_INGEST_KAFKA_BOOTSTRAP, else the shared APM_KAFKA_BOOTSTRAP (apm.settings).
    kafka_bootstrap: str = shared("APM_INGEST_", "kafka_bootstrap")
    keys_file: Path | None = Field(
        default=None,
        description="API keys (salted hashes); without it every request is refused with 401",
    )

    # Request limits. The decompressed limit guards against gzip bombs.
    max_body_bytes: int = 5 * MIB
    max_decompressed_bytes: int = 50 * MIB
    max_samples: int = 200_000
    max_future_s: float = 300.0

    # Topics: created on first sight; samples older than the retention are refused. Partitions
    # are sized by volume (apm.model.partitions_for): one suffices for the design's 10,000
    # servers. A topic keeps the count it was created with.
    topic_partitions: int = Field(default=TOPIC_PARTITIONS, ge=1)
    topic_replication: int = 1
    topic_retention_s: float = 24 * 3600.0

    # Concurrent requests' samples of a metric share records: a request waits up to
    # linger_ms for others (0: no wait, a record per metric per request), and a window that
    # reaches linger_max_bytes goes out at once. Cuts records/s (the CPU bound) by the
    # concurrency.
    linger_ms: float = Field(default=10.0, ge=0)
    linger_max_bytes: int = 8 * MIB

    # Producer. acks=all always; its own linger lets windows share produce requests.
    record_max_bytes: int = 512 * 1024
    producer_linger_ms: int = 2
    batch_bytes: int = 1 * MIB
    buffer_bytes: int = 64 * MIB
    max_block_ms: int = 2000
    publish_timeout_s: float = 10.0
    kafka_timeout_ms: int = 3000  # admin and bootstrap requests
    produce_timeout_ms: int = 30_000  # one produce request
    retry_after_s: int = 5
    shutdown_timeout_s: float = 30.0

    # issue 14: topics. New topics are created by one background thread; a request waits for
    # its own topics only (up to publish_timeout_s) and at most topic_create_max_pending
    # topics wait to be created at once (503 beyond). A topic Kafka refused is not asked for
    # again for retry_after_s. Cardinality: at most new_topics_per_minute new metric names
    # (a burst of that many, refilled evenly) and new_topics_max in the process's life;
    # beyond, the batch is refused (429 with Retry-After, or 422 past the total cap).
    # /readyz answers from the state the last probe or publish left, probed every
    # ready_probe_s off the request path. close_timeout_s bounds the producer's flush and
    # close at shutdown, whether or not Kafka answers.
    topic_create_max_pending: int = Field(default=1000, ge=1)
    new_topics_per_minute: int = Field(default=600, ge=1)
    new_topics_max: int = Field(default=10_000, ge=1)
    ready_probe_s: float = Field(default=2.0, gt=0)
    close_timeout_s: float = Field(default=5.0, ge=0)
