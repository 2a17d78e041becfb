"""The moving parts of ``make bench-pipeline``: the processes it starts (an ingest and an
aggregator on the shared engines, each run with its own topics and keyspace), their CPU, and
the comparison of the stored results with the load generator's truth."""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apm.kafka import TopicSpec, delete_topics, ensure_topics, new_admin
from apm.model import metric_for_topic, topic_for
from apm.query import parse
from apm.wire import encode_chunks
from bench.base import percentile, progress
from loadgen.fleet import Fleet, metric_catalog
from loadgen.runner import run_load
from loadgen.settings import LoadgenSettings
from loadgen.truth import TruthCollector

__all__ = [
    "Procs",
    "Stage",
    "cassandra_pids",
    "check_results",
    "cpu_seconds",
    "wire_bytes_per_sample",
]

FRESHNESS_TARGET_S = 5.0


def cassandra_pids() -> list[int]:
    """The stack's Cassandra (its pid file), or none when the stack is not this machine's."""
    from launch.stack.config import StackSettings

    pidfile = StackSettings().var / "cassandra" / "cassandra.pid"
    try:
        return [int(pidfile.read_text().strip())]
    except (OSError, ValueError):
        return []


def cpu_seconds(pids: dict[str, list[int]], own: tuple[str, ...] = ()) -> dict[str, float]:
    """User + system CPU seconds of each named group of processes and their children; the
    groups named in ``own`` count their own processes only (the benchmark's process, which
    runs the load generator, is also the parent of the stages it starts)."""
    import psutil

    out: dict[str, float] = {}
    for name, group in pids.items():
        total = 0.0
        for pid in group:
            with contextlib.suppress(psutil.Error):
                proc = psutil.Process(pid)
                family = [] if name in own else proc.children(recursive=True)
                for p in [proc, *family]:
                    with contextlib.suppress(psutil.Error):
                        t = p.cpu_times()
                        total += t.user + t.system
        out[name] = total
    return out


def wire_bytes_per_sample(metrics: int, prefix: str, servers: int = 1000) -> float:
    """Average bytes one sample takes in an apm.wire record (one tick of a sample fleet)."""
    fleet = Fleet(servers, metrics, metric_prefix=prefix, silent_fraction=0.0)
    tick = fleet.step(time.time())
    size = sum(
        len(chunk)
        for col in range(metrics)
        for chunk in encode_chunks(
            zip(fleet.names, [tick.ts] * servers, tick.values[:, col].tolist(), strict=True)
        )
    )
    return size / (servers * metrics)


@dataclass
class Stage:
    rate: int
    servers: int
    summary: dict[str, Any]
    cores: dict[str, float]
    check: dict[str, Any]
    cpu_seconds: dict[str, float] = field(default_factory=dict)  # start until settled

    @property
    def sustained(self) -> bool:
        return (
            self.summary["lost"] == 0
            and self.check["lost"] == 0
            and self.summary["late_ticks"] == 0
            and self.check["fresh_p99"] <= FRESHNESS_TARGET_S
        )

    def describe(self) -> str:
        return (
            f"{self.rate:,} samples/s: accepted {self.summary['accepted_per_s']:,.0f}/s, "
            f"ingest loss {self.summary['lost']}, pipeline loss {self.check['lost']}, "
            f"freshness p99 {self.check['fresh_p99']:.1f}s, windows complete "
            f"{self.check['complete_windows']}/{self.check['windows']} (missing "
            f"{self.check['missing_windows']}), wrong {self.check['wrong']}, cores "
            + ", ".join(f"{k} {v:.2f}" for k, v in self.cores.items())
        )


@dataclass
class Procs:
    home: Path
    bootstrap: str
    prefix: str
    metrics: int
    keyspace: str
    url: str = ""
    key: str = ""
    repo: Any = None
    query_ids: dict[str, str] = field(default_factory=dict)
    _started: list[Any] = field(default_factory=list)

    @classmethod
    @contextlib.contextmanager
    def start(
        cls, home: Path, bootstrap: str, prefix: str, metrics: int, keyspace: str
    ) -> Iterator[Procs]:
        procs = cls(home, bootstrap, prefix, metrics, keyspace)
        try:
            procs._start()
            yield procs
        finally:
            procs.close()

    @property
    def metric_names(self) -> list[str]:
        return [m for m, _ in metric_catalog(self.metrics, self.prefix)]

    def _start(self) -> None:
        from ingest.auth import add_key
        from launch import processes
        from launch.probe import free_port
        from storage.repository import Repository
        from storage.settings import StorageSettings

        progress(f"bench-pipeline: keyspace {self.keyspace}, topics {self.prefix}*")
        overrides: dict[str, Any] = {"keyspace": self.keyspace}
        self.repo = Repository.connect(StorageSettings(**overrides))
        ensure_topics(
            self.bootstrap, [topic_for(m) for m in self.metric_names], TopicSpec(partitions=4)
        )
        self.key = add_key(self.home / "ingest-keys", "bench-pipeline")
        port = free_port()
        self._started.append(
            processes.ingest(port, self.home / "ingest-keys", self.bootstrap).start(
                self.home / "ingest"
            )
        )
        self.url = processes.ingest_url(port)
        metrics_port = free_port()
        spec = processes.aggregator(
            self.home / "aggregator" / "checkpoint",
            name=f"bench-agg-{self.keyspace}",
            metrics=self.metric_names,
            metrics_port=metrics_port,
            keyspace=self.keyspace,
        )
        self._started.append(
            spec.start(
                self.home / "aggregator",
                wait_s=180,
                progress=progress,
                env={"APM_AGGREGATOR_KAFKA_BOOTSTRAP": self.bootstrap},
            )
        )

    def pids(self) -> dict[str, list[int]]:
        from launch.stack import control
        from launch.stack.config import StackSettings

        out = {
            "ingest": [self._started[0].pid()],
            "aggregator": [self._started[1].pid()],
            "loadgen": [os.getpid()],
        }
        for row in control.status(StackSettings()):
            out[row.name] = [row.pid]
        return {k: [p for p in v if p] for k, v in out.items()}

    def save_queries(self, queries: list[Any]) -> None:
        for q in queries:
            if q.metric not in self.query_ids:
                self.query_ids[q.metric] = self.repo.save_query(q.text).id

    def warm_up(self, window: int, timeout_s: float = 300.0) -> None:
        """A small load until its first results come back: Spark is up and streaming."""
        queries = [
            parse(f"FROM * SELECT {m} WINDOW {window}s COMPUTE count, min, max, avg, p99")
            for m in self.metric_names
        ]
        self.save_queries(queries)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            settings = LoadgenSettings(
                servers=20,
                metrics=self.metrics,
                duration_s=5,
                target=self.url,
                api_key=self.key,
                metric_prefix=self.prefix,
                seed=1,
            )
            run_load(settings, progress=False)
            qid = self.query_ids[self.metric_names[0]]
            if any(True for _ in self.repo.read_results(qid, time.time() - 600, time.time())):
                progress("bench-pipeline: the pipeline is live")
                return
            progress("bench-pipeline: waiting for the aggregator's first results")
            time.sleep(5)
        raise RuntimeError(f"no results after {timeout_s:.0f}s; see {self.home}")

    def close(self) -> None:
        for proc in reversed(self._started):
            proc.stop(60)
        with contextlib.suppress(Exception):
            admin = new_admin(self.bootstrap)
            try:
                delete_topics(  # by metric name: a name with '_' has an escaped topic
                    admin,
                    [
                        t
                        for t in admin.list_topics()
                        if (metric_for_topic(t) or "").startswith(self.prefix)
                    ],
                )
            finally:
                admin.close()
        if self.repo is not None:
            with contextlib.suppress(Exception):
                self.repo.session.execute(f"DROP KEYSPACE IF EXISTS {self.keyspace}")
            self.repo.close()


def check_results(procs: Procs, truths: list[TruthCollector], settle_s: float) -> dict[str, Any]:
    """Waits up to ``settle_s`` for every window of every truth to be stored complete, then
    compares: loss (truth samples not counted), freshness and exactness of min/max/count."""
    deadline = time.monotonic() + settle_s
    while True:
        lost, wrong, fresh, windows, missing = 0, 0, [], 0, 0
        for truth in truths:
            qid = procs.query_ids[truth.query.metric]
            want = truth.results()
            if not want:
                continue
            got = {
                r.window_start: r
                for r in procs.repo.read_results(
                    qid, want[0]["window_start"], want[-1]["window_start"] + 1
                )
            }
            for w in want:
                windows += 1
                row = got.get(w["window_start"])
                have = row.samples if row is not None else 0
                lost += max(0, w["samples"] - have)
                missing += row is None
                if row is None or row.samples != w["samples"]:
                    continue
                fresh.append(row.updated_at - (w["window_start"] + truth.window))
                exact = {k: w["values"][k] for k in ("count", "min", "max")}
                if {k: row.values.get(k) for k in exact} != exact:
                    wrong += 1
        if lost == 0 or time.monotonic() > deadline:
            break
        time.sleep(2.0)
    # No complete window at all: freshness is unbounded (and the stage is not sustained).
    p50, p99 = (percentile(fresh, 50), percentile(fresh, 99)) if fresh else (math.inf, math.inf)
    return {
        "lost": lost,
        "wrong": wrong,
        "windows": windows,
        "missing_windows": missing,
        "complete_windows": len(fresh),
        "fresh_p50": p50,
        "fresh_p99": p99,
    }
