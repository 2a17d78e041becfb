"""The cluster's Cassandra: a ring of n nodes, each on an address of its own with the same
ports there (a loopback address each, ``cassandra_hosts``, with a JMX port each; or, with
``ClusterLayout.hosts``, a host each, where it runs in the host's namespace with the standard
ports, JMX on the host's own loopback), and the first node as seed. Every address is the
layout's (``ClusterLayout.address``).

Each node's ``cassandra.yaml`` is the single-node stack's template (deploy/local) rendered with
the node's address and data dir, with the ring's settings laid over it. A fresh ring joins fast:
no bootstrap streaming (``auto_bootstrap: false``, there is no data yet), no wait for gossip to
settle, a short ring delay. SimpleSnitch puts every node in ``datacenter1``/``rack1``, the data
centre that ``layout.storage_replication`` names.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from string import Template
from typing import Any

from launch.cluster.layout import ClusterLayout
from launch.cluster.node import Node, override_lines
from launch.jvm import CASSANDRA_JDK17, jvm_command
from launch.stack.config import StackSettings
from launch.stack.jars import jar_dir

__all__ = ["cassandra_yaml", "command", "nodes", "peers", "sees_all_up", "session"]

# Seconds a fresh node waits for ring information before it joins (Cassandra's default: 30).
RING_DELAY_MS = 3000


def _address(layout: ClusterLayout, node: str) -> str:
    return layout.address(node)


def cassandra_yaml(layout: ClusterLayout, stack: StackSettings, node: str) -> str:
    address = _address(layout, node)
    rendered = Template((stack.deploy / "cassandra.yaml.tmpl").read_text()).substitute(
        host=address,
        cassandra_port=layout.cassandra_port,
        cassandra_storage_port=layout.cassandra_storage_port,
        data_dir=layout.home(node),
    )
    seeds = f"{layout.cassandra_seeds}:{layout.cassandra_storage_port}"
    rendered, count = re.subn(r'(- seeds: )"[^"]*"', rf'\1"{seeds}"', rendered)
    if count != 1:
        raise ValueError("the stack's cassandra.yaml template has no single seeds entry")
    return override_lines(
        rendered,
        {
            "cluster_name": "apm-cluster",
            "endpoint_snitch": "SimpleSnitch",
            "auto_bootstrap": "false",
            "hinted_handoff_enabled": "true",
            # The stack's one node turns it off; in a ring it routes reads away from a dead
            # or slow replica before the failure detector has convicted it.
            "dynamic_snitch": "true",
            "concurrent_compactors": "1",
        },
        ": ",
    )


def command(layout: ClusterLayout, stack: StackSettings, node: str) -> list[str]:
    home = layout.home(node)
    jars = jar_dir(stack, "cassandra")
    jamm = sorted(jars.glob("jamm-*.jar"))
    _, jmx = layout.cassandra_jmx(node)
    return [
        *jvm_command(stack, f"cluster-{node}", layout.cassandra_heap),
        f"-Xmn{layout.cassandra_heap_new}",
        "-Xss256k",
        *CASSANDRA_JDK17,
        *([f"-javaagent:{jamm[-1]}"] if jamm else []),
        f"-Dcassandra.config=file://{home / 'cassandra.yaml'}",
        f"-Dcassandra.storagedir={home}",
        f"-Dcassandra.logdir={home}",
        f"-Dlogback.configurationFile={stack.deploy / 'cassandra-logback.xml'}",
        "-Dcassandra-foreground=yes",
        f"-Dcassandra.jmx.local.port={jmx}",
        "-Dcassandra.skip_wait_for_gossip_to_settle=0",
        f"-Dcassandra.ring_delay_ms={RING_DELAY_MS}",
        "-cp",
        str(jars / "*"),
        "org.apache.cassandra.service.CassandraDaemon",
    ]


def _prepare(layout: ClusterLayout, stack: StackSettings, node: str) -> None:
    home = layout.home(node)
    home.mkdir(parents=True, exist_ok=True)
    (home / "cassandra.yaml").write_text(cassandra_yaml(layout, stack, node))


@contextmanager
def session(layout: ClusterLayout, address: str, timeout_s: float = 3.0) -> Iterator[Any]:
    """A driver session that talks to ``address`` only (it coordinates every query)."""
    from cassandra.cluster import Cluster
    from cassandra.policies import WhiteListRoundRobinPolicy

    logging.getLogger("cassandra").setLevel(logging.CRITICAL)
    cluster = Cluster(
        [address],
        port=layout.cassandra_port,
        load_balancing_policy=WhiteListRoundRobinPolicy([address]),
        connect_timeout=timeout_s,
        control_connection_timeout=timeout_s,
        protocol_version=5,
    )
    try:
        yield cluster.connect()
    finally:
        cluster.shutdown()


def peers(layout: ClusterLayout, address: str) -> set[str] | None:
    """The peers ``address`` knows (system.peers), or None when it does not answer CQL."""
    from cassandra import DriverException
    from cassandra.cluster import NoHostAvailable

    try:
        with session(layout, address) as cql:
            rows = cql.execute("SELECT peer FROM system.peers", timeout=3)
            return {str(row.peer) for row in rows}
    except (NoHostAvailable, DriverException, OSError):
        return None


# A single-partition read of a table replicated to every node of a 3-node ring
# (system_distributed: RF 3); at ALL it succeeds only when its coordinator holds every
# replica alive (gossip) and each of them answered.
_ALL_REPLICAS_READ = (
    "SELECT keyspace_name FROM system_distributed.repair_history "
    "WHERE keyspace_name = 'apm' AND columnfamily_name = 'apm-cluster-probe'"
)


def sees_all_up(layout: ClusterLayout, node: str) -> bool:
    """Through ``node``, a read at consistency ALL succeeds: it has rejoined the ring and sees
    every other node up (a restarted node's system.peers lists them before gossip does)."""
    from cassandra import ConsistencyLevel, DriverException
    from cassandra.cluster import NoHostAvailable
    from cassandra.query import SimpleStatement

    statement = SimpleStatement(_ALL_REPLICAS_READ, consistency_level=ConsistencyLevel.ALL)
    try:
        with session(layout, _address(layout, node)) as cql:
            cql.execute(statement, timeout=5)
            return True
    except (NoHostAvailable, DriverException, OSError):
        return False


def _answers(layout: ClusterLayout, node: str) -> bool:
    return peers(layout, _address(layout, node)) is not None


def _in_ring(layout: ClusterLayout, node: str) -> bool:
    """Answers CQL and knows every other node of the ring."""
    address = _address(layout, node)
    known = peers(layout, address)
    return known is not None and set(layout.cassandra_addresses) - {address} <= known


def nodes(layout: ClusterLayout, stack: StackSettings) -> list[Node]:
    return [
        Node(
            name,
            layout.home(name),
            (
                (host, layout.cassandra_port),
                (host, layout.cassandra_storage_port),
                layout.cassandra_jmx(name),
            ),
            prepare=partial(_prepare, layout, stack, name),
            command=partial(command, layout, stack, name),
            healthy=partial(_in_ring, layout, name),
            started=partial(_answers, layout, name),
            joined=partial(sees_all_up, layout, name),
            netns=layout.netns(name),
        )
        for name, host in zip(layout.cassandra_nodes, layout.cassandra_addresses, strict=True)
    ]
