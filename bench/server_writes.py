"""The executors' writer of per-server results (aggregator/server_writes.py) alone, on the real
Cassandra: rows/s for one window of N servers x Q queries (``evaluate``'s per-server rows made
up in Spark), with single-partition batches of each of --batch-rows in the same run (a
server_series partition holds the ~40 servers of a shard at 10,000 servers). Prints its
figures; with --doc also into docs/BENCHMARKS.md.

    python -m bench.server_writes [--servers 10000] [--queries 10] [--repeat 3] [--batch-rows 8,32]
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

from bench.base import progress, write_section
from bench.stage import cassandra_pids, cpu_seconds

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.server_writes")
    parser.add_argument("--servers", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--batch-rows",
        default="8,32",
        help="rows per single-partition batch to compare, comma-separated",
    )
    parser.add_argument("--doc", action="store_true", help="also write docs/BENCHMARKS.md")
    args = parser.parse_args(argv)

    from pyspark.sql import functions as F

    from aggregator.server_writes import ServerWrites, WriteCounts, series_queries, write
    from aggregator.session import build_session
    from apm.query import parse
    from launch.stack.jars import spark_jars
    from storage.repository import Repository
    from storage.settings import StorageSettings

    spark = build_session("server-writes-bench", jars=spark_jars())
    keyspace = f"swbench_{uuid.uuid4().hex[:8]}"
    repo = Repository.connect(StorageSettings(keyspace=keyspace))
    text = "FROM * SELECT cpu WINDOW 10s COMPUTE min, max, avg, p50, p99 BY server TOP 10 BY avg"
    queries = {f"q{i}": parse(text) for i in range(args.queries)}
    java = series_queries(spark, queries)
    rows_n = args.servers * args.queries
    table = [
        [
            "rows a partition batch",
            "rows",
            "median s",
            "rows/s (median)",
            "Cassandra CPU us a written row (median)",
        ]
    ]
    cassandra = {"cassandra": cassandra_pids()}
    try:
        batch_sizes = [int(x) for x in args.batch_rows.split(",")]
        results: dict[int, list[float]] = {size: [] for size in batch_sizes}
        cpu: dict[int, list[float]] = {size: [] for size in batch_sizes}
        start = 1_900_000_000
        for i in range(args.repeat):
            for rows_per_batch in batch_sizes:
                start += 10
                frame = (
                    spark.range(rows_n)
                    .select(
                        F.concat(F.lit("q"), (F.col("id") % args.queries).cast("string")).alias(
                            "query_id"
                        ),
                        F.concat(
                            F.lit("srv-"), (F.col("id") / args.queries).cast("long").cast("string")
                        ).alias("server"),
                        F.lit(10).alias("window_seconds"),
                        F.lit(start).cast("long").alias("window_start"),
                        F.lit(10).cast("long").alias("n"),
                        (F.col("id") % 97).cast("double").alias("sum"),
                        F.lit(0.0).alias("min"),
                        F.lit(9.0).alias("max"),
                        F.array(F.lit(4.5), F.lit(8.9)).alias("percentiles"),
                    )
                    .persist()
                )
                frame.count()
                writes = ServerWrites(StorageSettings(), keyspace, batch_rows=rows_per_batch)
                counts = WriteCounts(spark, f"swb-{i}-{rows_per_batch}")
                began, cpu0 = time.monotonic(), cpu_seconds(cassandra)["cassandra"]
                write(frame, java, writes, time.time(), counts)
                took = time.monotonic() - began
                spent = cpu_seconds(cassandra)["cassandra"] - cpu0
                done = counts.drain()
                frame.unpersist()
                if done["written"] == 0 or done["refused"]:
                    raise RuntimeError(f"the writer wrote {done}")
                results[rows_per_batch].append(took)
                cpu[rows_per_batch].append(spent / done["written"] * 1e6)
                progress(f"batch rows {rows_per_batch}: {rows_n:,} rows in {took:.2f} s ({done})")
        for rows_per_batch, times in results.items():
            med = statistics.median(times)
            table.append(
                [
                    f"up to {rows_per_batch}",
                    f"{rows_n:,}",
                    f"{med:.2f}",
                    f"{rows_n / med:,.0f}",
                    f"{statistics.median(cpu[rows_per_batch]):.1f}"
                    if cassandra["cassandra"]
                    else "-",
                ]
            )
    finally:
        repo.session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
        repo.close()
        spark.stop()
    notes = (
        f"{args.servers:,} servers x {args.queries} BY server TOP 10 queries, one 10 s window: "
        "each row written to server_series (partition: query, day, shard of 256) and "
        "window_servers (partition: query, window) in single-partition batches, "
        "the day indexes, and every window ranked (its window read from window_servers "
        "before the task's writes, on the executor cache's first miss; the first repeat also "
        f"writes the day indexes); {args.repeat} repeats alternating, medians. Local "
        "Cassandra (1.5 GB heap) on the same 2 cores; its CPU (user + system, /proc) over the "
        "rows the writer counts written (indexes and rankings included) is the figure least "
        "moved by other work on the cores."
    )
    print("\n".join(" | ".join(map(str, r)) for r in table))
    print(notes)
    if args.doc:
        write_section(
            "server-writes",
            "Per-server results written by the executors (Java driver, issue 35)",
            "python -m bench.server_writes",
            table,
            notes,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
