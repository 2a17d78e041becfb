"""IngestSettings: every knob of the ingest service, from ``APM_INGEST_*`` or explicit args."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from apm.kafka_tls import WithKafkaTls
from apm.model import TOPIC_PARTITIONS
from apm.settings import env_config, shared
from apm.tls import check_server_files

__all__ = ["IngestSettings"]

MIB = 1024 * 1024


class IngestSettings(WithKafkaTls):
    model_config = env_config("APM_INGEST_")

    host: str = "127.0.0.1"
    port: int = 8080
    # APM_INGEST_KAFKA_BOOTSTRAP, else the shared APM_KAFKA_BOOTSTRAP (apm.settings).
    kafka_bootstrap: str = shared("APM_INGEST_", "kafka_bootstrap")
    # TLS to the brokers: APM_INGEST_KAFKA_TLS_* else APM_KAFKA_TLS_* (apm.kafka_tls).
    keys_file: Path | None = Field(
        default=None,
        description="API keys (salted hashes); without it every request is refused with 401",
    )

    # HTTPS (docs/security.md): with tls_cert and tls_key the service speaks only HTTPS; the
    # pair is reloaded within tls_reload_s of a change, open connections kept. With
    # tls_client_ca every client must present a certificate from that CA at the handshake,
    # and its API key as well ("beside_key"), or the certificate stands in for the key
    # ("instead_of_key"). Without them: plain HTTP (make run, on loopback).
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_client_ca: Path | None = None
    tls_client_auth: Literal["beside_key", "instead_of_key"] = "beside_key"
    tls_reload_s: float = Field(default=10.0, gt=0)

    # Request limits (docs/ingest.md, Limits). Bytes alone do not bound a request's cost:
    # 50 MiB of `{},` parse into 17M objects (~1.5 GB), so JSON values are counted by a byte
    # scan before parsing. 5 values per sample fit any valid batch of max_samples samples.
    max_body_bytes: int = Field(default=5 * MIB, ge=1)
    max_decompressed_bytes: int = Field(default=16 * MIB, ge=1)
    max_json_values: int = Field(default=1_048_576, ge=1)
    max_samples: int = Field(default=200_000, ge=1)
    max_future_s: float = 300.0
    # Per-snapshot verdict: bad snapshots are left out and listed (the first
    # max_listed_rejections of them) in the 202; past max_rejected_snapshots the batch is 422.
    max_listed_rejections: int = Field(default=100, ge=0)
    max_rejected_snapshots: int = Field(default=1000, ge=0)
    # The validator's caches of server and metric names that passed the rules, each bounded
    # in bytes (ingest.namecache; apm_ingest_cache_bytes{cache="servers"|"metrics"}).
    names_seen_max_bytes: int = Field(default=8 * MIB, ge=1)

    # Work in flight (docs/ingest.md, Load shedding and the answer deadline). A request past
    # max_inflight gets 503 at once; parsing runs on parse_threads threads off the event
    # loop; every POST is answered within answer_timeout_s of its headers (the agent's
    # timeout is set above it). Publishes keep counting until their thread returns, even
    # when the request was already answered 503 at the deadline.
    max_inflight: int = Field(default=64, ge=1)
    parse_threads: int = Field(default=2, ge=1)
    answer_timeout_s: float = Field(default=4.0, gt=0)

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
    # The publisher's own wait for acks; below answer_timeout_s so that its 503 names the
    # cause (parsing and topic creation come first).
    publish_timeout_s: float = Field(default=3.0, gt=0)
    kafka_timeout_ms: int = 3000  # admin and bootstrap requests
    produce_timeout_ms: int = 30_000  # one produce request
    retry_after_s: int = Field(default=5, ge=0)
    # How often the API key file is re-checked (a stat; re-read only when it changed).
    keys_recheck_s: float = Field(default=1.0, ge=0)
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
    # issue 37: host tags. The tags last published per server (ingest.tags), at most this many
    # bytes of them; a server forgotten has its tags published again (idempotent: compacted).
    tags_seen_max_bytes: int = Field(default=32 * MIB, ge=1)
    close_timeout_s: float = Field(default=5.0, ge=0)

    @model_validator(mode="after")
    def _tls_pair(self) -> IngestSettings:
        check_server_files("APM_INGEST_", self.tls_cert, self.tls_key, self.tls_client_ca)
        if self.tls_client_auth == "instead_of_key" and self.tls_client_ca is None:
            # Without a client CA nothing is verified at the handshake: every request would
            # be let in without a key.
            raise ValueError(
                "APM_INGEST_TLS_CLIENT_AUTH=instead_of_key needs APM_INGEST_TLS_CLIENT_CA "
                "(the CA whose client certificates stand in for the API key)"
            )
        return self
