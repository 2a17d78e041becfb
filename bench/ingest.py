"""``make bench-ingest``: a real ``apm ingest`` process on the real Kafka, driven from this
process over HTTP. Prints accepted samples/s, the ingest process's CPU and request latency,
and writes them to docs/BENCHMARKS.md."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import orjson

from apm.kafka import delete_topics
from apm.model import topic_for
from bench.base import percentile, progress, write_section
from bench.stage import cpu_seconds
from ingest.auth import add_key
from ingest.settings import IngestSettings
from launch import processes
from launch.probe import free_port

__all__ = ["drive", "main", "metric_name", "warm_up"]

COMMAND = "make bench-ingest"


def metric_name(run: str, m: int) -> str:
    # A fresh name per run: Kafka deletes topics asynchronously, and re-creating the names a
    # previous run just deleted stalls the producer on vanishing partitions.
    return f"bench.ingest.{run}.m{m:03d}"


def _bodies(servers: int, metrics: int, count: int, run: str = "r") -> list[bytes]:
    now = time.time()
    return [
        orjson.dumps(
            {
                "snapshots": [
                    {
                        "server": f"bench-{s:05d}",
                        "ts": now + i % 60,
                        "metrics": {
                            metric_name(run, m): (s * 7 + m * 13 + i) % 1000 / 10.0
                            for m in range(metrics)
                        },
                    }
                    for s in range(servers)
                ]
            }
        )
        for i in range(count)
    ]


def drive(
    url: str, key: str, bodies: list[bytes], seconds: float, threads: int
) -> tuple[int, list[float], int]:
    """Posts bodies from ``threads`` connections for ``seconds``; (samples, latencies, errors)."""
    stop = time.monotonic() + seconds
    latencies: list[float] = []
    totals = [0, 0]
    lock = threading.Lock()
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def worker(offset: int) -> None:
        mine: list[float] = []
        accepted = errors = 0
        with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
            i = offset
            while time.monotonic() < stop:
                t0 = time.perf_counter()
                answer = client.post("/v1/metrics", content=bodies[i % len(bodies)])
                mine.append(time.perf_counter() - t0)
                if answer.status_code == 202:
                    accepted += answer.json()["accepted"]
                else:
                    errors += 1
                i += 1
        with lock:
            latencies.extend(mine)
            totals[0] += accepted
            totals[1] += errors

    pool = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return totals[0], latencies, totals[1]


def warm_up(url: str, key: str, body: bytes, limit_s: float = 180.0) -> None:
    """Until a request is answered 202 in under a second: creating 100 topics on a busy
    broker takes a while, and that is not what this benchmark measures."""
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    give_up = time.monotonic() + limit_s
    with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
        while time.monotonic() < give_up:
            t0 = time.perf_counter()
            answer = client.post("/v1/metrics", content=body)
            if answer.status_code == 202 and time.perf_counter() - t0 < 1.0:
                return
            progress(f"warm-up: {answer.status_code} in {time.perf_counter() - t0:.1f}s")
    raise RuntimeError("the ingest never answered 202 quickly during the warm-up")


def _delete_topics(bootstrap: str, metrics: int, run: str) -> None:
    delete_topics(bootstrap, sorted(topic_for(metric_name(run, m)) for m in range(metrics)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--servers", type=int, default=100)
    parser.add_argument("--metrics", type=int, default=100)
    parser.add_argument(
        "--threads",
        type=int,
        default=8,
        help="concurrent connections (the linger shares records among concurrent requests)",
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0, help="per round")
    parser.add_argument(
        "--linger-ms",
        type=float,
        default=IngestSettings().linger_ms,
        help="APM_INGEST_LINGER_MS of the ingest (0: no coalescing)",
    )
    parser.add_argument("--no-doc", action="store_true", help="do not write BENCHMARKS.md")
    args = parser.parse_args(argv)
    bootstrap = IngestSettings().kafka_bootstrap
    per_request = args.servers * args.metrics
    run = f"r{os.getpid()}"

    with tempfile.TemporaryDirectory(prefix="apm-bench-ingest-") as tmp:
        home = Path(tmp)
        key = add_key(home / "keys", "bench")
        port = free_port()
        progress(f"starting apm ingest on :{port} (Kafka {bootstrap})")
        proc = processes.ingest(port, home / "keys", bootstrap).start(
            home, env={"APM_INGEST_LINGER_MS": str(args.linger_ms)}
        )
        pid = proc.pid()
        assert pid is not None
        procs = {"ingest": [pid]}
        url = processes.ingest_url(port)
        try:
            bodies = _bodies(args.servers, args.metrics, 8, run)
            progress(f"warm-up (creates {args.metrics} topics), body {len(bodies[0])} bytes")
            warm_up(url, key, bodies[0])
            drive(url, key, bodies, 2.0, args.threads)
            rounds = []
            for n in range(args.rounds):
                cpu0, t0, mine0 = (
                    cpu_seconds(procs)["ingest"],
                    time.monotonic(),
                    time.process_time(),
                )
                samples, latencies, errors = drive(url, key, bodies, args.seconds, args.threads)
                wall = time.monotonic() - t0
                cpu = (cpu_seconds(procs)["ingest"] - cpu0) / wall
                client = (time.process_time() - mine0) / wall
                rate = samples / wall
                rounds.append((rate, cpu, latencies, errors, client))
                progress(
                    f"round {n + 1}/{args.rounds}: {rate:,.0f} samples/s, ingest CPU "
                    f"{cpu:.2f} cores ({rate / max(cpu, 1e-9):,.0f}/core), client CPU "
                    f"{client:.2f}, p50 {percentile(latencies, 50) * 1000:.1f} ms, "
                    f"p99 {percentile(latencies, 99) * 1000:.1f} ms, {errors} errors"
                )
        finally:
            proc.stop(30)
            _delete_topics(bootstrap, args.metrics, run)

    rate = statistics.median(r[0] for r in rounds)
    cpu = statistics.median(r[1] for r in rounds)
    p50 = statistics.median(percentile(r[2], 50) for r in rounds) * 1000
    p99 = statistics.median(percentile(r[2], 99) for r in rounds) * 1000
    errors = sum(r[3] for r in rounds)
    client = statistics.median(r[4] for r in rounds)
    per_core = statistics.median(r[0] / max(r[1], 1e-9) for r in rounds)
    rows = [
        ["figure", "value"],
        ["accepted samples/s (one ingest process, acks=all)", f"{rate:,.0f}"],
        ["samples/s per ingest CPU core", f"{per_core:,.0f}"],
        ["ingest process CPU (cores)", f"{cpu:.2f}"],
        ["bench client CPU (cores, same machine)", f"{client:.2f}"],
        ["request latency p50 (ms)", f"{p50:.1f}"],
        ["request latency p99 (ms)", f"{p99:.1f}"],
        [
            "request shape",
            f"{args.servers} servers x {args.metrics} metrics = "
            f"{per_request} samples, {len(bodies[0]) // 1024} KiB JSON",
        ],
        ["client connections", str(args.threads)],
        ["linger (APM_INGEST_LINGER_MS)", f"{args.linger_ms:g} ms"],
        ["non-202 answers", str(errors)],
    ]
    notes = (
        f"Medians of {args.rounds} rounds of {args.seconds:g}s after a 3s warm-up. The "
        "client runs in the bench process, Kafka and the ingest share the same 2 cores, "
        "so the client's and the broker's CPU are taken from the ingest's share (the "
        "machine is shared and loaded: the per-core figure is the ingest's own cost). "
        "Concurrent requests share records over the linger; `python -m bench.ingest "
        "--linger-ms 0` measures without it. "
        "Target: >= 200,000 samples/s per ingest process."
    )
    for row in rows[1:]:
        print(f"{row[0]:<52} {row[1]}")
    if not args.no_doc:
        write_section("ingest", "Ingest: POST /v1/metrics to Kafka", COMMAND, rows, notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
