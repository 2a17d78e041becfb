"""The cluster's Kafka: n combined broker + controller nodes in KRaft, a controller quorum of n.

Each node's ``server.properties`` is the single-node stack's template (deploy/local), rendered
with the node's ports and data dir, with the multi-node settings laid over it: node id, the
static quorum of every controller, internal topics replicated to 3 with min ISR 2. One cluster
id, kept in ``var/cluster/kafka.cluster.id``, is formatted into every node's storage. Every
address (listeners, advertised listener, quorum voters) is the layout's: a node on a host of
its own listens on that host's address and the standard ports, and runs in its namespace.
"""

from __future__ import annotations

import base64
import logging
import subprocess
import uuid
from functools import partial
from pathlib import Path
from string import Template

from apm.kafka import new_admin
from launch.cluster.layout import ClusterLayout
from launch.cluster.node import Node, override_lines
from launch.jvm import jvm_command
from launch.stack.config import StackSettings
from launch.stack.jars import jar_dir

__all__ = ["broker_ids", "cluster_id", "command", "listener", "nodes", "server_properties"]


def _index(layout: ClusterLayout, node: str) -> int:
    return layout.kafka_nodes.index(node)


def server_properties(layout: ClusterLayout, stack: StackSettings, node: str) -> str:
    i = _index(layout, node)
    n = len(layout.kafka_nodes)
    address, port, controller_port = layout.kafka_listeners[i]
    rendered = Template((stack.deploy / "kafka-server.properties.tmpl").read_text()).substitute(
        host=address,
        kafka_port=port,
        kafka_controller_port=controller_port,
        data_dir=layout.home(node) / "data",
    )
    internal_rf = str(min(3, n))
    internal_isr = str(min(layout.min_insync_replicas, n))
    return override_lines(
        rendered,
        {
            "node.id": str(i + 1),
            "controller.quorum.voters": layout.kafka_quorum_voters,
            "default.replication.factor": str(layout.topic_replication),
            # As compose/k8s. Kafka 4.1 with eligible leader replicas (ELR) takes it when the
            # ring is formatted (a fresh ring logs 2); a ring formatted before it keeps 1. The
            # guarantee is carried anyway by each topic's own min.insync.replicas=2, which the
            # platform sets when it creates a topic (apm.kafka.TopicSpec).
            "min.insync.replicas": str(layout.min_insync_replicas),
            "offsets.topic.replication.factor": internal_rf,
            "transaction.state.log.replication.factor": internal_rf,
            "transaction.state.log.min.isr": internal_isr,
            "share.coordinator.state.topic.replication.factor": internal_rf,
            "share.coordinator.state.topic.min.isr": internal_isr,
            # A broker that was down catches up as a follower; never elect a lagging one.
            "unclean.leader.election.enable": "false",
        },
        "=",
    )


def _props_path(layout: ClusterLayout, node: str) -> Path:
    return layout.home(node) / "server.properties"


def cluster_id(layout: ClusterLayout) -> str:
    """The one id every node is formatted with, made once."""
    path = layout.var / "kafka.cluster.id"
    path.parent.mkdir(parents=True, exist_ok=True)
    # As the stack: an id starting with "-" would be read as an option by the storage tool.
    while not path.exists() or path.read_text().startswith("-"):
        path.write_text(base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode())
    return path.read_text().strip()


def _log4j(stack: StackSettings) -> str:
    return f"-Dlog4j2.configurationFile={stack.deploy / 'kafka-log4j2.properties'}"


def _prepare(layout: ClusterLayout, stack: StackSettings, node: str) -> None:
    props = _props_path(layout, node)
    props.parent.mkdir(parents=True, exist_ok=True)
    props.write_text(server_properties(layout, stack, node))
    if (layout.home(node) / "data" / "meta.properties").exists():
        return  # formatted before: a restart keeps the node's log and metadata
    cmd = [
        *jvm_command(stack, f"cluster-{node}-format", "256m"),
        "-cp",
        str(jar_dir(stack, "kafka") / "*"),
        _log4j(stack),
        "kafka.tools.StorageTool",
        "format",
        "-t",
        cluster_id(layout),
        "-c",
        str(props),
        "--ignore-formatted",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"kafka storage format of {node} failed: {done.stderr.strip()[-400:]}")


def command(layout: ClusterLayout, stack: StackSettings, node: str) -> list[str]:
    return [
        *jvm_command(stack, f"cluster-{node}", layout.kafka_heap),
        _log4j(stack),
        "-cp",
        str(jar_dir(stack, "kafka") / "*"),
        "kafka.Kafka",
        str(_props_path(layout, node)),
    ]


def broker_ids(bootstrap: str) -> set[int]:
    """The ids of the brokers the cluster reports live, asked through ``bootstrap``; empty
    when it does not answer."""
    from kafka.errors import KafkaError

    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    try:
        admin = new_admin(bootstrap, request_timeout_ms=3000)
    except (KafkaError, OSError, ValueError):
        return set()
    try:
        return {int(b["broker_id"]) for b in admin.describe_cluster()["brokers"]}
    except (KafkaError, OSError, KeyError, ValueError):
        return set()
    finally:
        admin.close()


def listener(layout: ClusterLayout, node: str) -> str:
    """``address:port`` of the node's broker listener, as clients reach it."""
    address, port, _ = layout.kafka_listeners[_index(layout, node)]
    return f"{address}:{port}"


def _healthy(layout: ClusterLayout, node: str) -> bool:
    """The node answers on its own listener and the cluster counts it as a live broker (a
    KRaft broker opens its listener only once it has caught up with the quorum)."""
    return _index(layout, node) + 1 in broker_ids(listener(layout, node))


def _sees_all(layout: ClusterLayout, node: str) -> bool:
    everyone = set(range(1, len(layout.kafka_nodes) + 1))
    return broker_ids(listener(layout, node)) == everyone


def nodes(layout: ClusterLayout, stack: StackSettings) -> list[Node]:
    return [
        Node(
            name,
            layout.home(name),
            ((address, port), (address, controller_port)),
            prepare=partial(_prepare, layout, stack, name),
            command=partial(command, layout, stack, name),
            healthy=partial(_healthy, layout, name),
            joined=partial(_sees_all, layout, name),
            netns=layout.netns(name),
        )
        for name, (address, port, controller_port) in zip(
            layout.kafka_nodes, layout.kafka_listeners, strict=True
        )
    ]
