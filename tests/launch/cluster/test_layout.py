"""The cluster layout: the values of PLAN.md, what derives from them, and env()."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from launch.cluster.layout import ClusterLayout
from storage.settings import StorageSettings

pytestmark = pytest.mark.unit


def test_defaults_are_the_tested_layout(tmp_path: Path) -> None:
    layout = ClusterLayout(root=tmp_path)
    assert layout.var == tmp_path / "var" / "cluster"
    assert layout.kafka_bootstrap == "127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094"
    assert layout.kafka_quorum_voters == "1@127.0.0.1:19192,2@127.0.0.1:19193,3@127.0.0.1:19194"
    assert layout.storage_hosts == "127.0.0.21,127.0.0.22,127.0.0.23"
    assert layout.spark_master_url == "spark://127.0.0.1:17077"
    assert layout.lb_url == "http://127.0.0.1:18000"
    assert layout.dashboard_url == "http://127.0.0.1:18050"
    assert layout.aggregator_shard_specs == ("0/2", "1/2")
    assert layout.engine_nodes == (
        "kafka-1",
        "kafka-2",
        "kafka-3",
        "cassandra-1",
        "cassandra-2",
        "cassandra-3",
        "spark-master",
        "spark-worker-1",
        "spark-worker-2",
    )
    assert layout.log("kafka-2") == tmp_path / "var" / "cluster" / "kafka-2" / "kafka-2.log"


def test_env_is_what_the_platform_reads(tmp_path: Path) -> None:
    env = ClusterLayout(root=tmp_path).env()
    assert env["APM_KAFKA_BOOTSTRAP"] == "127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094"
    assert env["APM_INGEST_TOPIC_REPLICATION"] == "3"
    assert env["APM_STORAGE_HOSTS"] == "127.0.0.21,127.0.0.22,127.0.0.23"
    assert env["APM_STORAGE_REPLICATION"] == (
        "{'class': 'NetworkTopologyStrategy', 'datacenter1': 3}"
    )


def test_env_is_accepted_by_the_storage_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in ClusterLayout().env().items():
        monkeypatch.setenv(name, value)
    storage = StorageSettings()
    assert storage.host_list == ["127.0.0.21", "127.0.0.22", "127.0.0.23"]
    assert "NetworkTopologyStrategy" in storage.replication


def test_reads_its_prefix_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APM_CLUSTER_KAFKA_HEAP", "384m")
    monkeypatch.setenv("APM_CLUSTER_INGEST_PORTS", "[28001, 28002]")
    layout = ClusterLayout()
    assert layout.kafka_heap == "384m"
    assert layout.ingest_urls == ("http://127.0.0.1:28001", "http://127.0.0.1:28002")


def test_is_frozen() -> None:
    with pytest.raises(ValidationError):
        ClusterLayout().lb_port = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    "bad",
    [
        {"kafka_controller_ports": (1, 2)},
        {"cassandra_jmx_ports": (1,)},
        {"aggregator_shards": 3},
        {"topic_replication": 4},
        {"min_insync_replicas": 3, "topic_replication": 2},
    ],
)
def test_inconsistent_layouts_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        ClusterLayout(**bad)  # type: ignore[arg-type]
