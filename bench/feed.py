"""What the aggregator benchmarks run beside the job. Feeders, child processes so that encoding
costs the job nothing: ``produce`` (``issue``: 10 topics, 10,000 servers, records of up to 5,000
samples) and ``produce_fleet`` (``breadth``: a 1 Hz fleet's samples of a topic split into the
records the ingest's linger makes; ``ingest_records_per_topic`` measures that split). Probes: a
freshness poller and a batch-mode Kafka read. ``run_isolated``: a step in a JVM of its own."""

from __future__ import annotations

import json
import multiprocessing as mp
import queue
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from apm.kafka import delete_topics, new_producer
from apm.model import topic_for
from bench.base import progress

__all__ = [
    "INGEST_RECORDS_ORIGIN",
    "INGEST_RECORDS_PER_TOPIC",
    "LINES_PER_RECORD",
    "METRICS",
    "SERVERS",
    "fleet_records",
    "ingest_records_per_topic",
    "poll_freshness",
    "produce",
    "produce_fleet",
    "read_probe",
    "run_isolated",
    "templates",
]

SERVERS = 10_000
METRICS = 10
LINES_PER_RECORD = 5_000
# Records per metric topic per second that the real ingest wrote for 200 one-snapshot agents
# x 200 metrics (linger 10 ms) on the shared 2-core machine, where the load generator could
# not hold 1 Hz (so per second of fleet time; per wall second it was 16-24.5):
INGEST_RECORDS_PER_TOPIC = 30
INGEST_RECORDS_ORIGIN = (
    "what the real ingest (linger 10 ms) wrote for 200 one-snapshot agents of 200 metrics: "
    "30.5-35.8 records per topic per second of fleet time in four runs of the measurement "
    "(the last, `python -m bench.aggregator --config breadth --measure-ingest 60`: 35.8, "
    "ingest at 0.86 of a core); `apm loadgen` sending one snapshot per request held only "
    "0.5-0.7 Hz here, so the ratio at a true 1 Hz is not measured"
)
_PH = b"@@@@@@@@@@"  # 10-digit epoch seconds go here


def _values(metric_index: int, servers: int, seconds: int) -> tuple[list[str], list[list[float]]]:
    """The one synthetic fleet's values (``loadgen.fleet``) for one metric: its server names
    and ``seconds`` consecutive seconds of every server, all servers sending."""
    from loadgen.fleet import Fleet

    fleet = Fleet(servers, 1, seed=metric_index, silent_fraction=0.0)
    return fleet.names, [fleet.step(1_000_000 + s).values[:, 0].tolist() for s in range(seconds)]


def templates(metric_index: int, per_second: int) -> list[bytes]:
    """Records for one metric-second: ``per_second`` lines over the fleet, (server, ts) unique
    (more samples than servers go in as rounds at fractions of the second)."""
    rounds = -(-per_second // SERVERS)
    names, values = _values(metric_index, min(per_second, SERVERS), rounds)
    lines = []
    for i in range(per_second):
        frac = f"{(i // SERVERS) / rounds:.4f}"[1:]  # ".0000", ".5000" ...
        lines.append(
            b"%s\t%s%s\t%r"
            % (names[i % SERVERS].encode(), _PH, frac.encode(), values[i // SERVERS][i % SERVERS])
        )
    return [
        b"\n".join(lines[i : i + LINES_PER_RECORD]) for i in range(0, len(lines), LINES_PER_RECORD)
    ]


def fleet_records(metric_index: int, servers: int, records: int) -> list[bytes]:
    """One metric-second of ``servers`` 1 Hz agents as ``records`` records (the servers in
    near-equal shares), the way the ingest's linger coalesces concurrent snapshots."""
    names, values = _values(metric_index, servers, 1)
    lines = [
        b"%s\t%s.0\t%r" % (name.encode(), _PH, value)
        for name, value in zip(names, values[0], strict=True)
    ]
    k = max(1, min(records, servers))
    return [b"\n".join(lines[i * servers // k : (i + 1) * servers // k]) for i in range(k)]


def _send_every_second(
    bootstrap: str, topics: list[str], per_topic: list[list[bytes]], seconds: int
) -> None:
    producer = new_producer(
        bootstrap, acks=1, linger_ms=10, batch_size=1 << 20, max_request_size=4 << 20
    )
    second = int(time.time()) + 1
    end = second + seconds
    while second < end:
        time.sleep(max(0.0, second - time.time()))
        stamp = str(second).encode()
        for topic, records in zip(topics, per_topic, strict=True):
            for record in records:
                producer.send(topic, value=record.replace(_PH, stamp), headers=[("enc", b"tsv1")])
        producer.flush()
        second += 1
    producer.close()


def produce(bootstrap: str, metrics: list[str], rate: int, seconds: int) -> None:
    _send_every_second(
        bootstrap,
        [topic_for(m) for m in metrics],
        [templates(i, rate // len(metrics)) for i in range(len(metrics))],
        seconds,
    )


def produce_fleet(
    bootstrap: str, metrics: list[str], servers: int, records: int, seconds: int
) -> None:
    """Every second, ``servers`` samples per metric topic in ``records`` records."""
    _send_every_second(
        bootstrap,
        [topic_for(m) for m in metrics],
        [fleet_records(i, servers, records) for i in range(len(metrics))],
        seconds,
    )


def ingest_records_per_topic(
    bootstrap: str, servers: int, metrics: int, seconds: int, home: Path
) -> dict[str, float]:
    """Runs the real ingest and ``apm loadgen`` with one snapshot per request (what an agent
    sends) for ``seconds`` of fleet time; returns the records per topic per second the
    ingest wrote, per fleet second and per wall second (they differ when the load generator
    cannot hold 1 Hz), and what the run looked like (ingest CPU, loadgen lateness)."""
    from aggregator.lag import KafkaOffsets
    from bench.stage import cpu_seconds
    from ingest.auth import add_key
    from launch import processes
    from launch.probe import free_port
    from loadgen.fleet import metric_catalog
    from loadgen.runner import run_load
    from loadgen.settings import LoadgenSettings

    prefix = f"brcal{uuid.uuid4().hex[:6]}."
    topics = [topic_for(m) for m, _ in metric_catalog(metrics, prefix)]
    key = add_key(home / "keys", "bench-breadth")
    port = free_port()
    proc = processes.ingest(port, home / "keys", bootstrap).start(home / "ingest")
    offsets = KafkaOffsets(bootstrap)
    common: dict[str, Any] = {
        "servers": servers,
        "metrics": metrics,
        "api_key": key,
        "target": processes.ingest_url(port),
        "metric_prefix": prefix,
        "silent_fraction": 0.0,
    }
    try:  # a first run creates the topics; only the second one is counted
        run_load(
            LoadgenSettings(**common, duration_s=3, servers_per_request=servers), progress=False
        )
        before = sum(offsets.start_end(topics)[1].values())
        pids = {"ingest": [pid for pid in (proc.pid(),) if pid]}
        cpu = cpu_seconds(pids)["ingest"]
        began = time.monotonic()
        got = run_load(
            LoadgenSettings(**common, duration_s=seconds, servers_per_request=1, concurrency=64),
            progress=False,
        )
        wall = time.monotonic() - began
        cpu = cpu_seconds(pids)["ingest"] - cpu
        time.sleep(1)
        records = sum(offsets.start_end(topics)[1].values()) - before
    finally:
        proc.stop(30)
        offsets.close()
        delete_topics(bootstrap, topics)
    return {
        "records_per_topic_per_fleet_s": records / metrics / seconds,
        "records_per_topic_per_wall_s": records / metrics / wall,
        "wall_s": wall,
        "fleet_s": seconds,
        "ingest_cores": cpu / wall,
        "late_ticks": float(got.summary["late_ticks"]),
        "lost": float(got.lost),
    }


def poll_freshness(
    repo: Any, ids: list[str], full: int, stop: threading.Event, out: list[tuple[float, float]]
) -> None:
    """Polls the newest windows of ``ids``; appends (window end, readable time - window end)
    when a row first holds ``full`` samples."""
    done: set[tuple[str, float]] = set()
    while not stop.wait(0.25):
        for qid in ids:
            now = time.time()
            for row in repo.read_results(qid, now - 60, now):
                if (qid, row.window_start) not in done and row.samples >= full:
                    done.add((qid, row.window_start))
                    end = row.window_start + row.window_seconds
                    out.append((end, time.time() - end))


def read_probe(spark: Any, bootstrap: str, report: dict[str, Any] | None) -> list[float]:
    """Seconds to read one batch's offset ranges (every topic-partition) in batch mode with the
    job's source options and nothing else, twice with one consumer group: [cold, warm]."""
    source = (report or {}).get("sources", [{}])[0]
    if not source.get("startOffset") or not source.get("endOffset"):
        return [float("nan")] * 2
    start, end = (
        json.dumps(o) if isinstance(o, dict) else o
        for o in (source["startOffset"], source["endOffset"])
    )
    out, group = [], f"aggbench-probe-{uuid.uuid4().hex[:6]}"
    for _ in range(2):
        began = time.monotonic()
        try:
            (
                spark.read.format("kafka")
                .option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", ",".join(json.loads(start)))
                .option("startingOffsets", start)
                .option("endingOffsets", end)
                .option("kafka.fetch.max.wait.ms", "10")
                .option("kafka.group.id", group)
                .load()
                .coalesce(2)
                .count()
            )
        except Exception as exc:  # a diagnostic only: the step's figures stand without it
            progress(f"the read probe failed: {exc}")
            return [float("nan")] * 2
        out.append(time.monotonic() - began)
    return out


def run_isolated(target: Any, args: tuple[Any, ...], timeout_s: float) -> Any:
    """Runs ``target(*args, out)`` in a spawned process; returns what it put on ``out``. A
    process that exits without a result fails the run; one that gives none in ``timeout_s``
    (a JVM out of heap hangs rather than exits) is killed with its children, the JVM too."""
    import psutil

    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    child = ctx.Process(target=target, args=(*args, out))
    child.start()
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                return out.get(timeout=5)
            except queue.Empty:
                if not child.is_alive():
                    raise RuntimeError(
                        f"the step's process exited ({child.exitcode}) without a result"
                    ) from None
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no result in {timeout_s:.0f} s") from None
    finally:
        child.join(120)
        if child.is_alive() and child.pid is not None:
            family = psutil.Process(child.pid)
            for proc in [*family.children(recursive=True), family]:
                proc.kill()
