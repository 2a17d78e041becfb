"""The Kafka brokers and the Cassandra nodes on hosts of their own (``ClusterLayout.hosts``):
every address comes from the tier's plan, the ports are the standard ones on every host, each
node runs inside its host's namespace, and nothing a node is configured with, nor the code
that configures it, names the loopback for another host."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from launch.cluster import cassandra, kafka
from launch.cluster.hosts import PREFIX
from launch.cluster.layout import ClusterLayout
from launch.stack.config import StackSettings

pytestmark = pytest.mark.unit

ADDRESSES = ("169.254.1.1", "169.254.1.2", "169.254.1.3")  # kafka-1..3
RING = ("169.254.1.4", "169.254.1.5", "169.254.1.6")  # cassandra-1..3
LOOPBACK = re.compile(r"127\.\d+\.\d+\.\d+|localhost|::1")


def _properties(text: str) -> dict[str, str]:
    pairs = (line.partition("=") for line in text.splitlines() if not line.startswith("#"))
    return {key.strip(): value.strip() for key, sep, value in pairs if sep}


@pytest.fixture
def layout(tmp_path: Path) -> ClusterLayout:
    return ClusterLayout(var_dir=tmp_path / "cluster", hosts=("kafka", "cassandra"))


@pytest.fixture
def stack(tmp_path: Path) -> StackSettings:
    return StackSettings(jar_cache=tmp_path / "jars", java="java")


def test_each_broker_gets_a_link_local_host_and_the_standard_ports(layout: ClusterLayout) -> None:
    assert layout.hosted == (*layout.kafka_nodes, *layout.cassandra_nodes)
    assert tuple(layout.address(n) for n in layout.kafka_nodes) == ADDRESSES
    assert all(ipaddress.ip_address(a).is_link_local for a in ADDRESSES)
    assert layout.kafka_listeners == tuple((a, 9092, 9093) for a in ADDRESSES)
    assert layout.kafka_bootstrap == "169.254.1.1:9092,169.254.1.2:9092,169.254.1.3:9092"
    assert layout.kafka_quorum_voters == (
        "1@169.254.1.1:9093,2@169.254.1.2:9093,3@169.254.1.3:9093"
    )
    assert layout.env()["APM_KAFKA_BOOTSTRAP"] == layout.kafka_bootstrap
    assert layout.netns("kafka-2") == f"{PREFIX}cluster-kafka-2"
    # Spark and the platform are not on hosts yet
    assert layout.address("spark-master") == "127.0.0.1" and layout.netns("spark-master") is None


def test_the_tier_is_the_hosted_nodes_reached_from_the_root(layout: ClusterLayout) -> None:
    tier = layout.tier()
    assert tier is not None and tier.from_root and tier.tier == "cluster"
    assert [(h.name, h.address) for h in tier.hosts.values()] == list(
        zip(layout.hosted, ADDRESSES + RING, strict=True)
    )
    assert ClusterLayout().tier() is None  # off unless asked for (APM_CLUSTER_HOSTS)


def test_the_option_reads_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APM_CLUSTER_HOSTS", '["kafka"]')
    monkeypatch.setenv("APM_CLUSTER_HOSTS_TIER", "ci7")
    layout = ClusterLayout()
    assert layout.hosts == ("kafka",) and layout.netns("kafka-1") == f"{PREFIX}ci7-kafka-1"


def test_only_the_engines_named_are_on_hosts() -> None:
    brokers = ClusterLayout(hosts=("kafka",))  # what the cluster tier runs
    assert brokers.hosted == brokers.kafka_nodes
    assert brokers.kafka_bootstrap == ",".join(f"{a}:9092" for a in ADDRESSES)
    assert brokers.storage_hosts == "127.0.0.21,127.0.0.22,127.0.0.23"
    assert brokers.netns("cassandra-1") is None
    ring = ClusterLayout(hosts=("cassandra",))
    assert ring.storage_hosts == ",".join(ADDRESSES)  # the tier's first three addresses
    assert ring.kafka_bootstrap == "127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094"
    for bad in (("kafka", "kafka"), ("spark",)):
        with pytest.raises(ValidationError):
            ClusterLayout(hosts=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("tier", ["", "Cluster", "a-b", "elevenchars"])
def test_a_tier_name_that_cannot_name_a_root_link_is_refused(tier: str) -> None:
    with pytest.raises(ValidationError, match="hosts_tier"):
        ClusterLayout(hosts=("kafka",), hosts_tier=tier)


def test_the_subnet_moves_every_address_but_never_onto_the_metadata_one() -> None:
    layout = ClusterLayout(hosts=("kafka",), hosts_subnet=9)
    assert layout.kafka_bootstrap == "169.254.9.1:9092,169.254.9.2:9092,169.254.9.3:9092"
    tier = layout.tier()
    assert tier is not None and tier.root_address == "169.254.9.254"
    with pytest.raises(ValidationError, match="subnet 169"):
        ClusterLayout(hosts=("kafka",), hosts_subnet=169)


@pytest.mark.parametrize("index", [0, 1, 2])
def test_each_broker_listens_and_advertises_its_own_host(
    layout: ClusterLayout, stack: StackSettings, index: int
) -> None:
    node, address = layout.kafka_nodes[index], ADDRESSES[index]
    text = kafka.server_properties(layout, stack, node)
    props = _properties(text)
    assert props["listeners"] == f"PLAINTEXT://{address}:9092,CONTROLLER://{address}:9093"
    assert props["advertised.listeners"] == f"PLAINTEXT://{address}:9092"
    assert props["controller.quorum.voters"] == layout.kafka_quorum_voters
    assert not LOOPBACK.search(text), LOOPBACK.findall(text)


def test_each_node_runs_in_its_host_and_checks_its_ports_there(
    layout: ClusterLayout, stack: StackSettings
) -> None:
    for node, address in zip(kafka.nodes(layout, stack), ADDRESSES, strict=True):
        assert node.netns == layout.netns(node.name)
        assert node.addresses == ((address, 9092), (address, 9093))
        argv = node.argv()
        assert argv[:4] == ["ip", "netns", "exec", node.netns]
        assert argv[4:] == kafka.command(layout, stack, node.name)
        assert kafka.listener(layout, node.name) == f"{address}:9092"


def test_each_cassandra_node_is_a_host_of_the_ring_with_the_standard_ports(
    layout: ClusterLayout, stack: StackSettings
) -> None:
    assert layout.storage_hosts == ",".join(RING) == layout.env()["APM_STORAGE_HOSTS"]
    assert layout.cassandra_seeds == RING[0]
    for node, address in zip(cassandra.nodes(layout, stack), RING, strict=True):
        text = cassandra.cassandra_yaml(layout, stack, node.name)
        assert f"listen_address: {address}" in text.splitlines()
        assert f"rpc_address: {address}" in text.splitlines()
        assert f'- seeds: "{RING[0]}:7000"' in text
        assert not LOOPBACK.search(text), LOOPBACK.findall(text)
        # JMX is local only: on the node's own host's loopback, the standard port
        assert node.addresses == ((address, 9042), (address, 7000), ("127.0.0.1", 7199))
        assert "-Dcassandra.jmx.local.port=7199" in node.command()
        assert node.argv()[:4] == ["ip", "netns", "exec", layout.netns(node.name)]


def test_on_loopback_nothing_runs_in_a_namespace(tmp_path: Path, stack: StackSettings) -> None:
    layout = ClusterLayout(var_dir=tmp_path)
    for node in [*kafka.nodes(layout, stack), *cassandra.nodes(layout, stack)]:
        assert node.netns is None and node.argv() == node.command()
    assert layout.storage_hosts == "127.0.0.21,127.0.0.22,127.0.0.23"


# The modules a node on a host is configured, launched and probed through: none may name the
# loopback (every address is the layout's). hosts.py's own hosts file keeps "127.0.0.1
# localhost" for each host itself, and layout.py a Cassandra node's JMX on its own host's
# loopback: no other host's address.
HOSTED_PATH = ("kafka.py", "cassandra.py", "node.py", "control.py", "faults.py")


@pytest.mark.parametrize("module", HOSTED_PATH)
def test_the_code_on_the_hosts_path_names_no_loopback(module: str) -> None:
    source = (Path(kafka.__file__).parent / module).read_text()
    assert not LOOPBACK.search(source), f"{module}: {LOOPBACK.findall(source)}"
