"""The aggregator's settings (env prefix ``APM_AGGREGATOR_``); explicit arguments win."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field, field_validator

from apm.kafka_tls import WithKafkaTls
from apm.model import metric_name_error
from apm.query_state import JobScope, parse_shard
from apm.settings import PROJECT_ROOT, env_config, shared
from apm.tags import TAGS_TOPIC

__all__ = ["STATE_LAYOUT", "AggregatorSettings"]

# v1 held per-window sample lists (HDFS state store); v2 summaries + one dedup key per sample
# (RocksDB); v3 summaries + the dedup operator's (metric, server bucket, block) rows.
STATE_LAYOUT = "v3"


class AggregatorSettings(WithKafkaTls):
    model_config = env_config("APM_AGGREGATOR_")

    # APM_AGGREGATOR_KAFKA_BOOTSTRAP, else the shared APM_KAFKA_BOOTSTRAP (apm.settings).
    kafka_bootstrap: str = shared("APM_AGGREGATOR_", "kafka_bootstrap")
    # TLS to the brokers, for the driver and Spark's Kafka source alike:
    # APM_AGGREGATOR_KAFKA_TLS_* else APM_KAFKA_TLS_* (apm.kafka_tls).
    # The job's scope. It reads the topics of the metrics its active queries use, and only
    # those within its scope: --metrics (comma-separated) and/or --shard i/n (crc32(metric)).
    metrics: str = ""
    shard: str = ""
    checkpoint_dir: Path = PROJECT_ROOT / "var" / "aggregator"
    trigger_seconds: float = 2.0
    allowed_lateness_seconds: int = 600
    # Tier buckets one rollup pass rolls at most (aggregator/rollup.py); the rest wait.
    rollup_buckets_per_pass: int = Field(default=200, ge=1)
    # Drop a resent (metric, server, ts) exactly. Its state is one key per distinct sample in
    # the lateness horizon, and at 100k samples/s it was most of the batch time
    # (docs/aggregator.md); turn it off only for sources that never resend. Each setting has
    # its own checkpoint, so switching back resumes the other one from where it stopped.
    dedup: bool = True
    # A BY server query's window is written once when it completes: when the newest event time
    # the job has seen passes the window's end plus this grace (v5, docs/aggregator.md), and
    # again when late data refines it. A server's samples arriving later than the grace after
    # the fleet's newest are such refinements: a second write, never a loss. Needs dedup (the
    # dedup operator holds the windows); without it they are written with every batch.
    server_grace_seconds: float = Field(default=2.0, ge=0)
    # True: a server's open windows are written with every batch instead (the v4 path), for a
    # per-server chart that fills live, at about window / trigger times the writes.
    server_windows_live: bool = False
    starting_offsets: str = "earliest"  # only for a fresh checkpoint
    # Records (not samples; one record holds 1 to ~15,000 samples) per micro-batch; 0 = no
    # cap. A fresh checkpoint over a large backlog would otherwise make one giant first batch.
    # It must stay above the steady record rate x the batch time, or the lag grows for ever:
    # 200 agents x 200 metrics through the ingest write ~6,000 records/s (the ingest's linger
    # coalesces ~7 agents' samples of a metric per record), and with 5,000 the breadth
    # benchmark's lag grew 4,000 records/s; with 50,000 it kept up (docs/BENCHMARKS.md).
    max_offsets_per_trigger: int = 50_000
    # How long the broker may hold a fetch for more data; every partition's range pays it.
    kafka_fetch_wait_ms: int = Field(default=10, ge=0)
    # Tasks that read and decode a micro-batch's Kafka partitions; 0 = one per partition.
    source_tasks: int = Field(default_factory=lambda: os.cpu_count() or 2, ge=0)
    metrics_port: int = 9102  # Prometheus /metrics; 0 = off
    metrics_host: str = "127.0.0.1"
    # Each server's and metric's newest sample, gathered in the windows stream's decode
    # (aggregator/seen.py) and written at most every servers_trigger_seconds.
    track_servers: bool = True
    servers_trigger_seconds: float = 10.0
    status_every_seconds: float = 5.0
    # How long a storage call retries transient failures (timeouts, unavailable, no host)
    # before the stream fails; deterministic refusals are never retried (storage.errors).
    storage_retry_seconds: float = Field(default=60.0, gt=0)
    # A stream that stopped (storage away past the retry deadline, say) is started again from
    # its checkpoint after a backoff from 1 s doubling up to this cap; the job does not exit.
    stream_restart_cap_seconds: float = Field(default=60.0, gt=0)
    # Event time may be ahead of the sample's arrival in Kafka (the record's timestamp) by at
    # most this much; samples further ahead are set aside and counted per metric, so that one
    # host's skewed clock moves the watermark by at most this (docs/aggregator.md, "Skew").
    future_tolerance_seconds: int = Field(default=30, ge=0)
    # Host tags (issue 37): the compacted topic of every server's tags, which the driver
    # follows into a map of at most tags_max_servers servers (a server beyond stays untagged,
    # counted) and tags_max_versions versions a server (docs/aggregator.md, "Host tags").
    tags_topic: str = TAGS_TOPIC
    tags_max_servers: int = Field(default=100_000, ge=1)
    tags_max_versions: int = Field(default=4, ge=1)
    driver_memory: str = "2g"
    # Where the job runs: empty = local mode on this machine (``local[<cores>]``); a cluster
    # manager's URL (``spark://127.0.0.1:17077`` for ``apm cluster up``) makes it an
    # application on that cluster, with ``spark_conf`` (JSON in the environment, e.g.
    # ``{"spark.cores.max": "1", "spark.executor.memory": "768m"}``) sizing its executors.
    spark_master: str = ""
    spark_conf: dict[str, str] = Field(default_factory=dict)
    # The jars Spark loads (comma-separated paths): the Kafka connector and the aggregator's
    # JVM operator. Whoever starts the job hands them in (``apm run`` and ``apm cluster up``
    # from the jar cache; ``apm stack jars`` prints them); under spark-submit, ``--jars`` does.
    jars: str = ""

    @field_validator("metrics")
    @classmethod
    def _metrics_valid(cls, value: str) -> str:
        for name in filter(None, (m.strip() for m in value.split(","))):
            if (err := metric_name_error(name)) is not None:
                raise ValueError(err)
        return value

    @field_validator("shard")
    @classmethod
    def _shard_valid(cls, value: str) -> str:
        parse_shard(value)
        return value

    @field_validator("trigger_seconds", "servers_trigger_seconds")
    @classmethod
    def _positive(cls, value: float) -> float:
        if value <= 0:
            raise ValueError("trigger intervals must be positive")
        return value

    @property
    def jar_list(self) -> list[str]:
        return [j.strip() for j in self.jars.split(",") if j.strip()]

    @property
    def metric_list(self) -> list[str]:
        return [m.strip() for m in self.metrics.split(",") if m.strip()]

    @property
    def shard_tuple(self) -> tuple[int, int] | None:
        return parse_shard(self.shard)

    @property
    def scope(self) -> JobScope:
        return JobScope(frozenset(self.metric_list), self.shard_tuple)

    @property
    def identity(self) -> str:
        """Names this job's share of the work: its status row and checkpoint directory."""
        if self.metric_list:
            return "aggregator-metrics-" + "_".join(sorted(self.metric_list))[:120]
        if (shard := self.shard_tuple) is not None:
            return f"aggregator-shard-{shard[0]}-of-{shard[1]}"
        return "aggregator"

    @property
    def checkpoint(self) -> Path:
        # The layout names the state schema: a job of another layout cannot read it, so a new
        # one starts fresh (from ``starting_offsets``) instead of failing on the old state.
        layout = STATE_LAYOUT if self.dedup else f"{STATE_LAYOUT}-nodedup"
        return self.checkpoint_dir / self.identity / layout
