"""The configuration the cluster's scripts generate: each broker's server.properties, each
Cassandra node's cassandra.yaml and JVM command, the Spark daemons' arguments and environment."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from launch.cluster import cassandra, kafka, spark
from launch.cluster.layout import ClusterLayout
from launch.cluster.node import marker, override_lines
from launch.stack.config import StackSettings

pytestmark = pytest.mark.unit


@pytest.fixture
def layout(tmp_path: Path) -> ClusterLayout:
    return ClusterLayout(var_dir=tmp_path / "cluster")


@pytest.fixture
def stack(tmp_path: Path) -> StackSettings:
    return StackSettings(jar_cache=tmp_path / "jars", java="java")


def _properties(text: str) -> dict[str, str]:
    """As java.util.Properties reads the file: the last value of a key wins."""
    values = {}
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


def _yaml_keys(text: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for line in text.splitlines():
        if line and not line[0].isspace() and not line.startswith("#") and ": " in line:
            key, _, value = line.partition(": ")
            assert key not in values, f"{key} set twice"
            values[key] = value
    return values


# --- Kafka ----------------------------------------------------------------------------------


@pytest.mark.parametrize("index", [0, 1, 2])
def test_each_broker_is_a_voter_of_one_quorum_on_its_own_ports(
    layout: ClusterLayout, stack: StackSettings, index: int
) -> None:
    node = f"kafka-{index + 1}"
    props = _properties(kafka.server_properties(layout, stack, node))
    broker, controller = (19092, 19093, 19094)[index], (19192, 19193, 19194)[index]
    assert props["node.id"] == str(index + 1)
    assert props["process.roles"] == "broker,controller"
    assert props["controller.quorum.voters"] == (
        "1@127.0.0.1:19192,2@127.0.0.1:19193,3@127.0.0.1:19194"
    )
    assert props["listeners"] == (
        f"PLAINTEXT://127.0.0.1:{broker},CONTROLLER://127.0.0.1:{controller}"
    )
    assert props["advertised.listeners"] == f"PLAINTEXT://127.0.0.1:{broker}"
    assert props["log.dirs"] == str(layout.home(node) / "data")


def test_brokers_replicate_internal_topics_and_never_elect_a_lagging_leader(
    layout: ClusterLayout, stack: StackSettings
) -> None:
    props = _properties(kafka.server_properties(layout, stack, "kafka-1"))
    assert props["default.replication.factor"] == "3"
    assert props["min.insync.replicas"] == "2"
    assert props["offsets.topic.replication.factor"] == "3"
    assert props["transaction.state.log.replication.factor"] == "3"
    assert props["transaction.state.log.min.isr"] == "2"
    assert props["unclean.leader.election.enable"] == "false"
    assert props["auto.create.topics.enable"] == "false"  # from the stack's template


def test_every_key_is_set_once(layout: ClusterLayout, stack: StackSettings) -> None:
    text = kafka.server_properties(layout, stack, "kafka-2")
    keys = [
        line.split("=", 1)[0]
        for line in text.splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert len(keys) == len(set(keys))


def test_one_cluster_id_for_every_node_made_once(layout: ClusterLayout) -> None:
    first = kafka.cluster_id(layout)
    assert kafka.cluster_id(layout) == first
    assert not first.startswith("-") and len(first) == 22


def test_kafka_command_is_marked_and_capped(layout: ClusterLayout, stack: StackSettings) -> None:
    argv = kafka.command(layout, stack, "kafka-3")
    assert marker("kafka-3") in argv
    assert "-Xmx512m" in argv
    assert argv[-2:] == ["kafka.Kafka", str(layout.home("kafka-3") / "server.properties")]
    assert str(stack.jars / "kafka" / "*") in argv


def test_nodes_listen_where_the_layout_says(layout: ClusterLayout, stack: StackSettings) -> None:
    nodes = kafka.nodes(layout, stack)
    assert [n.name for n in nodes] == ["kafka-1", "kafka-2", "kafka-3"]
    assert nodes[1].addresses == (("127.0.0.1", 19093), ("127.0.0.1", 19193))


# --- Cassandra ------------------------------------------------------------------------------


@pytest.mark.parametrize("index", [0, 1, 2])
def test_each_cassandra_node_on_its_own_address_with_the_first_as_seed(
    layout: ClusterLayout, stack: StackSettings, index: int
) -> None:
    node, address = f"cassandra-{index + 1}", f"127.0.0.{21 + index}"
    text = cassandra.cassandra_yaml(layout, stack, node)
    keys = _yaml_keys(text)
    assert keys["listen_address"] == address
    assert keys["rpc_address"] == address
    assert keys["native_transport_port"] == "9042"
    assert keys["storage_port"] == "7000"
    assert '- seeds: "127.0.0.21:7000"' in text
    assert keys["cluster_name"] == "apm-cluster"
    assert keys["endpoint_snitch"] == "SimpleSnitch"  # datacenter1, as storage_replication
    assert keys["auto_bootstrap"] == "false"
    assert keys["dynamic_snitch"] == "true"
    assert keys["commitlog_directory"] == f"{layout.home(node)}/commitlog"


def test_cassandra_command_has_its_own_jmx_port_heap_and_fast_ring_join(
    layout: ClusterLayout, stack: StackSettings
) -> None:
    argv = cassandra.command(layout, stack, "cassandra-2")
    assert marker("cassandra-2") in argv
    assert {"-Xms768m", "-Xmx768m", "-Xmn192m"} <= set(argv)
    assert "-Dcassandra.jmx.local.port=7212" in argv
    assert "-Dcassandra.skip_wait_for_gossip_to_settle=0" in argv
    assert f"-Dcassandra.ring_delay_ms={cassandra.RING_DELAY_MS}" in argv
    assert f"-Dcassandra.config=file://{layout.home('cassandra-2') / 'cassandra.yaml'}" in argv
    assert "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED" in argv  # the stack's JDK17
    assert argv[-1] == "org.apache.cassandra.service.CassandraDaemon"


def test_cassandra_nodes_ring_probe_and_start_probe_differ(
    layout: ClusterLayout, stack: StackSettings
) -> None:
    nodes = cassandra.nodes(layout, stack)
    assert [n.addresses[0] for n in nodes] == [
        ("127.0.0.21", 9042),
        ("127.0.0.22", 9042),
        ("127.0.0.23", 9042),
    ]
    assert [n.addresses[2] for n in nodes] == [
        ("127.0.0.1", 7211),
        ("127.0.0.1", 7212),
        ("127.0.0.1", 7213),
    ]
    assert all(n.started is not None and n.started != n.healthy for n in nodes)


def test_a_template_without_one_seeds_entry_is_refused(
    layout: ClusterLayout, tmp_path: Path
) -> None:
    deploy = tmp_path / "root" / "deploy" / "local"
    deploy.mkdir(parents=True)
    (deploy / "cassandra.yaml.tmpl").write_text("listen_address: ${host}\n")
    with pytest.raises(ValueError, match="seeds"):
        cassandra.cassandra_yaml(layout, StackSettings(root=tmp_path / "root"), "cassandra-1")


# --- Spark ----------------------------------------------------------------------------------


def test_master_args(layout: ClusterLayout) -> None:
    assert spark.daemon_args(layout, "spark-master") == [
        spark.MASTER_CLASS,
        "--host",
        "127.0.0.1",
        "--port",
        "17077",
        "--webui-port",
        "18080",
    ]


@pytest.mark.parametrize(("node", "ui"), [("spark-worker-1", "18081"), ("spark-worker-2", "18082")])
def test_worker_args(layout: ClusterLayout, node: str, ui: str) -> None:
    assert spark.daemon_args(layout, node) == [
        spark.WORKER_CLASS,
        "--host",
        "127.0.0.1",
        "--webui-port",
        ui,
        "--cores",
        "2",
        "--memory",
        "1536m",
        "--work-dir",
        str(layout.home(node) / "work"),
        "spark://127.0.0.1:17077",
    ]


def _fake_spark_home(tmp_path: Path) -> Path:
    home = tmp_path / "pyspark"
    (home / "jars").mkdir(parents=True)
    (home / "jars" / "spark-launcher_2.13-4.2.0.jar").touch()
    return home


def test_daemon_env_marks_caps_and_names_the_scala_version(
    layout: ClusterLayout, tmp_path: Path
) -> None:
    home = _fake_spark_home(tmp_path)
    env = spark.daemon_env(layout, "spark-worker-1", home)
    assert env["SPARK_HOME"] == str(home)
    assert env["SPARK_SCALA_VERSION"] == "2.13"
    assert env["SPARK_DAEMON_MEMORY"] == "256m"
    assert marker("spark-worker-1") in env["SPARK_DAEMON_JAVA_OPTS"].split()


def test_launch_command_is_the_launchers_own(
    layout: ClusterLayout, stack: StackSettings, tmp_path: Path
) -> None:
    home = _fake_spark_home(tmp_path)
    seen = {}

    def run(cmd, **kwargs):
        seen["cmd"], seen["env"] = cmd, kwargs["env"]
        # As Spark 4.2's launcher prints it: a blank line, then NUL-terminated arguments.
        args = ["/jdk/bin/java", "-cp", "jars/*", "-Xmx256m", marker("spark-master")]
        args += [spark.MASTER_CLASS, "--host", "127.0.0.1"]
        out = "\n" + "".join(f"{arg}\x00" for arg in args)
        return subprocess.CompletedProcess(cmd, 0, out.encode(), b"")

    argv = spark.launch_command(layout, stack, "spark-master", run=run, home=home)
    assert argv[0] == "/jdk/bin/java"
    assert argv[-3:] == [spark.MASTER_CLASS, "--host", "127.0.0.1"]
    assert seen["cmd"][3] == "org.apache.spark.launcher.Main"
    assert seen["cmd"][4:] == spark.daemon_args(layout, "spark-master")
    assert seen["env"]["SPARK_DAEMON_JAVA_OPTS"].startswith(marker("spark-master"))


def test_a_launcher_failure_or_an_unmarked_command_is_an_error(
    layout: ClusterLayout, stack: StackSettings, tmp_path: Path
) -> None:
    home = _fake_spark_home(tmp_path)

    def failing(cmd, **kwargs):
        return subprocess.CompletedProcess(cmd, 1, b"", b"Cannot find any build directories.")

    with pytest.raises(RuntimeError, match="build directories"):
        spark.launch_command(layout, stack, "spark-master", run=failing, home=home)

    def unmarked(cmd, **kwargs):
        return subprocess.CompletedProcess(cmd, 0, b"java\0-cp\0x\0Master\0", b"")

    with pytest.raises(RuntimeError, match="lacks"):
        spark.launch_command(layout, stack, "spark-master", run=unmarked, home=home)


def test_no_launcher_jar_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="spark-launcher"):
        spark.scala_version(tmp_path)


# --- shared pieces --------------------------------------------------------------------------


def test_override_lines_replaces_in_place_appends_the_rest_and_skips_nested_keys() -> None:
    text = "a=1\n# b=commented\nb=2\n"
    assert override_lines(text, {"b": "3", "c": "4"}, "=") == (
        "a=1\n# b=commented\nb=3\n# cluster node settings (launch/cluster)\nc=4\n"
    )
    yaml = "seed_provider:\n  - seeds: x\nseeds: top\n"
    assert override_lines(yaml, {"seeds": "y"}, ": ") == "seed_provider:\n  - seeds: x\nseeds: y\n"


def test_markers_never_match_the_stacks_or_each_other() -> None:
    names = ClusterLayout().engine_nodes
    for name in names:
        assert "-Dapm.stack=kafka " not in marker(name) + " "
        assert "-Dapm.stack=cassandra " not in marker(name) + " "
        others = [marker(other) + " " for other in names if other != name]
        assert not any(o in marker(name) + " " for o in others)
