"""``make bench-ingest``, third part: what host tags cost the ingest (issue 37). One real
``apm ingest`` process on the real Kafka takes the same snapshots without tags and with the
synthetic fleet's three (``loadgen.tags``: role, dc, env), in alternating rounds, so both
sides see the same machine. Prints accepted samples/s and samples per ingest CPU core of each,
their ratio, and the bytes Kafka stores per accepted sample of each: the metric topics' growth
(the brokers' own log sizes, ``describe_log_dirs``), and for tagged snapshots the tags topic's
growth too (``apm.tags.TAGS_TOPIC``: a server's tags are published when they change, so the
steady state adds nothing per sample; the issue's bound is 10% more bytes)."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

import orjson

from apm.kafka import delete_topics, new_admin
from apm.model import topic_for
from apm.tags import TAGS_TOPIC
from bench.base import progress, write_section
from bench.ingest import drive, metric_name, warm_up
from bench.stage import cpu_seconds
from ingest.auth import add_key
from ingest.settings import IngestSettings
from launch import processes
from launch.probe import free_port
from loadgen.tags import server_tags

__all__ = ["main"]

COMMAND = "python -m bench.ingest_tags"


def _bodies(servers: int, metrics: int, count: int, run: str, tagged: bool) -> list[bytes]:
    now = time.time()
    return [
        orjson.dumps(
            {
                "snapshots": [
                    {
                        "server": f"bench-{run}-{s:05d}",
                        "ts": now + i % 60,
                        "metrics": {
                            metric_name(run, m): (s * 7 + m * 13 + i) % 1000 / 10.0
                            for m in range(metrics)
                        },
                        **({"tags": server_tags(s, 1)} if tagged else {}),
                    }
                    for s in range(servers)
                ]
            }
        )
        for i in range(count)
    ]


def _stored_bytes(bootstrap: str, topics: Iterable[str]) -> int:
    """The bytes the brokers' logs hold for ``topics`` (every partition, every broker)."""
    wanted, total = set(topics), 0
    admin = new_admin(bootstrap, client_id="bench-ingest-tags")
    try:
        for broker in admin.describe_log_dirs():
            for log_dir in broker["log_dirs"]:
                for topic in log_dir["topics"]:
                    if topic["name"] in wanted:
                        total += sum(p["partition_size"] for p in topic["partitions"])
    finally:
        admin.close()
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--servers", type=int, default=100)
    parser.add_argument("--metrics", type=int, default=100)
    parser.add_argument("--threads", type=int, default=8, help="concurrent connections")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each side")
    parser.add_argument("--seconds", type=float, default=10.0, help="per round and side")
    parser.add_argument("--no-doc", action="store_true", help="do not write BENCHMARKS.md")
    args = parser.parse_args(argv)
    bootstrap = IngestSettings().kafka_bootstrap
    runs = {"plain": f"p{os.getpid()}", "tagged": f"t{os.getpid()}"}
    topics = {
        side: [topic_for(metric_name(run, m)) for m in range(args.metrics)]
        for side, run in runs.items()
    }
    topics["tagged"].append(TAGS_TOPIC)
    got: dict[str, list[tuple[int, float, float]]] = {side: [] for side in runs}
    stored: dict[str, int] = dict.fromkeys(runs, 0)
    with tempfile.TemporaryDirectory(prefix="apm-bench-ingest-tags-") as tmp:
        home = Path(tmp)
        key = add_key(home / "keys", "bench")
        port = free_port()
        progress(f"starting apm ingest on :{port} (Kafka {bootstrap})")
        proc = processes.ingest(port, home / "keys", bootstrap).start(home)
        pid = proc.pid()
        assert pid is not None
        procs = {"ingest": [pid]}
        url = processes.ingest_url(port)
        try:
            bodies = {
                side: _bodies(args.servers, args.metrics, 8, run, side == "tagged")
                for side, run in runs.items()
            }
            for side, own in bodies.items():
                progress(f"warm-up {side} (creates {args.metrics} topics), {len(own[0])} bytes")
                warm_up(url, key, own[0])
                drive(url, key, own, 2.0, args.threads)
            for n in range(args.rounds):
                for side, own in bodies.items():
                    size0 = _stored_bytes(bootstrap, topics[side])
                    cpu0, t0 = cpu_seconds(procs)["ingest"], time.monotonic()
                    samples, _latencies, errors = drive(url, key, own, args.seconds, args.threads)
                    wall = time.monotonic() - t0
                    cpu = (cpu_seconds(procs)["ingest"] - cpu0) / wall
                    if errors:
                        raise RuntimeError(f"{errors} requests of the {side} round were not 202")
                    stored[side] += _stored_bytes(bootstrap, topics[side]) - size0
                    got[side].append((samples, samples / wall, samples / wall / max(cpu, 1e-9)))
                    progress(
                        f"round {n + 1}/{args.rounds} {side}: {samples / wall:,.0f} samples/s, "
                        f"ingest CPU {cpu:.2f} cores"
                    )
        finally:
            proc.stop(30)
            delete_topics(bootstrap, topics["plain"] + topics["tagged"][:-1])

    rate = {side: statistics.median(r[1] for r in rounds) for side, rounds in got.items()}
    per_core = {side: statistics.median(r[2] for r in rounds) for side, rounds in got.items()}
    per_sample = {side: stored[side] / sum(r[0] for r in got[side]) for side in got}
    rows = [
        ["figure", "without tags", "with 3 tags", "with / without"],
        [
            "accepted samples/s (one ingest process)",
            f"{rate['plain']:,.0f}",
            f"{rate['tagged']:,.0f}",
            f"{rate['tagged'] / rate['plain']:.2f}",
        ],
        [
            "samples/s per ingest CPU core",
            f"{per_core['plain']:,.0f}",
            f"{per_core['tagged']:,.0f}",
            f"{per_core['tagged'] / per_core['plain']:.2f}",
        ],
        [
            "Kafka bytes stored per accepted sample (with tags: and the tags topic)",
            f"{per_sample['plain']:.2f}",
            f"{per_sample['tagged']:.2f}",
            f"{per_sample['tagged'] / per_sample['plain']:.3f}",
        ],
    ]
    load = Path("/proc/loadavg").read_text().split()[0]
    notes = (
        f"Medians of {args.rounds} rounds of {args.seconds:g} s a side, the sides alternating "
        f"in one ingest process ({args.servers} servers x {args.metrics} metrics a request, "
        f"{args.threads} connections; load average {load} at the end). Bytes: the growth of "
        "the brokers' logs over the measured rounds (describe_log_dirs, record batches "
        "compressed as the ingest's producer sends them) over the samples accepted then."
    )
    for row in rows[1:]:
        print(f"{row[0]:<72} {row[1]:>12} {row[2]:>12} {row[3]:>8}")
    if not args.no_doc:
        write_section("ingest-tags", "Ingest: what host tags cost", COMMAND, rows, notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
