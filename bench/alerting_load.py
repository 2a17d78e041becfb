"""The load ``make bench-alerting`` measures its latency under: ``apm loadgen`` at ``rate``
samples/s in real time through one ingest process, the local Kafka, one aggregator (local Spark)
and the local Cassandra (:class:`bench.stage.Procs`, its own topics and keyspace, removed after),
running in a thread while the latency trials run beside it. The evaluator and the Alertmanager
share the 2 cores and the Cassandra with that pipeline."""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from apm.query import parse
from apm.settings import PROJECT_ROOT
from bench.base import progress
from bench.stage import Procs
from loadgen.runner import run_load
from loadgen.settings import LoadgenSettings

__all__ = ["Load", "under_load"]

METRICS, WINDOW = 20, 10


@dataclass
class Load:
    rate: int
    summary: dict[str, Any] = field(default_factory=dict)
    load_avg: list[float] = field(default_factory=list)  # 1-min load average, start and end

    def describe(self) -> str:
        s = self.summary
        if not s:
            return f"{self.rate:,} samples/s asked: the load did not finish"
        return (
            f"{self.rate:,} samples/s asked, {s['accepted_per_s']:,.0f}/s accepted by the ingest "
            f"over {s['elapsed_s']:.0f} s ({s['lost']:,} lost, {s['late_ticks']} seconds "
            f"generated late); load average {self.load_avg[0]:.1f} at the start, "
            f"{self.load_avg[-1]:.1f} at the end"
        )


@contextlib.contextmanager
def under_load(rate: int, seconds: float) -> Iterator[Load]:
    """Yields once the pipeline is live and the loadgen is running at ``rate``; the load ends
    (and the pipeline is removed) when the block does, or after ``seconds``."""
    run = uuid.uuid4().hex[:8]
    prefix = f"benchal{run}."
    home = PROJECT_ROOT / "var" / "bench-alerting" / run
    load = Load(rate)
    with Procs.start(
        home, LoadgenSettings().kafka_bootstrap, prefix, METRICS, f"bench_{run}"
    ) as procs:
        procs.warm_up(WINDOW)
        servers = max(1, rate // METRICS)
        settings = LoadgenSettings(
            servers=servers,
            metrics=METRICS,
            seed=7,
            duration_s=seconds,
            target=procs.url,
            api_key=procs.key,
            metric_prefix=prefix,
            concurrency=32,
            servers_per_request=min(100, servers),
        )
        stop = threading.Event()
        queries = [
            parse(f"FROM * SELECT {m} WINDOW {WINDOW}s COMPUTE count, min, max, avg, p99")
            for m in procs.metric_names
        ]

        def generate() -> None:
            load.summary = run_load(settings, queries=queries, stop=stop, progress=False).summary

        worker = threading.Thread(target=generate, name="loadgen", daemon=True)
        progress(f"bench-alerting: load {servers * METRICS:,} samples/s for up to {seconds:.0f}s")
        load.load_avg.append(os.getloadavg()[0])
        worker.start()
        time.sleep(10)  # the load at its rate before the first trial
        try:
            yield load
        finally:
            load.load_avg.append(os.getloadavg()[0])
            stop.set()
            worker.join(120)
            progress(f"bench-alerting: {load.describe()}")
