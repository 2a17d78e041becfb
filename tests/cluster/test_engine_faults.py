"""``kill -9`` of one engine node under load (a Kafka broker, a Cassandra node, a Spark
worker): nothing the ingest answered 202 for is lost, and every window in Cassandra equals the
load generator's truth. Each records its figures in var/cluster/faults.json
(docs/BENCHMARKS.md, "Faults")."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path

import pytest

from tests.cluster.conftest import Cluster
from tests.cluster.support import Figures, converge, kill9, start_node
from tests.support.http import http_json
from tests.support.http import metric_value as gauge

pytestmark = pytest.mark.cluster

FAULT_AT_S, RESTART_AT_S = 15, 30  # into the load
# A Cassandra node stays down longer: past the failure detector's conviction (DETECTION_S
# after the kill), the reads and writes are checked for a while.
CASSANDRA_RESTART_AT_S, DETECTION_S, MAX_DOWN_S = 55, 25, 150


def test_kill9_a_kafka_broker_mid_load_then_restart_it(cluster: Cluster, tmp_path: Path) -> None:
    probe, victim = cluster.probes["kafka"], "kafka-1"  # also the first bootstrap address
    figures = Figures("kafka broker kill -9")
    load = cluster.load("kafka", tmp_path, seed=11)
    load.at(FAULT_AT_S)
    kill9(cluster.layout, victim)
    load.at(RESTART_AT_S)
    figures.recover_s = start_node(cluster.layout, victim)
    load.fault_over()
    figures.recovery = f"restart of {victim} until it is healthy (in the quorum, serving)"
    figures.notes["down_s"] = RESTART_AT_S - FAULT_AT_S
    truth = load.finish(figures)
    converge(lambda a, b: cluster.read(probe, a, b), truth, figures, cluster.layout.var)


def test_kill9_a_cassandra_node_the_platform_keeps_writing_and_reading(
    cluster: Cluster, tmp_path: Path
) -> None:
    probe, victim = cluster.probes["cassandra"], "cassandra-2"
    figures = Figures("cassandra node kill -9")
    metrics = f"http://127.0.0.1:{cluster.layout.aggregator_metrics_ports[probe.shard]}/metrics"
    results = f"{cluster.layout.dashboard_url}/api/queries/{probe.query_id}/results"
    load = cluster.load("cassandra", tmp_path, seed=12, seconds=70)
    load.at(FAULT_AT_S)
    kill9(cluster.layout, victim)
    killed = time.monotonic()
    written: list[tuple[float, float]] = []  # (seconds since the kill, windows written)
    reads: list[tuple[float, bool]] = []  # (sent, in seconds since the kill; answered 200)

    def wrote() -> bool:
        return len(written) > 1 and written[-1][1] > written[0][1]

    # Down until CASSANDRA_RESTART_AT_S, and longer while the aggregator has not written
    # since the kill (under load a batch may take longer than the planned outage; up to
    # MAX_DOWN_S): the check below is that writes go on with the node down.
    while time.monotonic() < load.started + CASSANDRA_RESTART_AT_S or (
        not wrote() and time.monotonic() < killed + MAX_DOWN_S
    ):
        now, at = time.time(), time.monotonic() - killed
        try:  # the dashboard's API reads at LOCAL_QUORUM: 2 of 3 replicas answer
            http_json(f"{results}?from={now - 120:.0f}&to={now:.0f}", cluster.token, timeout=20)
            ok = True
        except OSError:
            ok = False
        reads.append((at, ok))
        # None when the page did not answer in time (a loaded machine): not a reading.
        if (count := gauge(metrics, "apm_aggregator_results_written_total")) is not None:
            written.append((at, count))
        time.sleep(1)
    down_s = round(time.monotonic() - killed, 1)
    figures.recover_s = start_node(cluster.layout, victim)
    load.fault_over()
    figures.recovery = f"restart of {victim} until it serves CQL again in the ring"
    failed = [at for at, ok in reads if not ok]
    # Until the others' failure detector convicts the dead node (gossip, ~10-15 s), range
    # reads (the query and status tables) may pick it as one of their 2 replicas and time out.
    settled = [(at, ok) for at, ok in reads if at >= DETECTION_S]
    # LOCAL_QUORUM writes need 2 of the 3 replicas: they go on from the kill on.
    after = [n for _, n in written]
    figures.notes.update(
        down_s=down_s,
        dashboard_reads=len(reads),
        dashboard_reads_failed=len(failed),
        last_failed_read_sent_s_after_kill=round(max(failed), 1) if failed else None,
        windows_written_while_down=(after[-1] - after[0]) if after else 0,
    )
    truth = load.finish(figures)
    converge(lambda a, b: cluster.read(probe, a, b), truth, figures, cluster.layout.var)
    assert settled and all(ok for _, ok in settled), f"dashboard reads failed: {reads}"
    assert after and after[-1] > after[0], f"the aggregator wrote nothing while down: {written}"


def _worker_of(cluster: Cluster, app: str) -> str:
    """The Spark worker that runs ``app``'s executor (from each worker's JSON page)."""
    for node, port in zip(
        cluster.layout.spark_workers, cluster.layout.spark_worker_ui_ports, strict=True
    ):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/", timeout=5) as reply:
                page = json.loads(reply.read())
        except OSError:  # a worker that is down runs nothing
            continue
        for executor in page.get("executors") or []:
            desc = executor.get("appdesc") or executor.get("appDesc") or {}
            if desc.get("name") == app:
                return str(node)
    raise AssertionError(f"no worker runs an executor of {app}")


def test_kill9_a_spark_worker_the_application_recovers_on_the_other(
    cluster: Cluster, tmp_path: Path
) -> None:
    probe = cluster.probes["spark"]
    app = cluster.job(probe.shard)
    victim = _worker_of(cluster, app)
    metrics = f"http://127.0.0.1:{cluster.layout.aggregator_metrics_ports[probe.shard]}/metrics"
    batches = "apm_aggregator_batch_duration_seconds_count"
    figures = Figures("spark worker kill -9")
    load = cluster.load("spark", tmp_path, seed=13)
    load.at(FAULT_AT_S)
    at_kill = gauge(metrics, batches) or 0.0
    killed = time.monotonic()
    kill9(cluster.layout, victim)
    try:
        # A batch running at the kill may still finish; the second one after needs an executor.
        deadline = killed + 180
        while (gauge(metrics, batches) or 0.0) < at_kill + 2:
            assert time.monotonic() < deadline, f"{app} made no progress after {victim} died"
            time.sleep(0.5)
        figures.recover_s = round(time.monotonic() - killed, 1)
        figures.recovery = (
            f"kill of {victim} (running {app}'s executor) until its batches complete again"
        )
        now_on = _worker_of(cluster, app)
        assert now_on != victim
        figures.notes.update(killed=victim, executor_now_on=now_on)
        load.at(RESTART_AT_S)
    finally:  # the next faults need both workers
        figures.notes["worker_restart_s"] = start_node(cluster.layout, victim)
        load.fault_over()
    truth = load.finish(figures)
    converge(lambda a, b: cluster.read(probe, a, b), truth, figures, cluster.layout.var)
