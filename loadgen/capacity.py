"""The capacity model: measured per-core rates of each stage, turned into the cores, brokers,
partitions and Cassandra nodes a target load needs, with the arithmetic written out so a
reader can check it (``docs/BENCHMARKS.md``, section ``capacity``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from apm.model import (
    BYTES_PER_SAMPLE,
    DESIGN_SERVERS,
    PARTITION_BYTES_PER_S,
    TOPIC_PARTITIONS,
    partitions_for,
)

__all__ = ["Measured", "Plan", "plan", "topic_partitions_note"]

# Assumptions, stated where they are used in the reasoning.
HEADROOM = 1.5  # run each stage at <= 2/3 of its measured capacity at peak
BROKER_WRITE_MB_S = 100.0  # one broker's sustained write throughput (the case study's figure)
BROKER_MAX_PARTITIONS = 4000  # a comfortable partition count per KRaft broker
READS_PER_CORE = 4  # partitions per aggregator core, so its reads spread and shards rebalance
CASSANDRA_WRITES_PER_NODE = 10_000.0  # small upserts per second per node, conservatively
KAFKA_RF = 3
CASSANDRA_RF = 3


@dataclass(frozen=True)
class Measured:
    ingest_samples_per_core_s: float
    aggregator_samples_per_core_s: float
    bytes_per_sample: float  # in a Kafka record (apm.wire line), before replication
    broker_cpu_per_mb: float | None = None  # broker cores per MB/s written, if measured
    window_seconds: int = 10
    trigger_seconds: float = 2.0


@dataclass(frozen=True)
class Plan:
    samples_per_s: float
    ingest_cores: int
    aggregator_cores: int
    brokers: int
    partitions_per_topic: int
    topics: int
    cassandra_nodes: int
    reasoning: list[str]


def plan(measured: Measured, servers: int, metrics: int, queries: int | None = None) -> Plan:
    """What ``servers`` x ``metrics`` samples per second need (``queries`` stored queries,
    default one per metric)."""
    rate = float(servers * metrics)
    queries = metrics if queries is None else queries
    why: list[str] = [
        f"Load: {servers:,} servers x {metrics:,} metrics at 1 Hz = "
        f"{rate:,.0f} samples/s; {metrics:,} topics (one per metric)."
    ]

    ingest = math.ceil(rate * HEADROOM / measured.ingest_samples_per_core_s)
    why.append(
        f"Ingest: {rate:,.0f} x {HEADROOM} headroom / "
        f"{measured.ingest_samples_per_core_s:,.0f} samples/s per core "
        f"= {ingest:,} cores (stateless replicas behind the load balancer)."
    )

    agg = math.ceil(rate * HEADROOM / measured.aggregator_samples_per_core_s)
    why.append(
        f"Aggregator: {rate:,.0f} x {HEADROOM} / "
        f"{measured.aggregator_samples_per_core_s:,.0f} samples/s per core "
        f"= {agg:,} Spark executor cores, split over jobs with --shard i/n."
    )

    mb_s = rate * measured.bytes_per_sample / 1e6
    by_throughput = math.ceil(mb_s * KAFKA_RF * HEADROOM / BROKER_WRITE_MB_S)
    why.append(
        f"Kafka bytes: {rate:,.0f} x {measured.bytes_per_sample:.0f} B = {mb_s:,.1f} MB/s "
        f"of records, x RF {KAFKA_RF} = {mb_s * KAFKA_RF:,.1f} MB/s written across the "
        f"cluster; x {HEADROOM} / {BROKER_WRITE_MB_S:.0f} MB/s per broker "
        f"= {by_throughput} brokers by throughput."
    )
    if measured.broker_cpu_per_mb is not None:
        cores = mb_s * KAFKA_RF * measured.broker_cpu_per_mb
        why.append(
            f"Kafka CPU (measured {measured.broker_cpu_per_mb:.3f} cores per MB/s "
            f"written): {cores:,.1f} cores in all, spread over the brokers."
        )

    # Partitions per topic, by volume: a metric topic carries one sample per server per second,
    # so its bytes/s are servers x bytes per sample whatever the metric count (apm.model).
    topic_bytes_s = servers * measured.bytes_per_sample
    by_volume = partitions_for(servers, measured.bytes_per_sample)
    # The aggregator's read parallelism comes from the number of topics: Spark reads each
    # partition of each topic as its own task, so metrics x partitions must cover the
    # aggregator's cores, READS_PER_CORE times over so reads and shards spread evenly.
    per_topic = by_volume
    wanted = READS_PER_CORE * agg
    reads = (
        f"{metrics:,} topics x {by_volume} = {metrics * by_volume:,} partitions "
        + (">=" if metrics * by_volume >= agg else "<")
        + f" {agg:,} aggregator cores"
    )
    if metrics * by_volume >= wanted:
        reads += f" and >= {READS_PER_CORE} x {agg:,} = {wanted:,}: holds"
    else:
        per_topic = math.ceil(wanted / metrics)
        reads += (
            f", but < {READS_PER_CORE} per core ({wanted:,}): raised to ceil({wanted:,} / "
            f"{metrics:,}) = {per_topic} per topic so every core has partitions to read "
            f"and shards rebalance evenly"
        )
    total_partitions = per_topic * metrics
    by_partitions = math.ceil(total_partitions * KAFKA_RF / BROKER_MAX_PARTITIONS)
    brokers = max(KAFKA_RF, by_throughput, by_partitions)
    why.append(
        f"Partitions: {servers:,} servers x {measured.bytes_per_sample:.1f} B/sample = "
        f"{topic_bytes_s / 1e3:,.1f} KB/s per topic; / {PARTITION_BYTES_PER_S / 1e3:,.0f} "
        f"KB/s per partition (apm.model.PARTITION_BYTES_PER_S, a conservative planning "
        f"figure) = {by_volume} per topic by volume. The aggregator's read parallelism "
        f"comes from the number of topics: {reads}. {per_topic} per topic x "
        f"{metrics:,} topics = {total_partitions:,}; x RF {KAFKA_RF} / "
        f"{BROKER_MAX_PARTITIONS:,} replicas per broker = {by_partitions} brokers by "
        f"partition count. Brokers = max(RF {KAFKA_RF}, {by_throughput}, {by_partitions}) "
        f"= {brokers}."
    )

    open_windows = 2  # the current window and the one still inside the lateness allowance
    writes = queries * open_windows / measured.trigger_seconds
    nodes = max(
        CASSANDRA_RF, math.ceil(writes * CASSANDRA_RF * HEADROOM / CASSANDRA_WRITES_PER_NODE)
    )
    why.append(
        f"Cassandra: results, not samples, are stored: {queries:,} queries x "
        f"{open_windows} open windows / {measured.trigger_seconds:g} s trigger = "
        f"{writes:,.0f} upserts/s, x RF {CASSANDRA_RF} x {HEADROOM} / "
        f"{CASSANDRA_WRITES_PER_NODE:,.0f} per node -> {nodes} nodes (RF {CASSANDRA_RF} "
        f"is the floor). Storage grows with queries x windows, not with servers."
    )
    return Plan(rate, ingest, agg, brokers, per_topic, metrics, nodes, why)


def topic_partitions_note() -> str:
    """The paragraph of the capacity section on the default partition count of a metric topic,
    from the contract's figures (apm.model)."""
    load = DESIGN_SERVERS * BYTES_PER_SAMPLE
    return (
        f"**Partitions per metric topic.** Every metric topic the ingest (or `apm loadgen "
        f"--direct-kafka`) creates gets `apm.model.TOPIC_PARTITIONS` = {TOPIC_PARTITIONS} "
        f"partition{'s' if TOPIC_PARTITIONS != 1 else ''} unless `APM_INGEST_TOPIC_PARTITIONS` "
        f"(`APM_LOADGEN_TOPIC_PARTITIONS`) says otherwise. A metric topic carries at most one "
        f"sample per server per second, so its volume does not grow with the number of "
        f"metrics: {DESIGN_SERVERS:,} servers (`DESIGN_SERVERS`) x {BYTES_PER_SAMPLE} B per "
        f"sample (`BYTES_PER_SAMPLE`, measured as above) = {load / 1e3:,.0f} KB/s, / "
        f"{PARTITION_BYTES_PER_S / 1e3:,.0f} KB/s per partition (`PARTITION_BYTES_PER_S`, a "
        f"deliberately conservative planning figure: a partition sustains ~10 MB/s of "
        f"appends on ordinary disks, and the case study quotes ~100 MB/s per broker) = "
        f"ceil({load / PARTITION_BYTES_PER_S:.2f}) = {TOPIC_PARTITIONS} "
        f"(`apm.model.partitions_for`). More partitions than that are for the aggregator's "
        f"read parallelism, not volume: it comes from topics x partitions, and the model "
        f"above raises the count when that falls short of {READS_PER_CORE} per aggregator "
        f"core (set `APM_INGEST_TOPIC_PARTITIONS` to its figure before the topics are "
        f"created). Existing topics keep the partition count they were created with: Kafka can "
        f"add partitions (`kafka-topics --alter --topic T --partitions N`) but never remove "
        f"them."
    )
