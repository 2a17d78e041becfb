"""``apm aggregator run|status``. Standard library only at top level: the handlers import
Spark, Kafka and Cassandra when they run."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from aggregator.settings import AggregatorSettings

__all__ = ["register"]


def _scope(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--metrics", help="comma-separated metrics this job takes (subscribe)")
    parser.add_argument("--shard", help="i/n: the metrics with crc32(metric) mod n = i")
    parser.add_argument("--checkpoint-dir", help="parent of the job's checkpoint directory")
    parser.add_argument("--keyspace", help="Cassandra keyspace (default APM_STORAGE_KEYSPACE)")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("aggregator", help="evaluate stored queries over the metric stream")
    commands = parser.add_subparsers(dest="aggregator_command", required=True, metavar="ACTION")
    run = commands.add_parser("run", help="run the Spark streaming job (foreground)")
    _scope(run)
    run.add_argument("--trigger-seconds", type=float, help="micro-batch interval")
    run.add_argument("--lateness-seconds", type=int, help="allowed lateness (default 600)")
    run.add_argument("--metrics-port", type=int, help="Prometheus port; 0 = off")
    run.add_argument("--instance", help="a name for this process (marks it for supervisors)")
    run.set_defaults(func=_run)
    status = commands.add_parser("status", help="consumer lag per topic and the job's status")
    _scope(status)
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.set_defaults(func=_status)


def _settings(args: argparse.Namespace) -> AggregatorSettings | None:
    """The settings from env and flags; None (after saying why on stderr) if they are bad."""
    from pydantic import ValidationError

    from aggregator.settings import AggregatorSettings

    overrides = {
        key: value
        for key, value in {
            "metrics": args.metrics,
            "shard": args.shard,
            "checkpoint_dir": args.checkpoint_dir,
            "trigger_seconds": getattr(args, "trigger_seconds", None),
            "allowed_lateness_seconds": getattr(args, "lateness_seconds", None),
            "metrics_port": getattr(args, "metrics_port", None),
        }.items()
        if value is not None
    }
    try:
        return AggregatorSettings(**overrides)
    except ValidationError as exc:
        print(f"apm aggregator: {exc}", file=sys.stderr)
        return None


def _run(args: argparse.Namespace) -> int:
    import signal
    import threading

    settings = _settings(args)
    if settings is None or _jars_missing(settings):
        return 2
    from aggregator.job import Aggregator
    from aggregator.lag import KafkaOffsets
    from aggregator.rollup import RollupStore
    from aggregator.server_writes import ServerWrites
    from aggregator.store import connect_store
    from aggregator.telemetry import AggregatorTelemetry
    from apm.retry import Backoff, call_with_retry
    from storage.errors import is_transient

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    # Cassandra still starting (or briefly away) is retried like every storage call of the job.
    store = call_with_retry(
        lambda: connect_store(args.keyspace),
        deadline_s=settings.storage_retry_seconds,
        backoff=Backoff(initial=0.5, cap=5.0),
        stop=stop,
        transient=is_transient,
    )
    telemetry = AggregatorTelemetry()
    if settings.metrics_port:
        telemetry.serve(settings.metrics_port, settings.metrics_host)
    offsets = KafkaOffsets(settings.kafka_bootstrap, settings.kafka_tls)
    spark = _session(settings)
    writes = ServerWrites.from_settings(args.keyspace, settings.storage_retry_seconds)
    # The Repository is also the rollup tiers' store (aggregator/rollup.py).
    tiers = cast("RollupStore", store)
    Aggregator(spark, store, settings, telemetry, offsets, server_writes=writes, tiers=tiers).run(
        stop
    )
    spark.stop()
    return 0


def _session(settings: AggregatorSettings) -> Any:
    """The job's SparkSession: local mode, or an application on ``spark_master`` sized by
    ``spark_conf`` (``apm cluster up`` runs each shard so)."""
    from aggregator.session import build_session

    return build_session(
        settings.identity,
        jars=_local_jars(settings),
        master=settings.spark_master or None,
        driver_memory=settings.driver_memory,
        extra=settings.spark_conf,
    )


def _not_covered(keyspace: str | None) -> list[str]:
    """The active queries' metrics no live job covers; empty when storage cannot say."""
    import time

    from aggregator.status import not_covered
    from aggregator.store import connect_store

    try:
        return not_covered(connect_store(keyspace), time.time())
    except Exception as exc:  # storage down: collect() has said so already
        print(f"apm aggregator: cannot tell which metrics are covered: {exc}", file=sys.stderr)
        return []


def _local_jars(settings: AggregatorSettings) -> list[str]:
    """The jars whoever started the job handed in (``APM_AGGREGATOR_JARS``). Under
    spark-submit the cluster hands them in with ``--jars`` and this is not asked."""
    from aggregator.session import under_spark_submit

    return [] if under_spark_submit() else settings.jar_list


def _jars_missing(settings: AggregatorSettings) -> bool:
    from aggregator.session import under_spark_submit

    if under_spark_submit() or settings.jar_list:
        return False
    print(
        "apm aggregator: no jars for Spark (the Kafka connector and the JVM operator): set "
        "APM_AGGREGATOR_JARS=$(apm stack jars), or start it through `apm run`",
        file=sys.stderr,
    )
    return True


def _status(args: argparse.Namespace) -> int:
    """Every job that published a status (or the one job named by --metrics/--shard/
    --checkpoint-dir): live or stale, its scope, the metrics it reads and their lag. Exit 1
    when no job is live."""
    settings = _settings(args)
    if settings is None:
        return 2
    from aggregator.status import collect, render, render_not_covered

    named = any(v is not None for v in (args.metrics, args.shard, args.checkpoint_dir))
    try:
        jobs = collect(settings, args.keyspace, only_named=named)
    except Exception as exc:  # storage and Kafka both unreachable: nothing to report
        print(f"apm aggregator: cannot read job status: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(jobs, indent=2, sort_keys=True, default=str))
    else:
        print(render(jobs))
        if uncovered := _not_covered(args.keyspace):
            print(render_not_covered(uncovered))
    if not any(j["live"] for j in jobs):
        print(
            "apm aggregator: no aggregator job is running (`apm aggregator run`, or "
            "`make run`, starts one)",
            file=sys.stderr,
        )
        return 1
    return 0
