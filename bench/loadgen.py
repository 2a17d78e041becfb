"""``make bench-loadgen``: what the load generator itself costs at a given rate, in its
normal mode and in its replay mode (``--replay-seconds``), sending through the real ingest to
the local Kafka. The figure that matters is the load generator's CPU (cores), because on one
machine it competes with the stages it loads (docs/BENCHMARKS.md, "Full pipeline").
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from bench.base import progress, write_section

__all__ = ["main"]


def _cores(proc: subprocess.Popen[bytes], seconds: float) -> float:
    import psutil

    times = psutil.Process(proc.pid).cpu_times()
    return (times.user + times.system) / seconds


def _run(
    target: str, key: str, ingest_pid: int, args: argparse.Namespace, prefix: str, replay: int
) -> list[str]:
    """One ``apm loadgen`` run in real time; returns its table row."""
    import json

    import psutil

    from bench.stage import cpu_seconds
    from launch import processes

    spec = processes.loadgen(
        target,
        key,
        servers=args.rate // args.metrics,
        metrics=args.metrics,
        duration=f"{args.seconds}s",
        metric_prefix=prefix,
        extra_args=(
            "--silent-fraction",
            "0",
            "--concurrency",
            "32",
            "--gzip-level",
            str(args.gzip_level),
            "--replay-seconds",
            str(replay),
            "--quiet",
        ),
    )
    ingest = {"ingest": [ingest_pid]}
    before = cpu_seconds(ingest)["ingest"]
    began = time.monotonic()
    out = Path(tempfile.mkdtemp(prefix="lgbench-")) / "summary.json"
    with out.open("wb") as summary:  # apm loadgen prints its JSON summary on stdout
        # The key goes through the environment: a command line is visible to `ps`.
        env = {**os.environ, "APM_LOADGEN_API_KEY": key}
        proc = subprocess.Popen(spec.command, stdout=summary, env=env)
    # A process's CPU is readable until it is reaped: sample it just before it ends.
    cores = 0.0
    while proc.poll() is None:
        elapsed = time.monotonic() - began
        try:
            cores = _cores(proc, elapsed)
        except psutil.Error:
            break
        time.sleep(0.5)
    wall = time.monotonic() - began
    ingest_cores = (cpu_seconds(ingest)["ingest"] - before) / wall
    got = json.loads(out.read_text())
    if proc.returncode:
        progress(f"apm loadgen exited {proc.returncode}: {got.get('errors')}")
    return [
        "replay" if replay else "generate",
        str(replay or "-"),
        f"{args.rate:,}",
        f"{got['accepted'] / args.seconds:,.0f}",
        str(got["lost"]),
        str(got["late_ticks"]),
        f"{cores:.2f}",
        f"{ingest_cores:.2f}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.loadgen", description=__doc__)
    parser.add_argument("--rate", type=int, default=200_000, help="samples/s")
    parser.add_argument("--metrics", type=int, default=20)
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--replay-seconds", type=int, default=10)
    parser.add_argument("--gzip-level", type=int, default=1)
    parser.add_argument("--no-doc", action="store_true", help="print only")
    args = parser.parse_args(argv)

    from apm.kafka import delete_topics
    from apm.model import topic_for
    from ingest.auth import add_key
    from ingest.settings import IngestSettings
    from launch import processes
    from launch.probe import free_port
    from loadgen.fleet import metric_catalog

    home = Path(tempfile.mkdtemp(prefix="lgbench-"))
    key = add_key(home / "keys", "bench-loadgen")
    bootstrap = IngestSettings().kafka_bootstrap
    port = free_port()
    ingest = processes.ingest(port, home / "keys", bootstrap).start(home / "ingest")
    target = processes.ingest_url(port)
    prefix = f"lgbench{uuid.uuid4().hex[:6]}."
    rows = [
        [
            "mode",
            "cycle (s)",
            "target samples/s",
            "accepted samples/s",
            "lost",
            "late ticks",
            "loadgen cores",
            "ingest cores",
        ]
    ]
    try:
        for replay in (0, args.replay_seconds):
            progress(f"loadgen {'replay' if replay else 'generate'} at {args.rate:,} samples/s")
            rows.append(_run(target, key, ingest.pid() or 0, args, prefix, replay))
            progress(" | ".join(rows[-1]))
    finally:
        ingest.stop(30)
        delete_topics(bootstrap, [topic_for(m) for m, _ in metric_catalog(args.metrics, prefix)])
    notes = (
        f"`apm loadgen` in real time for {args.seconds} s, {args.rate // args.metrics:,} servers "
        f"x {args.metrics} metrics, 100 servers a request, 32 connections, gzip level "
        f"{args.gzip_level}, through one real ingest process into the local Kafka, every process "
        "on the same 2 cores. loadgen cores = the load generator's user + system CPU over its "
        "run; `replay` generates the cycle's seconds once and then reuses their encoded "
        "requests, substituting the timestamp (`--replay-seconds`). Late ticks = seconds sent "
        "more than 1 s after their time."
    )
    table = "\n".join(" | ".join(r) for r in rows)
    print(table)
    print(notes)
    if not args.no_doc:
        write_section("loadgen", "Load generator cost", "make bench-loadgen", rows, notes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
