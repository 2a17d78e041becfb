"""``python -m bench.aggregator_profile``: where an aggregator batch's time goes, piece by piece.

Each probe runs a part of the job's plan, in this process's Spark session, and prints the
median batch (or best-of-three batch-mode) time. Not part of ``make bench``; docs/aggregator.md
("Cost and limits") quotes its figures with this command.

- ``decode`` (streaming): the job's Kafka records (``streams.kafka_records``) through
  ``records.decode`` (one row per sample) into a noop sink, while the benchmark's feeder
  produces ``--rate`` samples/s into 10 topics.
- ``packs`` (streaming): the same records through ``records.packs`` (one row per record and
  dedup key), what the job's dedup plan shuffles since v4's step b.
- ``full`` (streaming): the same records through ``plan.window_summaries`` with the issue's
  100 queries into a noop sink: everything but evaluation and storage.
- ``decode-batch`` (batch mode): ``records.decode`` alone over 400,000 samples in memory;
  ``decode-batch-sql`` the same with v3's SQL decode (``records.decode_sql``): the
  before/after of v4's step a in one run (docs/aggregator.md, "v4, step by step").

``--stacks N`` samples the Spark executor threads' stacks N times (``jstack``, every 0.4 s,
from 25 s into each streaming probe) and prints what the busy samples were doing: a poor
man's profiler, which needs nothing but the JDK.
"""

from __future__ import annotations

import argparse
import collections
import multiprocessing as mp
import re
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
import uuid
from typing import Any

from bench.base import progress

__all__ = ["main"]

PROBES = ("decode", "packs", "full", "decode-batch", "decode-batch-sql")


# What a busy executor thread is doing: the innermost frame (from the top of its stack) that
# matches one of these, so that work called from a stage's shuffle writer counts as itself (a
# first match anywhere in the stack put the operator's stage, which ends in a shuffle write,
# under "the map stage" until v4's step b).
_KINDS = (
    (
        "decode and pack (the JVM, map stage)",
        r"io\.apm\.aggregator\.(Packs|Pack\$Builder|Decode|Seen)",
    ),
    ("KLL sketches", r"datasketches"),
    ("the JVM operator: dedup, fan-out, partials", r"io\.apm\.aggregator"),
    ("state store (RocksDB)", r"rocksdb|[Ss]tateStore"),
    ("Kafka read", r"kafka"),
    (
        "shuffle read and sort",
        r"ShuffleBlockFetcher|UnsafeExternalSorter|UnsafeInMemorySorter|ShuffleReader",
    ),
    ("shuffle write", r"ShuffleWriter|ShuffleExternalSorter|DiskBlockObjectWriter"),
    ("aggregation (hash aggregate)", r"Aggregat"),
    ("row conversion (codegen, encoders)", r"GeneratedClass|UnsafeProjection|Serializ"),
)


def _kind(frames: list[str]) -> str:
    for frame in frames:
        for kind, pattern in _KINDS:
            if re.search(pattern, frame):
                if kind == "KLL sketches":
                    inside = any("io.apm.aggregator" in f for f in frames)
                    return (
                        f"{kind} ({'in the operator' if inside else 'merged by the aggregation'})"
                    )
                return kind
    return f"other: {frames[0].removeprefix('at ')[:90]}"


_IDLE = re.compile(r"Unsafe\.park|Object\.wait|EPoll\.wait|LinkedBlockingQueue\.take")


def _sample_stacks(count: int, out: collections.Counter[str], after_s: float) -> None:
    import psutil

    time.sleep(after_s)  # past the first batches, which start the JVM's code paths
    jvms = [p for p in psutil.Process().children(recursive=True) if "java" in p.name()]
    if not jvms or shutil.which("jstack") is None:
        out["(no JVM or no jstack)"] += 1
        return
    for _ in range(count):
        dump = subprocess.run(
            ["jstack", str(jvms[0].pid)], capture_output=True, text=True, check=False
        ).stdout
        for thread in dump.split("\n\n"):
            if not thread.startswith('"Executor task launch worker'):
                continue
            frames = [line.strip() for line in thread.splitlines()[1:] if "at " in line]
            if not frames or _IDLE.search(frames[0]):
                out["idle"] += 1
                continue
            out[_kind(frames)] += 1
        time.sleep(0.4)


def _streaming(out: Any, seconds: float, feed: Any = None, stacks: int = 0) -> float:
    query = (
        out.writeStream.format("noop")
        .outputMode("update")
        .trigger(processingTime="2 seconds")
        .option("checkpointLocation", tempfile.mkdtemp(prefix="aggprof-"))
        .start()
    )
    sampled: collections.Counter[str] = collections.Counter()
    sampler = threading.Thread(target=_sample_stacks, args=(stacks, sampled, 25.0), daemon=True)
    if stacks:
        sampler.start()
    try:
        if feed is not None:
            feed.start()
            feed.join()
        else:
            time.sleep(seconds)
        time.sleep(4)
    finally:
        query.stop()
    if stacks:
        sampler.join()
        busy = sum(n for k, n in sampled.items() if k != "idle")
        for kind, n in sampled.most_common():
            share = f" ({n / busy:.0%} of busy)" if kind != "idle" and busy else ""
            print(f"  stacks: {kind}: {n}{share}")
    reports = [p for p in query.recentProgress if p.numInputRows > 0][3:]
    times = [p.durationMs.get("triggerExecution", 0) / 1000 for p in reports]
    return statistics.median(times) if times else float("nan")


def _queries(spark: Any, metrics: list[str]) -> Any:
    from aggregator.plan import queries_frame
    from apm.query import StoredQuery, parse
    from bench.aggregator import query_texts as texts

    stored = [
        StoredQuery(id=f"{m}-{i}", query=parse(t))
        for m in metrics
        for i, t in enumerate(texts("issue", m))
    ]
    return queries_frame(spark, stored)


def _probe(spark: Any, name: str, rate: int, seconds: int, stacks: int = 0) -> float:
    from aggregator import streams
    from aggregator.partials import DEDUP_BLOCK_SECONDS, DEDUP_BUCKETS
    from aggregator.plan import window_summaries
    from aggregator.records import decode, decode_sql, packs
    from aggregator.settings import AggregatorSettings
    from apm.kafka import TopicSpec, delete_topics, ensure_topics
    from apm.model import topic_for
    from bench.feed import METRICS, produce, templates

    metrics = [f"prof{uuid.uuid4().hex[:6]}m{i}" for i in range(METRICS)]
    table = _queries(spark, metrics)
    delay = 660
    if name.startswith("decode-batch"):
        decoder = decode_sql if name.endswith("-sql") else decode
        stamp = b"1700000000"
        records = [
            (topic_for(m), bytearray(t.replace(b"@@@@@@@@@@", stamp)))
            for i, m in enumerate(metrics)
            for t in templates(i, 40_000)
        ]
        raw = spark.createDataFrame(records, "topic string, value binary").repartition(2).cache()
        raw.count()
        best = float("inf")
        for _ in range(3):
            began = time.monotonic()
            decoder(raw).write.format("noop").mode("overwrite").save()
            best = min(best, time.monotonic() - began)
        raw.unpersist()
        return best
    settings = AggregatorSettings(metrics=",".join(metrics), metrics_port=0)
    topics = [topic_for(m) for m in metrics]
    ensure_topics(settings.kafka_bootstrap, topics, TopicSpec(partitions=1), wait_ms=60_000)
    try:
        source = streams.kafka_records(spark, settings, metrics, table, 0)
        if name == "decode":
            out = decode(source)
        elif name == "packs":
            out = packs(source, DEDUP_BUCKETS, DEDUP_BLOCK_SECONDS * 1_000_000)
        else:
            out = window_summaries(source, table, delay)
        feeder = mp.get_context("spawn").Process(
            target=produce, args=(settings.kafka_bootstrap, metrics, rate, seconds)
        )
        return _streaming(out, seconds, feeder, stacks)
    finally:
        delete_topics(settings.kafka_bootstrap, topics)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.aggregator_profile", description=__doc__)
    parser.add_argument("--probes", default=",".join(PROBES), help=",".join(PROBES))
    parser.add_argument("--rate", type=int, default=200_000, help="samples/s (streaming probes)")
    parser.add_argument("--seconds", type=int, default=40)
    parser.add_argument("--stacks", type=int, default=0, help="jstack samples per probe")
    args = parser.parse_args(argv)
    probes = [p for p in args.probes.split(",") if p]
    if unknown := set(probes) - set(PROBES):
        parser.error(f"unknown probes {sorted(unknown)}")

    from aggregator.session import build_session
    from launch.stack.jars import spark_jars

    spark = build_session("aggregator-profile", jars=spark_jars())
    try:
        for name in probes:
            progress(f"probe {name} ...")
            seconds = _probe(spark, name, args.rate, args.seconds, args.stacks)
            batch = name.startswith("decode-batch")
            what = "best of 3, 400,000 samples" if batch else "median batch"
            print(f"{name}: {seconds:.2f} s ({what}; rate {args.rate:,} samples/s, trigger 2 s)")
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
