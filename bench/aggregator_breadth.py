"""``make bench-aggregator-breadth``: 200 metric topics, one ``FROM *`` 10 s query each, fed the
way 200 one-snapshot agents at 1 Hz reach Kafka through the ingest's linger. Spark reads every
topic-partition every batch, and ``max_offsets_per_trigger`` caps records, not samples: each
cap in ``--caps`` is one step, with its own topics, queries, checkpoint, job and JVM."""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from aggregator.progress import DEDUP_OPERATOR
from apm.kafka import TopicSpec, delete_topics, ensure_topics
from apm.model import TOPIC_PARTITIONS, topic_for
from bench import feed
from bench.base import percentile, progress, write_section

__all__ = ["main"]

WINDOW_S = 10
PHASES = (
    "addBatch",
    "latestOffset",
    "queryPlanning",
    "walCommit",
    "commitOffsets",
    "getBatch",
    "triggerExecution",
)
HEADER = [
    "config",
    "max offsets per trigger",
    "topics x partitions",
    "records/s per topic",
    "records/s total",
    "samples/s",
    "lag growth (records/s)",
    "kept up",
    "batches",
    "records per batch p50",
    "batch p50 (s)",
    "batch p99 (s)",
    "freshness p50 (s)",
    "freshness p99 (s)",
    "target (s)",
    "target met",
]


def _profile(reports: list[dict[str, Any]]) -> dict[str, float]:
    """Medians over the step's batches: durationMs phases, records, state operator times (s)."""
    out = (
        {k: statistics.median([r["durationMs"].get(k, 0) / 1000 for r in reports]) for k in PHASES}
        if reports
        else {}
    )
    out["records"] = statistics.median([r["numInputRows"] for r in reports]) if reports else 0
    for name in (DEDUP_OPERATOR, "stateStoreSave"):  # task time in the dedup and window operators
        ops = [op for r in reports for op in r["stateOperators"] if op["operatorName"] == name]
        for key in ("allUpdatesTimeMs", "commitTimeMs"):
            values = [op.get(key, 0) / 1000 for op in ops]
            out[f"{name} {key}"] = statistics.median(values) if values else float("nan")
    return out


def _slope(series: list[tuple[float, int]], after: float) -> float:
    """Least-squares growth per second of (time, lag) from ``after`` on."""
    tail = [x for x in series if x[0] >= after]
    return (
        statistics.linear_regression([t for t, _ in tail], [v for _, v in tail]).slope
        if len(tail) > 2
        else float("nan")
    )


def _step(spark: Any, repo: Any, args: argparse.Namespace, cap: int) -> dict[str, Any]:
    from aggregator.job import Aggregator
    from aggregator.lag import KafkaOffsets
    from aggregator.settings import AggregatorSettings

    run = uuid.uuid4().hex[:6]
    metrics = [f"br{run}-m{i:03d}" for i in range(args.topics)]
    topics = [topic_for(m) for m in metrics]
    home = Path(tempfile.mkdtemp(prefix="aggbreadth-"))
    settings = AggregatorSettings(
        metrics_port=0,
        trigger_seconds=args.trigger_seconds,
        max_offsets_per_trigger=cap,
        checkpoint_dir=home,
    )
    # It returns once every partition has a leader: else Spark's first plan sees
    # UNKNOWN_TOPIC_OR_PARTITION and the feeder's first sends stall.
    ensure_topics(
        settings.kafka_bootstrap, topics, TopicSpec(partitions=args.partitions), wait_ms=60_000
    )
    job, offsets, feeder = None, KafkaOffsets(settings.kafka_bootstrap), None
    try:
        ids = [
            repo.save_query(f"FROM * SELECT {m} WINDOW {WINDOW_S}s COMPUTE min, max, avg, p99").id
            for m in metrics
        ]  # before the feed: active_from
        job = Aggregator(spark, repo, settings, offsets=offsets)
        job.start()
        feeder = mp.get_context("spawn").Process(
            target=feed.produce_fleet,
            args=(
                settings.kafka_bootstrap,
                metrics,
                args.servers,
                args.records_per_topic_per_second,
                args.warmup_seconds + args.step_seconds,
            ),
        )
        fresh: list[tuple[float, float]] = []
        stop, lags, load = threading.Event(), [], []
        poller = threading.Thread(
            target=feed.poll_freshness,
            daemon=True,
            args=(repo, ids[:: max(1, len(ids) // 10)], args.servers * WINDOW_S, stop, fresh),
        )
        written0 = sum(offsets.start_end(topics)[1].values())
        feeder.start()
        fed = time.monotonic()
        poller.start()
        time.sleep(args.warmup_seconds + 1)
        job.check()
        last = job.windows.lastProgress if job.windows else None
        first_batch = last["batchId"] if last else -1
        step_wall, began = time.time(), time.monotonic()
        while feeder.is_alive():
            time.sleep(2)
            job.check()
            lags.append(
                (
                    time.monotonic() - began,
                    sum(offsets.lag(job.processed_offsets(), topics).values()),
                )
            )
            load.append(os.getloadavg()[0])
            progress(
                f"breadth cap {cap}: t={lags[-1][0]:.0f}s lag {lags[-1][1]} records, "
                f"load average {load[-1]:.1f}"
            )
        feeder.join()
        if feeder.exitcode:
            raise RuntimeError(f"the feeder failed (exit {feeder.exitcode})")
        fed_s = time.monotonic() - fed  # longer than the feed's seconds if it fell behind
        written = sum(offsets.start_end(topics)[1].values()) - written0
        time.sleep(args.trigger_seconds * 2 + 6)  # the last complete windows come in
        stop.set()
        poller.join()
        growth = _slope(lags, args.step_seconds / 3)
        reports = [
            json.loads(p.json)
            for p in (job.windows.recentProgress if job.windows else [])
            if p.batchId > first_batch
        ]
        reports = [r for r in reports if r["numInputRows"] > 0]
        if args.progress_dump:
            with open(args.progress_dump, "a") as dump:
                dump.writelines(json.dumps({"cap": cap, **r}) + "\n" for r in reports)
        job.stop()  # the probe gets the machine to itself
        job = None
        probe = feed.read_probe(spark, settings.kafka_bootstrap, reports[-1] if reports else None)
    finally:
        if feeder is not None and feeder.is_alive():
            feeder.terminate()
        if job is not None:
            job.stop()
        offsets.close()
        delete_topics(settings.kafka_bootstrap, topics)
        shutil.rmtree(home, ignore_errors=True)
    return {
        "cap": cap,
        "rate": written / fed_s,
        "fed_s": fed_s,
        "growth": growth,
        "kept_up": growth <= 0.05 * written / fed_s,
        "end_lag": lags[-1][1] if lags else 0,
        "durations": [r["durationMs"]["triggerExecution"] / 1000 for r in reports],
        "fresh": [f for end, f in fresh if end - WINDOW_S >= step_wall],
        "profile": _profile(reports),
        "probe": probe,
        "load": statistics.median(load) if load else float("nan"),
    }


def _isolated(args: argparse.Namespace, cap: int, out: Any) -> None:
    """One step in a process and JVM of its own: in one JVM the second step's job ran out of
    heap (a stopped job's Kafka consumers, with their last fetch, stay cached 5 minutes)."""
    from aggregator.session import build_session
    from launch.stack.jars import spark_jars
    from storage.repository import Repository
    from storage.settings import StorageSettings

    repo = Repository.connect(StorageSettings(keyspace=f"aggbreadth_{uuid.uuid4().hex[:8]}"))
    spark = build_session("aggregator-bench-breadth", jars=spark_jars())
    try:
        out.put(_step(spark, repo, args, cap))
    finally:
        spark.stop()
        repo.session.execute(f"DROP KEYSPACE IF EXISTS {repo.keyspace}")
        repo.close()


def _row(args: argparse.Namespace, got: dict[str, Any], target: float) -> list[str]:
    rate, fresh, durations = got["rate"], got["fresh"], got["durations"]
    met = got["kept_up"] and bool(fresh) and percentile(fresh, 99) <= target
    return [
        "breadth",
        f"{got['cap']:,}" if got["cap"] else "no cap",
        f"{args.topics} x {args.partitions}",
        f"{rate / args.topics:.1f}",
        f"{rate:,.0f}",
        f"{rate / args.records_per_topic_per_second * args.servers:,.0f}",
        f"{got['growth']:,.0f}",
        "yes" if got["kept_up"] else "no",
        str(len(durations)),
        f"{got['profile'].get('records', 0):,.0f}",
        f"{percentile(durations, 50):.2f}",
        f"{percentile(durations, 99):.2f}",
        f"{percentile(fresh, 50):.1f}",
        f"{percentile(fresh, 99):.1f}",
        f"{target:g}",
        "met" if met else "not met",
    ]


def _profile_note(args: argparse.Namespace, got: dict[str, Any]) -> str:
    p, (cold, warm) = got["profile"], got["probe"]
    shown = ", ".join(f"{k} {p[k]:.2f} s" for k in PHASES if k in p)
    ops = ", ".join(f"{k.replace('TimeMs', '')} {v:.2f} s" for k, v in p.items() if "Ms" in k)
    parts = args.topics * args.partitions
    return (
        f"cap {got['cap']:,}: median phases {shown or '-'}; state operators (task time) "
        f"{ops or '-'}; {p.get('records', 0):,.0f} records per batch; the last batch's "
        f"ranges of all {parts} topic-partitions read alone (batch mode, the job's source "
        f"options, job stopped): {warm:.2f} s with warm consumers ({warm / parts * 1000:.0f}"
        f" ms per topic-partition), {cold:.2f} s cold; the feeder took {got['fed_s']:.0f} s "
        f"for {args.warmup_seconds + args.step_seconds} s of data; the stream's lag at the "
        "end "
        f"{got['end_lag']:,} records ({got['end_lag'] / got['rate']:.0f} s of data); load "
        f"average {got['load']:.1f} (median)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.aggregator --config breadth")
    parser.add_argument("--topics", type=int, default=200, help="metric topics, one query each")
    parser.add_argument("--servers", type=int, default=200, help="1 Hz agents")
    parser.add_argument(
        "--records-per-topic-per-second",
        type=int,
        default=feed.INGEST_RECORDS_PER_TOPIC,
        help="records each second's "
        "samples of a topic come in (default: the real ingest's, "
        "--measure-ingest)",
    )
    parser.add_argument(
        "--caps",
        default="5000,50000",
        help="max_offsets_per_trigger per "
        "step (0 = none): the default before ef5538d, then the current one",
    )
    parser.add_argument("--partitions", type=int, default=TOPIC_PARTITIONS)
    parser.add_argument("--step-seconds", type=int, default=60)
    # The first batches' cold consumers (one per topic-partition and stream) take ~10 s and
    # leave a backlog that a job near its capacity needs a minute or more to work off.
    parser.add_argument("--warmup-seconds", type=int, default=90)
    parser.add_argument("--trigger-seconds", type=float, default=2.0)
    parser.add_argument(
        "--measure-ingest",
        type=int,
        metavar="SECONDS",
        default=0,
        help="only measure records/s per topic on the real ingest, then exit",
    )
    parser.add_argument(
        "--progress-dump",
        metavar="FILE",
        help="append each step's progress reports to FILE (JSON lines)",
    )
    parser.add_argument("--no-doc", action="store_true", help="print only")
    args = parser.parse_args(argv)

    from aggregator.settings import AggregatorSettings

    bootstrap = AggregatorSettings().kafka_bootstrap
    if args.measure_ingest:  # no Spark: only the ingest and the load generator
        print(
            json.dumps(
                feed.ingest_records_per_topic(
                    bootstrap,
                    args.servers,
                    args.topics,
                    args.measure_ingest,
                    Path(tempfile.mkdtemp(prefix="breadth-ingest-")),
                ),
                indent=1,
            )
        )
        return 0

    target = args.trigger_seconds + 2  # seconds after the window's end
    results = []
    for cap in [int(c) for c in args.caps.split(",")]:
        results.append(
            feed.run_isolated(_isolated, (args, cap), args.warmup_seconds + args.step_seconds + 600)
        )
        progress(" | ".join(_row(args, results[-1], target)))
        progress(_profile_note(args, results[-1]))
    table = [HEADER] + [_row(args, got, target) for got in results]
    per_topic = args.records_per_topic_per_second
    origin = (
        feed.INGEST_RECORDS_ORIGIN
        if per_topic == feed.INGEST_RECORDS_PER_TOPIC
        else "set by the command line"
    )
    notes = (
        f"Job on local[2], dedup on, one `FROM * SELECT <metric> WINDOW {WINDOW_S}s COMPUTE "
        "min, max, avg, p99` per topic stored before the feed, the servers' newest samples "
        "gathered in the same pass (aggregator/seen.py); "
        f"trigger {args.trigger_seconds:g} s; warm-up "
        f"{args.warmup_seconds} s, then {args.step_seconds} s measured; each cap is a fresh "
        "job (in a process and JVM of its own), checkpoint and set of topics. Feed: "
        f"{args.servers} servers x {args.topics} metrics at 1 Hz = "
        f"{args.servers * args.topics:,} samples/s, pre-encoded by a child process: each "
        f"second a topic gets {args.servers} samples in {per_topic} records, {origin}. "
        "Records/s = Kafka end offsets over the feed's wall time; samples/s = records/s x "
        "samples per record. Kept up = lag growth (least squares over the last two thirds) "
        f"under 5% of the record rate. Freshness = from a {WINDOW_S} s window's end until its "
        "row holds every sample in Cassandra (10 of the queries polled every 0.25 s; nan: no "
        "window completed). Target: freshness p99 <= window end + trigger + 2 s = "
        f"{target:g} s. A cap below record rate x batch time lets the lag grow whatever the "
        "engine does. Profile: "
        + "; ".join(_profile_note(args, got) for got in results)
        + ". The machine is shared (2 cores; other engineers' tests and services may run at "
        "the same time, the load average says how busy it was), so the figures are noisy, "
        "from one run."
    )
    print("\n".join(" | ".join(row) for row in table))
    print(notes)
    if not args.no_doc:
        write_section(
            "aggregator-breadth",
            f"Aggregator breadth: {args.topics} metric topics, "
            "one query each, a 1 Hz fleet (local[2])",
            "make bench-aggregator-breadth",
            table,
            notes,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
