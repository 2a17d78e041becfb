"""``make bench-aggregator``: the job on local[cores] against the real Kafka and Cassandra.

A child process feeds pre-encoded records (10,000 servers, 10 metric topics) at fixed rates;
the job runs in this process with 100 active queries. Per rate it reports whether the lag
stayed flat, the batch duration p50/p99, and freshness: from a window's end to its complete
row being readable in Cassandra. Figures go to docs/BENCHMARKS.md (bench.base).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
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
from bench.base import percentile, progress, write_section
from bench.feed import LINES_PER_RECORD, METRICS, SERVERS, produce

__all__ = ["main", "query_texts"]

CONFIGS = {
    # The configuration: 100 active queries, ten per metric.
    "issue": "per metric one `FROM *` and eight `FROM srv-N*` 10 s queries (min, max, avg, "
    "p50, p99) and one `FROM *` 1 m query (avg, p99): 100 queries, ~2.9 "
    "query-samples per input sample",
    # One dashboard-style query per metric: each sample lands in one window list.
    "light": "per metric one `FROM *` 10 s query (min, max, avg, p50, p99): 10 queries, 1 "
    "query-sample per input sample",
    # Issue 26: per-server series at the design's 10,000 servers, against `issue`.
    "by-server": "`issue` with the first metric's 1 m query replaced by a 10 s `FROM * ... "
    "COMPUTE min, max, avg, p50, p99 BY server TOP 10 BY avg`: 100 queries, one of them one "
    "series per server (10,000) with a top-10 ranking per window",
    "by-server-all": "`by-server` on every metric: 10 of the 100 queries BY server (100,000 "
    "server series a window)",
    "breadth": "200 metric topics, one `FROM *` 10 s query each, 200 servers at 1 Hz "
    "(bench/aggregator_breadth.py; `--config breadth --help` for its options)",
}


def query_texts(config: str, metric: str, first: bool = True) -> list[str]:
    """The queries of ``config`` on ``metric``; ``first``: the configuration's first metric."""
    base = f"SELECT {metric} WINDOW 10s COMPUTE min, max, avg, p50, p99"
    if config == "light":
        return [f"FROM * {base}"]
    last = f"FROM * SELECT {metric} WINDOW 1m COMPUTE avg, p99"
    if config == "by-server-all" or (config == "by-server" and first):
        last = f"FROM * {base} BY server TOP 10 BY avg"
    return [f"FROM * {base}"] + [f"FROM srv-{d}* {base}" for d in range(1, 9)] + [last]


def _freshness(
    repo: Any, query_id: str, full: int, stop: threading.Event, out: list[float]
) -> None:
    """Polls the newest windows; records (readable time - window end) when a row is complete."""
    done: set[float] = set()
    while not stop.wait(0.25):
        now = time.time()
        for row in repo.read_results(query_id, now - 60, now):
            if row.window_start not in done and row.samples >= full:
                done.add(row.window_start)
                out.append(time.time() - (row.window_start + row.window_seconds))


def _step(
    job: Any,
    offsets: Any,
    repo: Any,
    metrics: list[str],
    query_id: str,
    rate: int,
    seconds: int,
    trigger_s: float,
    bootstrap: str,
) -> dict[str, Any]:
    """Feeds ``rate`` samples/s for ``seconds``; returns lag growth, batches and freshness."""
    per_record = min(LINES_PER_RECORD, max(1, rate // METRICS))
    topics = [topic_for(m) for m in metrics]
    feeder = mp.get_context("spawn").Process(
        target=produce, args=(bootstrap, metrics, rate, seconds)
    )
    fresh: list[float] = []
    stop = threading.Event()
    poller = threading.Thread(
        target=_freshness, daemon=True, args=(repo, query_id, rate // METRICS * 10, stop, fresh)
    )
    last = job.windows.lastProgress if job.windows else None
    first_batch = last["batchId"] if last else -1
    phases_before = {k: len(v) for k, v in job.phases.items()}
    feeder.start()
    poller.start()
    lags: list[tuple[float, int]] = []
    began = time.monotonic()
    while feeder.is_alive():
        time.sleep(2)
        job.check()
        lag = sum(offsets.lag(job.processed_offsets(), topics).values()) * per_record
        lags.append((time.monotonic() - began, lag))
        progress(f"rate {rate}: t={lags[-1][0]:.0f}s lag {lag} samples")
    feeder.join()
    if feeder.exitcode:
        raise RuntimeError(f"the feeder failed (exit {feeder.exitcode})")
    time.sleep(trigger_s * 2 + 2)
    stop.set()
    tail = [x for x in lags if x[0] >= seconds / 3]
    # The least-squares slope of the lag: it moves in steps of a batch's data (a sawtooth of up
    # to trigger x rate), so the difference of its first and last samples, used until v4,
    # swung by about +-10% of the rate around a job that kept up (batch p50 below the trigger).
    growth = (
        statistics.linear_regression([t for t, _ in tail], [lag for _, lag in tail]).slope
        if len(tail) > 2
        else float("nan")
    )
    reports = [
        p
        for p in (job.windows.recentProgress if job.windows else [])
        if p["batchId"] > first_batch and p["numInputRows"] > 0
    ]
    phases: dict[str, float] = {}
    for key in (
        "addBatch",
        "getBatch",
        "latestOffset",
        "queryPlanning",
        "walCommit",
        "commitOffsets",
        "triggerExecution",
    ):
        values = [p["durationMs"].get(key, 0) / 1000 for p in reports]
        phases[key] = statistics.median(values) if values else float("nan")
        if key == "addBatch":
            # A BY server window's rows all come in the batch that completes it (v5): the
            # heaviest batch, not the median, is where such a step's time goes.
            phases["addBatch max"] = max(values) if values else float("nan")
    for name, label in (("stateStoreSave", "windows"), (DEDUP_OPERATOR, "dedup")):
        ops = [
            op
            for p in reports
            for op in p.get("stateOperators", [])
            if op.get("operatorName") == name
        ]
        for key in ("commitTimeMs", "allUpdatesTimeMs", "numRowsTotal", "memoryUsedBytes"):
            values = [float(op.get(key, 0)) for op in ops]
            phases[f"{label} {key}"] = statistics.median(values) if values else float("nan")
    for name, values in job.phases.items():  # foreachBatch: spark, evaluate, upsert
        recent = values[phases_before.get(name, 0) :]
        phases[f"foreachBatch {name}"] = statistics.median(recent) if recent else float("nan")
        phases[f"foreachBatch {name} max"] = max(recent) if recent else float("nan")
    return {
        "rate": rate,
        "growth": growth,
        "sustained": growth <= 0.05 * rate,
        "durations": [p["durationMs"]["triggerExecution"] / 1000 for p in reports],
        "fresh": fresh,
        "phases": phases,
        "per_record": per_record,
    }


# Each config's phases at its last step (the first unsustained one, or the top of the ladder):
# where a rate that was not sustained spent its batches.
_last_phases: dict[str, dict[str, float]] = {}


def _run_config(
    config: str, rates: list[int], args: argparse.Namespace, spark: Any, warmup_s: int
) -> tuple[list[list[str]], int, dict[str, float]]:
    from aggregator.job import Aggregator
    from aggregator.lag import KafkaOffsets
    from aggregator.server_writes import ServerWrites
    from aggregator.settings import AggregatorSettings
    from storage.repository import Repository
    from storage.settings import StorageSettings

    run = uuid.uuid4().hex[:8]
    metrics = [f"bench{run}-m{i}" for i in range(METRICS)]
    settings = AggregatorSettings(
        metrics=",".join(metrics),
        metrics_port=0,
        dedup=not args.no_dedup,
        trigger_seconds=args.trigger_seconds,
        checkpoint_dir=Path(tempfile.mkdtemp(prefix="aggbench-")),
    )
    topics = [topic_for(m) for m in metrics]
    # It returns once every partition has a leader: else Spark's first plan sees
    # UNKNOWN_TOPIC_OR_PARTITION and the feeder's first sends stall.
    ensure_topics(
        settings.kafka_bootstrap, topics, TopicSpec(partitions=args.partitions), wait_ms=60_000
    )
    repo = Repository.connect(StorageSettings(keyspace=f"aggbench_{run}"))
    rows: list[list[str]] = []
    best, phases = 0, {}
    job = None
    try:
        texts = [t for i, m in enumerate(metrics) for t in query_texts(config, m, first=i == 0)]
        stored = [repo.save_query(text) for text in texts]
        progress(f"{config}: {len(stored)} queries over {METRICS} topics x {args.partitions}")
        offsets = KafkaOffsets(settings.kafka_bootstrap)
        # BY server queries' rows are written by the executors (aggregator/server_writes.py).
        writes = ServerWrites(StorageSettings(), repo.keyspace)
        job = Aggregator(spark, repo, settings, offsets=offsets, server_writes=writes)
        job.start()
        common = (job, offsets, repo, metrics, stored[0].id)
        tail = (args.trigger_seconds, settings.kafka_bootstrap)
        progress(f"{config}: warm-up at {rates[0]:,} samples/s for {warmup_s}s")
        _step(*common, rates[0], warmup_s, *tail)
        for rate in rates:
            got = _step(*common, rate, args.step_seconds, *tail)
            durations, fresh = got["durations"], got["fresh"]
            rows.append(
                [
                    config,
                    str(len(stored)),
                    f"{rate:,}",
                    f"{got['growth']:,.0f}",
                    "yes" if got["sustained"] else "no",
                    str(len(durations)),
                    f"{percentile(durations, 50):.2f}",
                    f"{percentile(durations, 99):.2f}",
                    f"{percentile(fresh, 50):.1f}",
                    f"{percentile(fresh, 99):.1f}",
                ]
            )
            progress(" | ".join(rows[-1]))
            progress(f"{config} {rate}: medians {got['phases']}")
            _last_phases[config] = got["phases"]
            if not got["sustained"]:
                break
            best, phases = rate, got["phases"]
            drain_until = time.monotonic() + 90
            while (
                sum(offsets.lag(job.processed_offsets(), topics).values()) > 0
                and time.monotonic() < drain_until
            ):
                time.sleep(2)
    finally:
        if job is not None:
            job.stop()
        delete_topics(settings.kafka_bootstrap, topics)
        repo.session.execute(f"DROP KEYSPACE IF EXISTS {repo.keyspace}")
        repo.close()
    return rows, best, phases


def _floor(best_rate: int, args: argparse.Namespace, table: list[list[str]]) -> str:
    """Runs Spark's floor for the same shape in this run (bench/floor.py), adds its steps to
    ``table`` and returns the sentence with the ratio."""
    from bench.feed import run_isolated
    from bench.floor import FLOOR_RATES, floor_shape, measure_floor, sustained

    progress(f"engine floor: {floor_shape()}")
    steps = run_isolated(
        measure_floor,
        (FLOOR_RATES, args.floor_seconds, args.trigger_seconds),
        timeout_s=len(FLOOR_RATES) * (args.floor_seconds + 60) + 120,
    )
    for step in steps:
        table.append(
            [
                "engine floor",
                "-",
                f"{step['rate']:,}",
                "-",
                "yes" if step["kept_up"] else "no",
                str(step["batches"]),
                f"{step['batch_p50_s']:.2f}",
                "-",
                "-",
                "-",
            ]
        )
    floor = sustained(steps)
    ratio = best_rate / floor if floor else float("nan")
    more = "" if steps and not steps[-1]["kept_up"] else " or more (the highest rate tried)"
    line = (
        f" Engine floor, same run and settings ({floor_shape()}): {floor:,} rows/s{more}; "
        f"ratio of the aggregator's highest sustained rate to it: {ratio:.2f}."
    )
    progress(line.strip())
    return line


def main(argv: list[str] | None = None) -> int:
    pre = argparse.ArgumentParser(add_help=False)  # breadth: its own options and section
    pre.add_argument("--configs", "--config", default="issue")
    known, rest = pre.parse_known_args(sys.argv[1:] if argv is None else argv)
    if "breadth" in known.configs.split(","):
        if known.configs != "breadth":
            pre.error("breadth runs on its own: --config breadth")
        from bench.aggregator_breadth import main as breadth

        return breadth(rest)
    parser = argparse.ArgumentParser(prog="python -m bench.aggregator")
    parser.add_argument(
        "--rates",
        default="50000,100000,200000,400000,600000,800000,1000000,1200000,1400000",
        help="samples/s steps, ascending; stops at the first unsustained one",
    )
    # One config per invocation by default: in the one run that tried two in a row, the
    # second job in the same SparkSession made no batch at all (not yet understood).
    parser.add_argument("--configs", "--config", default="issue", help=",".join(CONFIGS))
    parser.add_argument("--step-seconds", type=int, default=30)
    parser.add_argument("--warmup-seconds", type=int, default=20)
    parser.add_argument("--trigger-seconds", type=float, default=2.0)
    parser.add_argument(
        "--partitions",
        type=int,
        default=TOPIC_PARTITIONS,
        help="per metric topic (default: apm.model.TOPIC_PARTITIONS)",
    )
    parser.add_argument(
        "--no-dedup",
        action="store_true",
        help="run the job with APM_AGGREGATOR_DEDUP=false (its own doc section)",
    )
    parser.add_argument(
        "--floor-seconds",
        type=int,
        default=30,
        help="per rate of Spark's own floor for the same shape (bench/floor.py); 0 skips it",
    )
    parser.add_argument("--no-doc", action="store_true", help="print only")
    parser.add_argument(
        "--json", type=Path, help="also write each config's steps and best rate here (JSON)"
    )
    args = parser.parse_args(argv)
    rates = [int(r) for r in args.rates.split(",")]
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    if unknown := set(configs) - set(CONFIGS):
        parser.error(f"unknown configs {sorted(unknown)}; known: {', '.join(CONFIGS)}")

    from aggregator.session import build_session
    from launch.stack.jars import spark_jars

    spark = build_session("aggregator-bench", jars=spark_jars())
    table = [
        [
            "config",
            "queries",
            "rate (samples/s)",
            "lag growth (samples/s)",
            "sustained",
            "batches",
            "batch p50 (s)",
            "batch p99 (s)",
            "freshness p50 (s)",
            "freshness p99 (s)",
        ]
    ]
    summary = []
    results: dict[str, Any] = {}
    try:
        for config in configs:
            rows, best, phases = _run_config(config, rates, args, spark, args.warmup_seconds)
            results[config] = {
                "best": best,
                "rows": rows,
                "phases": phases,
                "last_phases": _last_phases.get(config, {}),
            }
            if args.no_dedup:
                rows = [[f"{row[0]} (no dedup)", *row[1:]] for row in rows]
            table.extend(rows)
            shown = ", ".join(
                f"{k} {v:.2f} s"
                for k, v in phases.items()
                if k in ("addBatch", "queryPlanning", "walCommit", "commitOffsets", "latestOffset")
            )
            summary.append(
                f"`{config}`: highest sustained {best:,} samples/s; median phases "
                f"of its batches: {shown or '-'}; state commit "
                f"{phases.get('windows commitTimeMs', float('nan')):.0f} ms, "
                "dedup state updates (task time) "
                f"{phases.get('dedup allUpdatesTimeMs', float('nan')):.0f} ms, "
                "windows in state "
                f"{phases.get('windows numRowsTotal', float('nan')):.0f}, dedup keys "
                f"{phases.get('dedup numRowsTotal', float('nan')):.0f}."
            )
    finally:
        spark.stop()
    best_rate = max(
        (int(row[2].replace(",", "")) for row in table[1:] if row[4] == "yes"), default=0
    )
    floor_note = ""
    if args.floor_seconds > 0:
        floor_note = _floor(best_rate, args, table)
    notes = (
        f"Job on local[2] in-process, {METRICS} metric topics x {args.partitions} "
        f"partitions, {SERVERS:,} servers, records of up to {LINES_PER_RECORD:,} samples, "
        f"trigger {args.trigger_seconds:g} s, warm-up {args.warmup_seconds} s, "
        f"{args.step_seconds} s per rate, stopping at the first unsustained rate. "
        "Configurations: "
        + "; ".join(f"`{k}`: {v}" for k, v in CONFIGS.items() if k in configs)
        + ". "
        "Sustained = lag growth (the least-squares slope of the lag) under 5% of the rate "
        "over the last two thirds of a step. "
        "Freshness = time from a 10 s window's end until its row holds every sample in "
        "Cassandra (`-`/nan: no window completed within the step). The machine is shared "
        "and loaded; figures are medians of one run. " + " ".join(summary) + floor_note
    )
    print("\n".join(" | ".join(map(str, row)) for row in table))
    print(notes)
    if args.json is not None:
        args.json.write_text(json.dumps({"header": table[0], "configs": results}))
    if not args.no_doc:
        if configs[0].startswith("by-server"):
            write_section(
                f"aggregator-{configs[0]}",
                "Aggregator, per-server series (BY server over 10,000 servers, issue 26)",
                " ".join(["python -m bench.aggregator", *(argv or sys.argv[1:])]),
                table,
                notes,
            )
        elif args.no_dedup:
            write_section(
                "aggregator-nodedup",
                "Aggregator without the dedup stage (APM_AGGREGATOR_DEDUP=false)",
                "make bench-aggregator-nodedup",
                table,
                notes,
            )
        else:
            write_section(
                "aggregator",
                "Aggregator (Spark Structured Streaming, local[2])",
                "make bench-aggregator",
                table,
                notes,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
