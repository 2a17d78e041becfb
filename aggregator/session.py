"""The SparkSession every Spark user in the project builds (the aggregator, tests, benchmarks).

Settings that matter on a small machine (docs/reference measurements): shuffle partitions equal
to the core count (the default 200 is ~50x slower), the UI off, loopback binding, a capped
driver heap, and the Kafka connector's jars handed in through ``spark.jars`` by the caller (the
CLI takes them from ``APM_AGGREGATOR_JARS``, which ``apm run`` fills from the local jar cache;
under spark-submit they come with ``--jars``).

Per-task overhead matters because the Kafka source makes one task and one cached consumer per
topic-partition with new data: the consumer cache is sized far above any partition count we
run (the default 64 thrashes with one topic per metric), locality waits are off (everything
is local anyway).

The state store is RocksDB (see below) with changelog checkpointing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["build_session", "under_spark_submit"]


def under_spark_submit() -> bool:
    """Under spark-submit the JVM is up before Python and owns the cluster settings (master,
    driver address, --jars, parallelism)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def build_session(
    app_name: str = "apm",
    *,
    jars: Sequence[str] = (),
    master: str | None = None,
    driver_memory: str = "2g",
    extra: dict[str, str] | None = None,
) -> SparkSession:
    from pyspark.sql import SparkSession

    cores = os.cpu_count() or 2
    # Only a local session gets our single-box defaults (see under_spark_submit).
    submitted = under_spark_submit()
    os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)  # type: ignore[attr-defined]
    builder = SparkSession.builder.appName(app_name)
    if not submitted:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = (
            builder.master(master or f"local[{cores}]")
            .config("spark.jars", ",".join(jars))
            .config("spark.driver.memory", driver_memory)
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.sql.shuffle.partitions", str(cores))
            .config("spark.default.parallelism", str(cores))
        )
    builder = (
        builder.config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        # RocksDB, not the in-memory HDFS store: the dedup state holds one key per distinct
        # sample in the lateness horizon (millions), and the HDFS store copies its whole map
        # into every new version. Changelog checkpointing writes only each batch's changes.
        .config(
            "spark.sql.streaming.stateStore.providerClass",
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        )
        .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
        # The JVM operator (partials.window_partials, a flatMapGroupsWithState) feeds the window
        # aggregation. Spark cannot see that it only passes on input rows, each of which has
        # passed the same watermark's late filter, so it refuses the plan for fear of late
        # output. Its rows are never late downstream; tests/aggregator/test_stream.py checks
        # that late samples are counted once and on-time ones all reach their window.
        .config("spark.sql.streaming.statefulOperator.checkCorrectness.enabled", "false")
        # Timestamps reach JVM code (the aggregator's operator) as java.time.Instant, not as
        # java.sql.Timestamp, whose conversion rebases every value between calendars. Python
        # sees no difference: PySpark converts timestamps itself.
        .config("spark.sql.datetime.java8API.enabled", "true")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.kafka.consumer.cache.capacity", "4096")
        .config("spark.kafka.consumer.fetchedData.cache.timeout", "5m")
        .config("spark.locality.wait", "0")
        .config("spark.ui.showConsoleProgress", "false")
        # Spark's own pattern, plus the Kafka source's PEM client key (kafka.ssl.keystore.key,
        # docs/security.md): Spark shows a source's options in its plan unless they match.
        .config("spark.redaction.regex", "(?i)secret|password|token|access[.]key|keystore")
    )
    for key, value in (extra or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    jvm = session._jvm
    if jvm is not None:
        # With the correctness check off (above), Spark still logs the whole plan as a WARN
        # at every stream (re)start: thousands of characters for a known, explained case.
        log4j = jvm.org.apache.logging.log4j
        log4j.core.config.Configurator.setLevel(
            "org.apache.spark.sql.catalyst.analysis.UnsupportedOperationChecker",
            log4j.Level.ERROR,
        )
    return session
