"""control.up/down/status/kill9/start_node over stand-in nodes (short Python processes carrying
a node's marker): start order, idempotency, fail-fast with the log path, resident memory."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from launch.cluster import control, hosts
from launch.cluster.layout import ClusterLayout
from launch.cluster.node import Node, marker, tree_rss
from launch.supervisor import StartError

pytestmark = pytest.mark.unit

_SLEEPS = "import time; time.sleep(60)"
_EXITS = "import sys; print('bind failed: address in use', flush=True); sys.exit(1)"


@pytest.fixture
def layout(tmp_path: Path) -> ClusterLayout:
    return ClusterLayout(
        var_dir=tmp_path / "cluster",
        kafka_broker_ports=(29092,),
        kafka_controller_ports=(29192,),
        topic_replication=1,
        min_insync_replicas=1,
        cassandra_hosts=("127.0.0.31", "127.0.0.32"),
        cassandra_jmx_ports=(27211, 27212),
        spark_worker_ui_ports=(28081,),
        start_timeout_s=10,
        stop_timeout_s=5,
    )


class Cluster:
    """Stand-in nodes for ``layout``; ``code`` per node name, default: sleeps."""

    def __init__(self, layout: ClusterLayout, code: dict[str, str] | None = None) -> None:
        self.layout, self.code = layout, code or {}
        self.order: list[str] = []
        self.joined_asked: list[str] = []

    def node(self, name: str) -> Node:
        def command() -> list[str]:
            self.order.append(name)
            return [sys.executable, "-c", self.code.get(name, _SLEEPS), marker(name), "end"]

        return Node(
            name,
            self.layout.home(name),
            (),
            prepare=lambda: None,
            command=command,
            # A node that dies at start never answers its probe (as a real engine).
            healthy=lambda: name not in self.code,
            joined=lambda: self.joined_asked.append(name) is None,
        )

    def nodes(self, layout: ClusterLayout, stack: object = None) -> dict[str, Node]:
        return {name: self.node(name) for name in layout.engine_nodes}


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, layout: ClusterLayout) -> Callable[..., Cluster]:
    def make(code: dict[str, str] | None = None) -> Cluster:
        cluster = Cluster(layout, code)
        monkeypatch.setattr(control, "engine_nodes", cluster.nodes)
        monkeypatch.setattr(control, "check_java", lambda stack: None)
        monkeypatch.setattr(control, "_check_jars", lambda stack: None)
        monkeypatch.setattr(control, "_platform", lambda: None)
        return cluster

    return make


def test_up_starts_in_order_is_idempotent_and_down_stops_all(
    layout: ClusterLayout, fake: Callable[..., Cluster]
) -> None:
    cluster = fake()
    notes: list[str] = []
    try:
        rows = control.up(layout, notes.append)
        assert cluster.order == list(layout.engine_nodes)
        assert [r.name for r in rows] == list(layout.engine_nodes)
        assert all(r.pid and r.healthy and r.rss_bytes > 0 for r in rows)
        assert control.rss_total(rows) == sum(r.rss_bytes for r in rows)
        assert any(n.startswith("starting kafka-1 (log: ") for n in notes)

        control.up(layout, notes.append)  # all healthy: nothing is started again
        assert cluster.order == list(layout.engine_nodes)
    finally:
        control.down(layout, notes.append)
    assert all(r.pid is None and not r.healthy for r in control.status(layout))


def test_a_node_that_dies_at_start_fails_fast_naming_its_log_and_stops_the_rest(
    layout: ClusterLayout, fake: Callable[..., Cluster]
) -> None:
    fake({"cassandra-2": _EXITS})
    with pytest.raises(StartError) as failed:
        control.up(layout, lambda note: None)
    assert str(layout.log("cassandra-2")) in str(failed.value)
    assert "bind failed" in str(failed.value)  # the log's tail comes along
    assert all(r.pid is None for r in control.status(layout))


def test_kill9_then_start_node_brings_one_node_back(
    layout: ClusterLayout, fake: Callable[..., Cluster]
) -> None:
    cluster = fake()
    try:
        control.up(layout, lambda note: None)
        before = {r.name: r.pid for r in control.status(layout)}
        assert control.kill9("kafka-1", layout) == before["kafka-1"]
        after = {r.name: r.pid for r in control.status(layout)}
        assert after["kafka-1"] is None
        assert {k: v for k, v in after.items() if k != "kafka-1"} == {
            k: v for k, v in before.items() if k != "kafka-1"
        }
        pid = control.start_node("kafka-1", layout, lambda note: None)
        assert pid != before["kafka-1"] and cluster.order.count("kafka-1") == 2
    finally:
        control.down(layout, lambda note: None)


def test_unknown_nodes_and_dead_nodes_are_clear_errors(
    layout: ClusterLayout, fake: Callable[..., Cluster]
) -> None:
    fake()
    with pytest.raises(KeyError, match="no engine node 'kafka-9'"):
        control.kill9("kafka-9", layout)
    with pytest.raises(StartError, match="kafka-1 is not running"):
        control.kill9("kafka-1", layout)


def test_tree_rss_counts_descendants_once() -> None:
    import os

    own = tree_rss(os.getpid(), children=lambda: {})
    assert own > 0
    # A cycle in a (racy) /proc snapshot must not count a process twice.
    assert tree_rss(os.getpid(), children=lambda: {os.getpid(): [os.getpid()]}) == own


def test_start_node_waits_for_rejoin_only_when_every_sibling_runs(
    layout: ClusterLayout, fake: Callable[..., Cluster]
) -> None:
    cluster = fake()
    try:
        control.up(layout, lambda note: None)
        assert set(cluster.joined_asked) == set(layout.engine_nodes)  # up checks membership
        cluster.joined_asked.clear()
        control.kill9("cassandra-1", layout)
        control.start_node("cassandra-1", layout, lambda note: None)
        assert cluster.joined_asked == ["cassandra-1"]  # cassandra-2 runs: must see it up

        cluster.joined_asked.clear()
        control.kill9("cassandra-1", layout)
        control.kill9("cassandra-2", layout)
        control.start_node("cassandra-1", layout, lambda note: None)
        assert cluster.joined_asked == []  # its peer is down: healthy alone is enough
    finally:
        control.down(layout, lambda note: None)


def test_kill9_returns_only_once_the_nodes_ports_are_free(
    layout: ClusterLayout, fake: Callable[..., Cluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A killed JVM's command line empties before the kernel closes its sockets; start_node
    # right after kill9 then found the port in use. kill9 waits for the ports too.
    cluster = fake()
    plain = cluster.node

    def with_port(name: str) -> Node:
        node = plain(name)
        return Node(
            node.name,
            node.home,
            (("127.0.0.1", 29092),) if name == "kafka-1" else (),
            prepare=node.prepare,
            command=node.command,
            healthy=node.healthy,
            joined=node.joined,
        )

    monkeypatch.setattr(cluster, "node", with_port)
    # Node.busy asks launch.cluster.hosts.bound, which asks this for a node on no host.
    real_port_in_use = hosts.port_in_use
    try:
        control.up(layout, lambda note: None)
        asked: list[tuple[str, int]] = []

        def busy_twice(host: str, port: int) -> bool:
            asked.append((host, port))
            return len(asked) <= 2

        monkeypatch.setattr(hosts, "port_in_use", busy_twice)
        control.kill9("kafka-1", layout)
        assert asked == [("127.0.0.1", 29092)] * 3  # busy, busy, then free: only then back
    finally:
        monkeypatch.setattr(hosts, "port_in_use", real_port_in_use)
        control.down(layout, lambda note: None)
