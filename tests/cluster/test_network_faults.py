"""Network faults on the cluster's hosts (``ClusterLayout.hosts``: each Kafka broker in a network
namespace of its own, launch.cluster.hosts; the cuts are launch.cluster.faults).

A broker partitioned from the other two brokers and from the controller quorum (the nodes are
combined broker + controller, so cutting it from their hosts cuts both), while this process,
the client, still reaches it: 30 s under a produce load with ``acks=all`` through the project's
Kafka plumbing (apm.kafka), then healed. Nothing acknowledged may be lost (each acknowledged
key read back with its own value), the majority side keeps acknowledging while it lasts, and
the partitioned broker rejoins the ISR of every partition. The figures (records offered,
acknowledged, lost, failed back to the producer, read twice; seconds until the quorum fenced
the broker and until it was back in every ISR) are printed and recorded for
``make bench-faults``.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from apm.kafka import (
    TopicSpec,
    delete_topics,
    end_offsets,
    ensure_topics,
    new_admin,
    new_consumer,
    new_producer,
    topic_partitions,
)
from launch.cluster import kafka
from launch.cluster.faults import Faults
from tests.cluster.conftest import Cluster
from tests.cluster.support import Figures, record, wait_for
from tests.support.netns import require_netns

pytestmark = pytest.mark.cluster

RATE = 5000  # records/s offered
LEAD_S = 10  # load before the cut
PARTITION_S = 30
AFTER_S = 15  # load after the heal
PARTITIONS = 6


class ProduceLoad:
    """``rate`` records/s with ``acks=all`` in a thread, each with a key of its own; the
    producer's callbacks say which were acknowledged (and when) and which failed."""

    def __init__(self, bootstrap: str, topic: str, rate: int, seconds: float) -> None:
        self.topic, self.rate, self.seconds = topic, rate, seconds
        self.producer = new_producer(
            bootstrap,
            "netfault",
            acks="all",
            enable_idempotence=True,
            linger_ms=5,
            request_timeout_ms=10_000,
            delivery_timeout_ms=150_000,
            max_block_ms=150_000,
        )
        self.offered = 0
        self.acked: dict[str, tuple[bytes, float]] = {}  # key -> (value, monotonic)
        self.failed: dict[str, str] = {}
        self.began = time.monotonic()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _ok(self, key: str, value: bytes, _metadata: Any) -> None:
        self.acked[key] = (value, time.monotonic())

    def _error(self, key: str, exc: BaseException) -> None:
        self.failed[key] = type(exc).__name__

    def _run(self) -> None:
        while (elapsed := time.monotonic() - self.began) < self.seconds:
            due = int(elapsed * self.rate)
            while self.offered < due:
                key = f"k{self.offered:09d}"
                value = f"{self.topic}/{key}/{uuid.uuid4().hex}".encode()
                future = self.producer.send(self.topic, key=key.encode(), value=value)
                future.add_callback(self._ok, key, value)
                future.add_errback(self._error, key)
                self.offered += 1
            time.sleep(0.005)

    def acked_between(self, start: float, end: float) -> int:
        return sum(1 for _, at in list(self.acked.values()) if start <= at < end)

    def finish(self) -> None:
        self._thread.join(self.seconds + 60)
        self.producer.flush(timeout=200)
        self.producer.close(timeout=30)


def _unfenced(bootstrap: str) -> set[int]:
    """The brokers the cluster (asked through ``bootstrap``) counts live and unfenced."""
    admin = new_admin(bootstrap, request_timeout_ms=3000)
    try:
        brokers = admin.describe_cluster()["brokers"]
        return {int(b["broker_id"]) for b in brokers if not b.get("is_fenced")}
    finally:
        admin.close()


def _in_every_isr(bootstrap: str, topic: str, broker: int) -> bool:
    try:
        admin = new_admin(bootstrap, request_timeout_ms=3000)
    except Exception:  # a broker not answering yet: ask again
        return False
    try:
        parts = admin.describe_topics([topic])[0]["partitions"]
        return len(parts) == PARTITIONS and all(broker in p["isr_nodes"] for p in parts)
    except Exception:
        return False
    finally:
        admin.close()


def _read_all(bootstrap: str, topic: str) -> dict[str, list[bytes]]:
    """Every record of ``topic``, key -> values in offset order."""
    ends = end_offsets(bootstrap, [topic], timeout_ms=30_000)
    consumer = new_consumer(bootstrap, request_timeout_ms=30_000)
    got: dict[str, list[bytes]] = defaultdict(list)
    try:
        parts = topic_partitions(consumer, [topic])
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        deadline = time.monotonic() + 120
        while any(consumer.position(p) < ends[(topic, p.partition)] for p in parts):
            assert time.monotonic() < deadline, "the topic could not be read to its end"
            for records in consumer.poll(timeout_ms=1000, max_records=50_000).values():
                for r in records:
                    got[r.key.decode()].append(r.value)
    finally:
        consumer.close()
    return got


def test_a_broker_cut_from_its_peers_but_not_its_clients_loses_nothing_acknowledged(
    cluster: Cluster, tmp_path: Path
) -> None:
    require_netns()
    layout = cluster.layout
    tier = layout.tier()
    assert tier is not None and tier.exists(), "the cluster tier runs its brokers on hosts"
    faults = Faults(tier)
    victim, peers = "kafka-1", ("kafka-2", "kafka-3")
    victim_id = layout.kafka_nodes.index(victim) + 1
    bootstrap = layout.kafka_bootstrap
    topic = f"netfault.{uuid.uuid4().hex[:8]}"
    ensure_topics(bootstrap, [topic], TopicSpec(partitions=PARTITIONS, replication=3))
    figures = Figures(f"kafka broker partitioned {PARTITION_S} s (network)")
    load = ProduceLoad(bootstrap, topic, RATE, LEAD_S + PARTITION_S + AFTER_S)
    try:
        time.sleep(LEAD_S)
        cut_at = time.monotonic()
        for peer in peers:
            faults.cut(victim, peer)
        try:
            # The cut is real: the quorum on the other side fences the victim ...
            fenced_s = wait_for(
                lambda: victim_id not in _unfenced(kafka.listener(layout, peers[0])),
                PARTITION_S,
                f"the quorum of {', '.join(peers)} fences {victim}",
            )
            # ... while the client still reaches it
            address, port = kafka.listener(layout, victim).rsplit(":", 1)
            socket.create_connection((address, int(port)), timeout=5).close()
            time.sleep(max(0.0, cut_at + PARTITION_S - time.monotonic()))
        finally:
            faults.heal_all()
        healed_at = time.monotonic()
        assert faults.cuts() == set()
        isr_s = wait_for(
            lambda: _in_every_isr(bootstrap, topic, victim_id),
            180,
            f"{victim} back in the ISR of every partition of {topic}",
        )
        load.finish()
        got = _read_all(bootstrap, topic)
    finally:
        load.producer.close(timeout=5)
        delete_topics(bootstrap, [topic])

    lost = [k for k, (value, _) in load.acked.items() if value not in got.get(k, [])]
    twice = sum(len(values) - 1 for values in got.values() if len(values) > 1)
    during = load.acked_between(cut_at, healed_at)
    span = LEAD_S + PARTITION_S + AFTER_S
    figures.offered_per_s = round(load.offered / span, 1)
    figures.accepted_per_s = round(len(load.acked) / span, 1)
    figures.samples_sent, figures.samples_lost, figures.samples_extra = (
        len(load.acked),
        len(lost),
        twice,
    )
    figures.recover_s = round(isr_s, 1)
    figures.recovery = f"from the heal until {victim} was back in every partition's ISR"
    figures.notes = {
        "records offered": load.offered,
        "records acked": len(load.acked),
        "records failed to the producer": len(load.failed),
        "records acked during the cut": during,
        "seconds until the quorum fenced it": round(fenced_s, 1),
        "kind": "records through Kafka (apm.kafka producer, acks=all, idempotent), no windows",
    }
    record(layout.var, figures)
    assert not lost, f"{len(lost)} acknowledged records lost, e.g. {lost[:5]}"
    assert during > 0, "the majority side acknowledged nothing while the broker was cut off"
    assert len(load.acked) + len(load.failed) == load.offered, "a record was never answered"
