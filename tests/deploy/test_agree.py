"""compose, k8s and the tested cluster agree (issue 15).

``launch.cluster.layout.ClusterLayout`` is the layout ``apm cluster up`` starts and
``make test-cluster`` tests; ``env()`` is what every platform process there runs with. Every
such variable must reach each compose service and k8s workload whose settings class reads it,
with a value that agrees (tests/deploy/deploys.py says how). The shapes must agree too: Kafka
brokers, RF and min.insync.replicas (acks=all is the ingest's own), the Cassandra ring, its DC
and LOCAL_QUORUM, the aggregator shards, and the ingest replicas behind a load balancer that
retries the other replica. ``disagreements`` is checked on drifted copies at the end, so this
test can fail.
"""

from __future__ import annotations

import ast
import os
import re
from typing import Any

import pytest
import yaml

from apm.settings import PROJECT_ROOT, env_names
from launch.cluster.layout import ClusterLayout
from tests.deploy.deploys import (
    COMPOSE_DIR,
    K8S,
    ROLES,
    classes,
    compose_deploy,
    disagreements,
    k8s_deploy,
    workload,
)

pytestmark = pytest.mark.unit


@pytest.fixture
def layout(monkeypatch: pytest.MonkeyPatch) -> ClusterLayout:
    """The layout as shipped: no APM_CLUSTER_* of the caller's environment."""
    for var in [v for v in os.environ if v.startswith("APM_CLUSTER_")]:
        monkeypatch.delenv(var)
    return ClusterLayout()


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((COMPOSE_DIR / "docker-compose.yml").read_text())


@pytest.fixture(scope="module")
def k8s() -> list[dict[str, Any]]:
    docs = [d for f in sorted(K8S.glob("*.yaml")) for d in yaml.safe_load_all(f.read_text())]
    return [d for d in docs if d]


def test_compose_runs_the_platform_with_the_clusters_variables(layout, compose):
    assert disagreements(layout.env(), compose_deploy(compose)) == []


def test_k8s_runs_the_platform_with_the_clusters_variables(layout, k8s):
    assert disagreements(layout.env(), k8s_deploy(k8s)) == []


def test_kafka_rf_min_insync_and_acks(layout, compose, k8s, monkeypatch):
    services = compose["services"]
    brokers = [services[n]["environment"] for n in services if n.startswith("kafka-")]
    assert len(brokers) == len(layout.kafka_nodes)
    for env in brokers:
        assert int(env["KAFKA_DEFAULT_REPLICATION_FACTOR"]) == layout.topic_replication
        assert int(env["KAFKA_MIN_INSYNC_REPLICAS"]) == layout.min_insync_replicas
        assert len(env["KAFKA_CONTROLLER_QUORUM_VOTERS"].split(",")) == len(layout.kafka_nodes)
    from ingest import publisher
    from ingest.settings import IngestSettings

    made: list[dict[str, Any]] = []
    monkeypatch.setattr(publisher, "new_producer", lambda *a, **kw: made.append(kw) or _Producer())
    ingests = {**compose_deploy(compose)["ingest"], **k8s_deploy(k8s)["ingest"]}
    assert len(ingests) == 3  # ingest-1, ingest-2, apm-ingest
    for env in ingests.values():
        kafka = publisher.KafkaPublisher(_settings(IngestSettings, env, monkeypatch))
        try:
            # The spec the ingest creates its topics with, and its producer.
            assert kafka._spec.replication == layout.topic_replication
            assert kafka._spec.configs()["min.insync.replicas"] == str(layout.min_insync_replicas)
            kafka._get_producer()
        finally:
            kafka.close(0)
    assert [kw["acks"] for kw in made] == ["all"] * len(ingests)


class _Producer:
    """Enough of kafka-python's producer for the publisher to make and close one."""

    def flush(self, timeout: float | None = None) -> None:
        pass

    def close(self, timeout: float | None = None) -> None:
        pass


def _settings(cls: type[Any], env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """``cls`` as the process would build it from ``env`` alone."""
    with monkeypatch.context() as patch:
        for var in {v for role in ROLES for c in classes(role) for v in env_names(c)}:
            patch.delenv(var, raising=False)
        for var, value in env.items():
            patch.setenv(var, value)
        return cls()


def test_cassandra_ring_dc_and_local_quorum(layout, compose, k8s, monkeypatch):
    from cassandra import ConsistencyLevel
    from cassandra.cluster import EXEC_PROFILE_DEFAULT

    from storage.driver import open_cluster
    from storage.settings import StorageSettings

    services = compose["services"]
    nodes = [services[n]["environment"] for n in services if n.startswith("cassandra-")]
    assert len(nodes) == len(layout.cassandra_nodes)
    assert {env["CASSANDRA_DC"] for env in nodes} == {layout.cassandra_dc}
    clients = {**compose_deploy(compose)["dashboard"], **k8s_deploy(k8s)["aggregator"]}
    for env in clients.values():
        storage = _settings(StorageSettings, env, monkeypatch)
        replication = ast.literal_eval(storage.replication)
        assert replication == {"class": "NetworkTopologyStrategy", layout.cassandra_dc: 3}
        # The driver resolves its contact points when the Cluster is made: any will do here.
        local = storage.model_copy(update={"hosts": "127.0.0.1"})
        profile = open_cluster(local).profile_manager.profiles[EXEC_PROFILE_DEFAULT]
        assert profile.consistency_level == ConsistencyLevel.LOCAL_QUORUM  # reads and writes


def test_two_aggregator_shards(layout, compose, k8s):
    aggregators = compose_deploy(compose)["aggregator"]
    shards = []
    for name in aggregators:
        command = compose["services"][name]["command"]
        assert command[command.index("--master") + 1].startswith("spark://")  # standalone
        shards.append(command[command.index("--shard") + 1])
    assert shards == list(layout.aggregator_shard_specs)
    stateful = workload(k8s, "apm-aggregator")
    assert stateful["spec"]["replicas"] == layout.aggregator_shards
    args = " ".join(stateful["spec"]["template"]["spec"]["containers"][0]["args"])
    assert f'--shard "${{HOSTNAME##*-}}/{layout.aggregator_shards}"' in args


def test_ingest_replicas_behind_a_retrying_load_balancer(layout, compose, k8s):
    replicas = len(layout.ingest_ports)
    ingests = list(compose_deploy(compose)["ingest"])
    assert len(ingests) == replicas
    conf = (COMPOSE_DIR / "nginx.conf").read_text()
    upstream = re.search(r"upstream ingest \{([^}]*)\}", conf)
    assert upstream and re.findall(r"server ([\w-]+):", upstream.group(1)) == ingests
    assert not re.search(r"\b(ip_hash|hash|least_conn|random)\b", upstream.group(1))  # round robin
    retry = re.search(r"proxy_next_upstream ([^;]*);", conf)
    assert retry and {"error", "timeout", "http_502", "http_503", "non_idempotent"} <= set(
        retry.group(1).split()
    )
    assert "nginx:80" in " ".join(compose["services"]["loadgen"]["command"])
    dashboard = compose_deploy(compose)["dashboard"]["dashboard"]
    assert len(dashboard["APM_DASHBOARD_INGEST_METRICS_URLS"].split(",")) == replicas
    assert workload(k8s, "apm-ingest")["spec"]["replicas"] == replicas
    (service,) = [
        o for o in k8s if o["kind"] == "Service" and o["metadata"]["name"] == "apm-ingest"
    ]
    assert "clusterIP" not in service["spec"]  # a balancing Service, not a headless one
    urls = k8s_deploy(k8s)["dashboard"]["apm-dashboard"]["APM_DASHBOARD_INGEST_METRICS_URLS"]
    assert len(urls.split(",")) == replicas


def test_the_check_catches_drift(layout, compose):
    """Each of these drifts is one that compose or k8s once had (before issue 15), or could."""
    cluster = layout.env()
    good = compose_deploy(compose)

    def drifted(role: str, var: str, value: str | None) -> list[str]:
        deploy = {r: {n: dict(e) for n, e in envs.items()} for r, envs in good.items()}
        for env in deploy[role].values():
            if value is None:
                env.pop(var, None)
            else:
                env[var] = value
        return disagreements(cluster, deploy)

    assert (
        drifted(
            "aggregator",
            "APM_STORAGE_REPLICATION",
            "{'class':'NetworkTopologyStrategy','datacenter1':3}",
        )
        == []
    )
    assert drifted("ingest", "APM_INGEST_TOPIC_REPLICATION", "1") != []
    assert drifted(
        "dashboard", "APM_STORAGE_REPLICATION", "{'class': 'NetworkTopologyStrategy', 'dc1': 3}"
    ) == [
        "dashboard: APM_STORAGE_REPLICATION=\"{'class': 'NetworkTopologyStrategy', 'dc1': 3}\", "
        f"the cluster: {cluster['APM_STORAGE_REPLICATION']!r}"
    ]
    assert drifted("aggregator", "APM_KAFKA_BOOTSTRAP", "kafka-1:9092") != []
    assert drifted("aggregator", "APM_STORAGE_PORT", None) != []
    assert drifted("aggregator", "APM_STORAGE_PORT", "9043") != []
    assert disagreements({**cluster, "APM_NOPE": "1"}, good) == ["APM_NOPE: no process reads it"]
    assert disagreements(cluster, {**good, "aggregator": {}}) != []


def test_deploy_doc_leads_with_the_layout_it_tests(layout):
    """docs/deploy.md's first section gives the cluster's settings and every port, as run."""
    doc = (PROJECT_ROOT / "docs" / "deploy.md").read_text()
    lead = doc.split("\n## ")[1]
    assert lead.startswith("The tested multi-node layout")
    for var, value in layout.env().items():
        assert f"| `{var}` | `{value}` |" in lead, var
    ports = (
        *layout.kafka_broker_ports,
        *layout.kafka_controller_ports,
        layout.cassandra_port,
        layout.cassandra_storage_port,
        *layout.cassandra_jmx_ports,
        layout.spark_master_port,
        layout.spark_master_ui_port,
        *layout.spark_worker_ui_ports,
        *layout.aggregator_metrics_ports,
        *layout.ingest_ports,
        layout.lb_port,
        layout.dashboard_port,
    )
    table = lead.split("| node |")[1].split("\n\n")[0]
    assert [p for p in ports if not re.search(rf"\b{p}\b", table)] == []
    for host in layout.cassandra_hosts:
        assert host.rsplit(".", 1)[1] in table
    for heap in (layout.kafka_heap, layout.cassandra_heap, layout.aggregator_executor_memory):
        assert heap in table
