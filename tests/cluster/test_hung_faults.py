"""Hung nodes and more faults than the replication tolerates, under load: a Kafka broker and a
Cassandra node each frozen for 30 s (SIGSTOP, then SIGCONT: the process hangs with its sockets
open, so only clients' timeouts notice), and two of the three brokers down at once for 30 s
(below min.insync.replicas=2: the ingest answers 503 with Retry-After, the senders retry, and
nothing acknowledged is lost). Each checks 0 lost, 0 counted twice, 0 wrong windows, and
records its figures in var/cluster/faults.json (docs/BENCHMARKS.md, "Faults")."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from apm.tls import client_context
from launch.cluster import control
from tests.cluster.conftest import Cluster
from tests.cluster.support import (
    Figures,
    converge,
    kill9,
    push_snapshot,
    start_node,
    wait_for,
)

pytestmark = pytest.mark.cluster

FAULT_AT_S, HUNG_S = 15, 30  # into the load; how long the node stays hung or down
LOAD_S = 50  # the fault ends 5 s before the load does


def _freeze_for(cluster: Cluster, fault: str, victim: str, seed: int, tmp_path: Path) -> None:
    probe = cluster.probes[fault]
    figures = Figures(f"{victim.split('-')[0]} node frozen {HUNG_S} s (SIGSTOP)")
    load = cluster.load(fault, tmp_path, seed=seed, seconds=LOAD_S)
    load.at(FAULT_AT_S)
    control.freeze(victim, cluster.layout)
    try:
        load.at(FAULT_AT_S + HUNG_S)
    finally:  # never leave a node stopped for the next faults
        control.thaw(victim, cluster.layout)
    load.fault_over()
    figures.notes.update(frozen=victim, frozen_s=HUNG_S)
    figures.recovery = f"SIGCONT of {victim} until its health check passes"
    figures.recover_s = round(wait_for(lambda: _healthy(cluster, victim), 120, victim), 1)
    truth = load.finish(figures)
    converge(lambda a, b: cluster.read(probe, a, b), truth, figures, cluster.layout.var)


def _healthy(cluster: Cluster, node: str) -> bool:
    return any(row.name == node and row.healthy for row in control.status(cluster.layout))


def test_a_kafka_broker_frozen_30s_mid_load(cluster: Cluster, tmp_path: Path) -> None:
    _freeze_for(cluster, "kafkahang", "kafka-2", 21, tmp_path)


def test_a_cassandra_node_frozen_30s_mid_load(cluster: Cluster, tmp_path: Path) -> None:
    _freeze_for(cluster, "cassandrahang", "cassandra-3", 22, tmp_path)


def test_two_kafka_brokers_down_30s_the_ingest_answers_503_and_senders_retry(
    cluster: Cluster, tmp_path: Path
) -> None:
    from loadgen.settings import metrics_url

    probe, victims = cluster.probes["kafkatwo"], ("kafka-2", "kafka-3")
    url, tls = metrics_url(cluster.layout.lb_url), client_context(cluster.layout.lb_tls_ca)
    figures = Figures(f"two kafka brokers down {HUNG_S} s")
    load = cluster.load("kafkatwo", tmp_path, seed=23, seconds=LOAD_S)
    load.at(FAULT_AT_S)
    for victim in victims:
        kill9(cluster.layout, victim)
    # A sample sent while only one broker is up (of a metric the load sends but the probe
    # query does not read, from a server of its own): refused, to be retried.
    answers: list[tuple[int, str | None]] = []
    try:
        while time.monotonic() < load.started + FAULT_AT_S + HUNG_S - 5:
            reply = push_snapshot(url, cluster.key, f"{probe.prefix}mem.used_pct", verify=tls)
            answers.append((reply.status_code, reply.headers.get("Retry-After")))
            time.sleep(2)
        load.at(FAULT_AT_S + HUNG_S)
    finally:
        restarted = time.monotonic()
        for victim in victims:
            start_node(cluster.layout, victim)
    load.fault_over()
    figures.recover_s = round(time.monotonic() - restarted, 1)
    figures.recovery = "restart of both brokers until both are healthy"
    refused = [(code, after) for code, after in answers if code == 503]
    figures.notes.update(down=",".join(victims), probe_answers=sorted({c for c, _ in answers}))
    truth = load.finish(figures)
    converge(lambda a, b: cluster.read(probe, a, b), truth, figures, cluster.layout.var)
    # Below min.insync.replicas nothing can be acknowledged: after the first few seconds
    # (requests already in flight), every answer is a 503 with Retry-After, none a 202.
    assert refused, f"no 503 while two brokers were down: {answers}"
    assert all(after for _, after in refused), answers
    assert all(code != 202 for code, _ in answers[3:]), answers
    assert figures.retries > 0
