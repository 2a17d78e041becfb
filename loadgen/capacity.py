"""The capacity model: measured per-core rates of each stage, turned into the cores, brokers,
partitions and Cassandra nodes a target load needs, with the arithmetic written out so a
reader can check it (``docs/BENCHMARKS.md``, section ``capacity``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Measured", "Plan", "plan"]

# Assumptions, stated where they are used in the reasoning.
HEADROOM = 1.5  # run each stage at <= 2/3 of its measured capacity at peak
BROKER_WRITE_MB_S = 100.0  # one broker's sustained write throughput (the case study's figure)
BROKER_MAX_PARTITIONS = 4000  # a comfortable partition count per KRaft broker
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
    why: list[str] = [f"Load: {servers:,} servers x {metrics:,} metrics at 1 Hz = "
                      f"{rate:,.0f} samples/s; {metrics:,} topics (one per metric)."]

    ingest = math.ceil(rate * HEADROOM / measured.ingest_samples_per_core_s)
    why.append(f"Ingest: {rate:,.0f} x {HEADROOM} headroom / "
               f"{measured.ingest_samples_per_core_s:,.0f} samples/s per core "
               f"= {ingest:,} cores (stateless replicas behind the load balancer).")

    agg = math.ceil(rate * HEADROOM / measured.aggregator_samples_per_core_s)
    why.append(f"Aggregator: {rate:,.0f} x {HEADROOM} / "
               f"{measured.aggregator_samples_per_core_s:,.0f} samples/s per core "
               f"= {agg:,} Spark executor cores, split over jobs with --shard i/n.")

    mb_s = rate * measured.bytes_per_sample / 1e6
    by_throughput = math.ceil(mb_s * KAFKA_RF * HEADROOM / BROKER_WRITE_MB_S)
    why.append(f"Kafka bytes: {rate:,.0f} x {measured.bytes_per_sample:.0f} B = {mb_s:,.1f} MB/s "
               f"of records, x RF {KAFKA_RF} = {mb_s * KAFKA_RF:,.1f} MB/s written across the "
               f"cluster; x {HEADROOM} / {BROKER_WRITE_MB_S:.0f} MB/s per broker "
               f"= {by_throughput} brokers by throughput.")
    if measured.broker_cpu_per_mb is not None:
        cores = mb_s * KAFKA_RF * measured.broker_cpu_per_mb
        why.append(f"Kafka CPU (measured {measured.broker_cpu_per_mb:.3f} cores per MB/s "
                   f"written): {cores:,.1f} cores in all, spread over the brokers.")

    # Partitions: the aggregator's cores must each have partitions to read (4 per core, so
    # shards rebalance evenly), and never fewer than 2 per topic, so that a topic's reads can
    # be spread and its leaders moved without a stop.
    per_topic = max(2, min(16, math.ceil(agg * 4 / max(1, metrics))))
    per_topic = 1 << (per_topic - 1).bit_length()  # a power of two: shards stay even
    total_partitions = per_topic * metrics
    by_partitions = math.ceil(total_partitions * KAFKA_RF / BROKER_MAX_PARTITIONS)
    brokers = max(KAFKA_RF, by_throughput, by_partitions)
    why.append(f"Partitions: {per_topic} per topic x {metrics:,} topics = "
               f"{total_partitions:,}; x RF {KAFKA_RF} / {BROKER_MAX_PARTITIONS:,} replicas per "
               f"broker = {by_partitions} brokers by partition count. Brokers = max(RF "
               f"{KAFKA_RF}, {by_throughput}, {by_partitions}) = {brokers}.")

    open_windows = 2  # the current window and the one still inside the lateness allowance
    writes = queries * open_windows / measured.trigger_seconds
    nodes = max(CASSANDRA_RF, math.ceil(writes * CASSANDRA_RF * HEADROOM
                                        / CASSANDRA_WRITES_PER_NODE))
    why.append(f"Cassandra: results, not samples, are stored: {queries:,} queries x "
               f"{open_windows} open windows / {measured.trigger_seconds:g} s trigger = "
               f"{writes:,.0f} upserts/s, x RF {CASSANDRA_RF} x {HEADROOM} / "
               f"{CASSANDRA_WRITES_PER_NODE:,.0f} per node -> {nodes} nodes (RF {CASSANDRA_RF} "
               f"is the floor). Storage grows with queries x windows, not with servers.")
    return Plan(rate, ingest, agg, brokers, per_topic, metrics, nodes, why)
