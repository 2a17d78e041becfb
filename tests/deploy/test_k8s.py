"""The optional Kubernetes manifests: well-formed objects whose selectors, Services, config
keys and shard counts agree with each other and with the code's settings (no API server here,
so kubectl cannot validate them; this checks what such a validation would, and more)."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from apm.settings import PROJECT_ROOT
from tests.deploy.test_compose import read_settings, unknown_settings

pytestmark = pytest.mark.unit

K8S = PROJECT_ROOT / "deploy" / "k8s"
WORKLOADS = ("Deployment", "StatefulSet", "Job")


@pytest.fixture(scope="module")
def objects() -> list[dict[str, Any]]:
    docs = [d for f in sorted(K8S.glob("*.yaml")) for d in yaml.safe_load_all(f.read_text())]
    return [d for d in docs if d]


def _pod(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["spec"]["template"]


def test_every_object_is_well_formed_and_uniquely_named(objects):
    assert len(objects) >= 8
    seen = set()
    for obj in objects:
        assert {"apiVersion", "kind", "metadata"} <= set(obj), obj
        key = (obj["kind"], obj["metadata"]["name"])
        assert key not in seen
        seen.add(key)
        assert obj["metadata"]["labels"]["app.kubernetes.io/part-of"] == "apm"


def test_selectors_match_their_pods_and_services_find_them(objects):
    pods = []
    for obj in objects:
        if obj["kind"] in ("Deployment", "StatefulSet"):
            labels = _pod(obj)["metadata"]["labels"]
            assert obj["spec"]["selector"]["matchLabels"].items() <= labels.items()
            pods.append(labels)
    for svc in (o for o in objects if o["kind"] == "Service"):
        selector = svc["spec"]["selector"].items()
        assert any(selector <= labels.items() for labels in pods), svc["metadata"]["name"]


def test_config_and_env_name_only_read_settings(objects):
    names = set()
    for obj in objects:
        if obj["kind"] == "ConfigMap":
            names |= set(obj["data"])
        if obj["kind"] in WORKLOADS:
            for c in _pod(obj)["spec"]["containers"]:
                names |= {e["name"] for e in c.get("env", [])}
    assert "APM_INGEST_TOPIC_REPLICATION" in names
    assert unknown_settings(names) == []


def _container_env(objects: list[dict[str, Any]], name: str) -> dict[str, str]:
    """What the workload's container sees: its ConfigMaps (envFrom), then its own env."""
    configmaps = {o["metadata"]["name"]: o["data"] for o in objects if o["kind"] == "ConfigMap"}
    workload = next(o for o in objects if o["kind"] in WORKLOADS and o["metadata"]["name"] == name)
    container = _pod(workload)["spec"]["containers"][0]
    env: dict[str, str] = {}
    for ref in container.get("envFrom", []):
        if "configMapRef" in ref:
            env.update(configmaps[ref["configMapRef"]["name"]])
    env.update({e["name"]: e["value"] for e in container.get("env", []) if "value" in e})
    return env


@pytest.mark.parametrize("name", ["apm-ingest", "apm-aggregator", "apm-dashboard"])
def test_every_engine_client_gets_the_clusters_addresses(objects, name, monkeypatch):
    from aggregator.settings import AggregatorSettings
    from dashboard.settings import DashboardSettings
    from ingest.settings import IngestSettings
    from storage.settings import StorageSettings

    for var in read_settings():
        monkeypatch.delenv(var, raising=False)
    for var, value in _container_env(objects, name).items():
        monkeypatch.setenv(var, str(value))
    cls = {
        "apm-ingest": IngestSettings,
        "apm-aggregator": AggregatorSettings,
        "apm-dashboard": DashboardSettings,
    }[name]
    assert cls().kafka_bootstrap == "kafka-0.kafka:9092,kafka-1.kafka:9092,kafka-2.kafka:9092"
    if name != "apm-ingest":
        assert StorageSettings().hosts.startswith("cassandra-0.cassandra,")


def test_references_resolve(objects):
    configmaps = {o["metadata"]["name"] for o in objects if o["kind"] == "ConfigMap"}
    deployments = {o["metadata"]["name"] for o in objects if o["kind"] == "Deployment"}
    for obj in objects:
        if obj["kind"] == "HorizontalPodAutoscaler":
            assert obj["spec"]["scaleTargetRef"]["name"] in deployments
        if obj["kind"] in WORKLOADS:
            for c in _pod(obj)["spec"]["containers"]:
                assert c["image"] == "apm-platform:0.1.0"
                for ref in c.get("envFrom", []):
                    if "configMapRef" in ref:
                        assert ref["configMapRef"]["name"] in configmaps


def test_aggregator_shards_cover_every_metric_once(objects):
    agg = next(
        o
        for o in objects
        if o["metadata"]["name"] == "apm-aggregator" and o["kind"] == "StatefulSet"
    )
    args = " ".join(_pod(agg)["spec"]["containers"][0]["args"])
    shard = re.search(r'--shard "\$\{HOSTNAME##\*-\}/(\d+)"', args)
    assert shard and int(shard.group(1)) == agg["spec"]["replicas"]


def test_dashboard_replicas_share_the_session_key_through_their_secret(objects):
    """Sessions are signed cookies: replicas accept each other's only with one key, which comes
    from the Secret every replica reads (and which the file's header says to create)."""
    (dash,) = [
        o for o in objects if o["metadata"]["name"] == "apm-dashboard" and o["kind"] == "Deployment"
    ]
    assert dash["spec"]["replicas"] > 1
    (container,) = _pod(dash)["spec"]["containers"]
    secrets = [r["secretRef"]["name"] for r in container.get("envFrom", []) if "secretRef" in r]
    assert secrets == ["apm-dashboard"]
    header = (K8S / "dashboard.yaml").read_text().split("apiVersion")[0]
    assert "generic apm-dashboard" in header and "APM_DASHBOARD_SECRET_KEY=" in header
    assert all(e["name"] != "APM_DASHBOARD_SECRET_KEY" for e in container.get("env", []))


def test_dashboard_scrapes_each_ingest_replica_by_name(objects):
    """Through the balancing Service each scrape could reach another pod, and a rate from two
    pods' counters is wrong: the health page names every pod, through the headless Service
    that gives the StatefulSet's pods their names."""
    (ingest,) = [
        o for o in objects if o["metadata"]["name"] == "apm-ingest" and o["kind"] in WORKLOADS
    ]
    assert ingest["kind"] == "StatefulSet"
    pods = ingest["spec"]["serviceName"]
    (headless,) = [o for o in objects if o["kind"] == "Service" and o["metadata"]["name"] == pods]
    assert headless["spec"]["clusterIP"] == "None"
    labels = _pod(ingest)["metadata"]["labels"].items()
    assert headless["spec"]["selector"].items() <= labels
    urls = _container_env(objects, "apm-dashboard")["APM_DASHBOARD_INGEST_METRICS_URLS"]
    assert urls.split(",") == [
        f"http://apm-ingest-{i}.{pods}:8080/metrics" for i in range(ingest["spec"]["replicas"])
    ]
