"""The production compose stack: `docker compose config` accepts it (when the compose plugin
is installed; this machine's docker CLI may lack it), and its structure holds what issue 7
asks: 3 KRaft brokers with RF 3, a 3-node Cassandra ring with RF 3, Spark standalone running
the aggregator via spark-submit as 2 shards, 2 ingest replicas behind nginx, the dashboard
(tests/deploy/test_agree.py checks these values against the tested cluster's). Every APM_*
variable it (or any file under deploy/, docs/deploy.md or the README) sets must be one that a
settings class reads (apm.settings.env_names: prefix + field, or a shared field's choices)."""

from __future__ import annotations

import importlib
import itertools
import os
import re
import shutil
import subprocess
from typing import Any

import pytest
import yaml

from apm.settings import PROJECT_ROOT, env_names
from tests.support.debs import require

pytestmark = pytest.mark.unit

COMPOSE_DIR = PROJECT_ROOT / "deploy" / "compose"
COMPOSE = COMPOSE_DIR / "docker-compose.yml"
DEPLOY_DOC = PROJECT_ROOT / "docs" / "deploy.md"
README = PROJECT_ROOT / "README.md"
SETTINGS = (  # every settings class of a process; what they read is all that may be set
    "ingest.settings:IngestSettings",
    "aggregator.settings:AggregatorSettings",
    "dashboard.settings:DashboardSettings",
    "storage.settings:StorageSettings",
    "loadgen.settings:LoadgenSettings",
    "agent.settings:AgentSettings",
    "launch.stack.config:StackSettings",
    "launch.cluster.layout:ClusterLayout",
)
APM_NAME = re.compile(r"\bAPM_[A-Z0-9_]*[A-Z0-9]\b")
JAR_DIR = "/opt/apm/jars"  # the image's jar cache
# The platform's services, named as the tested cluster's nodes.
INGESTS = ("ingest-1", "ingest-2")
AGGREGATORS = ("aggregator-0", "aggregator-1")
ENV_FOR_CONFIG = {
    "APM_DASHBOARD_PASSWORD_HASH": "x",
    "APM_DASHBOARD_SECRET_KEY": "y",
    "APM_LOADGEN_API_KEY": "z",
}


def read_settings() -> set[str]:
    """Every APM_* variable some settings class reads."""
    names: set[str] = set()
    for spec in SETTINGS:
        module, name = spec.split(":")
        try:
            cls = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            # A broken import must not silence the checks that read these names.
            pytest.fail(f"{spec} is not importable: {exc!r}")
        names |= env_names(cls)
    return names


def unknown_settings(names: set[str]) -> list[str]:
    """The names that no settings class reads, sorted."""
    return sorted(set(names) - read_settings())


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


def _env(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment", {})
    return {k: str(v) for k, v in env.items()}


def _command(service: dict[str, Any]) -> str:
    return " ".join(map(str, service.get("command", [])))


def _compose_command() -> list[str]:
    """The compose v2 plugin when present, else Debian's docker-compose (v1), which `make debs`
    installs: both validate the file offline, no engine needed. Neither: the test fails."""
    if (
        shutil.which("docker")
        and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0
    ):
        return ["docker", "compose"]
    return [require("docker-compose", "docker-compose")]


def test_docker_compose_config_accepts_the_file(tmp_path):
    command = _compose_command()
    done = subprocess.run(
        [*command, "-f", str(COMPOSE), "config", "-q"],
        capture_output=True,
        text=True,
        cwd=COMPOSE_DIR,
        env={**os.environ, **ENV_FOR_CONFIG},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    missing = subprocess.run(
        [*command, "-f", str(COMPOSE), "config", "-q"],
        capture_output=True,
        text=True,
        cwd=COMPOSE_DIR,
        env={k: v for k, v in os.environ.items() if k not in ENV_FOR_CONFIG},
        timeout=60,
    )
    assert missing.returncode != 0 and "set it in .env" in missing.stderr


def test_three_kraft_brokers_with_replication_three(compose):
    services = compose["services"]
    brokers = [n for n in services if n.startswith("kafka-")]
    assert brokers == ["kafka-1", "kafka-2", "kafka-3"]
    ids, voters = set(), set()
    for name in brokers:
        env = _env(services[name])
        ids.add(env["KAFKA_NODE_ID"])
        voters.add(env["KAFKA_CONTROLLER_QUORUM_VOTERS"])
        assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
        assert env["KAFKA_ADVERTISED_LISTENERS"] == f"PLAINTEXT://{name}:9092"
        assert env["KAFKA_DEFAULT_REPLICATION_FACTOR"] == "3"
        assert int(env["KAFKA_MIN_INSYNC_REPLICAS"]) == 2
    assert ids == {"1", "2", "3"}
    assert voters == {"1@kafka-1:9093,2@kafka-2:9093,3@kafka-3:9093"}
    # The metric topics are created by the ingest: it must ask for RF 3 too.
    for name in INGESTS:
        assert _env(services[name])["APM_INGEST_TOPIC_REPLICATION"] == "3"


def test_three_node_cassandra_ring_with_rf_three(compose):
    services = compose["services"]
    nodes = [n for n in services if n.startswith("cassandra-")]
    assert len(nodes) == 3
    assert len({_env(services[n])["CASSANDRA_CLUSTER_NAME"] for n in nodes}) == 1
    seeds = _env(services[nodes[0]])["CASSANDRA_SEEDS"].split(",")
    assert set(seeds) <= set(nodes)
    # One bootstrap at a time: each later node waits for the previous one to be healthy.
    for before, after in itertools.pairwise(nodes):
        assert services[after]["depends_on"][before]["condition"] == "service_healthy"
    dc = _env(services[nodes[0]])["CASSANDRA_DC"]
    assert {_env(services[n])["CASSANDRA_DC"] for n in nodes} == {dc}
    for name in (*AGGREGATORS, "dashboard"):
        replication = _env(services[name])["APM_STORAGE_REPLICATION"]
        assert re.search(rf"'{dc}':\s*3", replication), replication


def test_spark_standalone_runs_the_aggregator_through_spark_submit(compose):
    services = compose["services"]
    assert "deploy.master.Master" in _command(services["spark-master"])
    worker = _command(services["spark-worker"])
    assert "deploy.worker.Worker" in worker and "spark://spark-master:7077" in worker
    mount = "checkpoints:/var/lib/apm/checkpoints"
    assert mount in services["spark-worker"]["volumes"]
    for name in AGGREGATORS:
        command = services[name]["command"]
        assert command[0] == "spark-submit"
        assert command[command.index("--master") + 1] == "spark://spark-master:7077"
        # Under spark-submit the driver's JVM is up before the job reads its settings, and
        # the job asks for no jars (aggregator.cli._local_jars): spark-submit hands them in.
        assert "--driver-memory" in command
        jars = command[command.index("--jars") + 1].split(",")
        assert jars == [f"{JAR_DIR}/spark/*.jar", f"{JAR_DIR}/apm/apm-aggregator-jvm.jar"]
        app = PROJECT_ROOT / command[command.index("--shard") - 1]
        assert app.is_file() and "aggregator" in app.read_text()
        # Each driver's own name, for the executors to call it back.
        assert f"spark.driver.host={name}" in command
        assert _env(services[name])["SPARK_LOCAL_IP"] == services[name]["hostname"] == name
        # Structured Streaming checkpoints must be shared by the driver and the executors.
        assert mount in services[name]["volumes"]
        assert _env(services[name])["APM_AGGREGATOR_CHECKPOINT_DIR"] == mount.split(":")[1]


# The only services meant to be reached from other hosts: both have their own auth.
PUBLIC_SERVICES = {"nginx", "dashboard"}


def test_the_image_holds_the_jars_spark_submit_hands_in():
    """The connector from the project's pom, and the aggregator's operator built from
    aggregator/jvm, where the aggregators' --jars look (and APM_STACK_JAR_CACHE says), and
    APM_AGGREGATOR_JARS naming the same for `apm aggregator run` in local mode (k8s)."""
    dockerfile = (COMPOSE_DIR / "Dockerfile").read_text()
    assert "-DoutputDirectory=/jars/spark" in dockerfile
    assert "-f aggregator/jvm/pom.xml package" in dockerfile
    assert "apm-aggregator-jvm.jar /jars/apm/" in dockerfile
    assert f"COPY --from=jars /jars {JAR_DIR}" in dockerfile
    assert f"APM_STACK_JAR_CACHE={JAR_DIR}" in dockerfile
    jars = f"APM_AGGREGATOR_JARS={JAR_DIR}/spark/*.jar,{JAR_DIR}/apm/apm-aggregator-jvm.jar"
    assert jars in dockerfile


def test_only_authenticated_services_are_published_beyond_loopback(compose):
    """A published port without a host IP listens on every interface; the Spark master UI has
    no login (and kill links by default), so it, and every engine, stays on 127.0.0.1."""
    published = {
        name: [str(p) for p in service.get("ports", [])]
        for name, service in compose["services"].items()
    }
    assert published["spark-master"], "the master UI is published (for a tunnel)"
    for name, ports in published.items():
        if name in PUBLIC_SERVICES:
            continue
        for port in ports:
            assert port.startswith("127.0.0.1:"), f"{name} publishes {port} on all interfaces"


def test_spark_ui_kill_links_are_off(compose):
    services = compose["services"]
    opts = _env(services["spark-master"]).get("SPARK_MASTER_OPTS", "")
    assert "-Dspark.ui.killEnabled=false" in opts.split()
    for name in AGGREGATORS:
        command = services[name]["command"]
        confs = [command[i + 1] for i, arg in enumerate(command) if arg == "--conf"]
        assert "spark.ui.killEnabled=false" in confs


def test_ingest_replicas_behind_nginx(compose):
    services = compose["services"]
    for name in INGESTS:
        ingest = services[name]
        assert ingest["hostname"] == name and "ports" not in ingest  # reached through nginx
        assert "ingest serve" in _command(ingest) and "--port 8080" in _command(ingest)
    nginx = services["nginx"]
    conf_mount = next(v for v in nginx["volumes"] if v.endswith("/etc/nginx/nginx.conf:ro"))
    conf = (COMPOSE_DIR / conf_mount.split(":")[0]).read_text()
    upstream = re.search(r"upstream ingest \{([^}]*)\}", conf)
    assert upstream
    assert re.findall(r"server ([\w-]+):8080", upstream.group(1)) == list(INGESTS)
    assert set(nginx["depends_on"]) == set(INGESTS)
    assert "proxy_pass http://ingest;" in conf
    # The health page scrapes every replica by name, not one through Docker's DNS.
    urls = _env(services["dashboard"])["APM_DASHBOARD_INGEST_METRICS_URLS"].split(",")
    assert urls == [f"http://{name}:8080/metrics" for name in INGESTS]
    limit = re.search(r"client_max_body_size (\d+)m;", conf)
    assert limit and int(limit.group(1)) > 5  # above the ingest's 5 MiB, so it answers 413
    assert "dashboard serve" in _command(services["dashboard"])
    assert services["loadgen"]["profiles"] == ["loadgen"]


def test_every_file_the_stack_needs_exists(compose):
    build = compose["x-apm-image"]["build"]
    context = (COMPOSE_DIR / build["context"]).resolve()
    dockerfile = context / build["dockerfile"]
    assert context == PROJECT_ROOT and dockerfile.is_file()
    for line in dockerfile.read_text().splitlines():
        if line.startswith("COPY ") and "--from" not in line:
            for src in line.split()[1:-1]:
                assert (context / src).exists(), f"{dockerfile.name}: {src} is missing"
    assert (COMPOSE_DIR / ".env.example").is_file()
    # Local state and secrets never go into the image's build context.
    ignored = (COMPOSE_DIR / "Dockerfile.dockerignore").read_text().split()
    assert {".venv", "var", "deploy/compose/secrets", "deploy/compose/.env"} <= set(ignored)
    services = compose["services"]
    for name, service in services.items():
        for dep in service.get("depends_on", {}):
            assert dep in services, f"{name} depends on unknown {dep}"


def test_compose_sets_only_read_settings(compose):
    names = {
        var
        for service in compose["services"].values()
        for var in _env(service)
        if var.startswith("APM_")
    }
    assert {"APM_KAFKA_BOOTSTRAP", "APM_STORAGE_HOSTS"} <= names
    assert unknown_settings(names) == []


@pytest.mark.parametrize("service", ["ingest-1", "ingest-2", *AGGREGATORS, "dashboard"])
def test_every_engine_client_gets_the_clusters_addresses(compose, service, monkeypatch):
    """Resolved as the container would: its environment through its settings class."""
    from aggregator.settings import AggregatorSettings
    from dashboard.settings import DashboardSettings
    from ingest.settings import IngestSettings
    from storage.settings import StorageSettings

    for var in read_settings():
        monkeypatch.delenv(var, raising=False)
    for var, value in _env(compose["services"][service]).items():
        monkeypatch.setenv(var, value)
    cls = {
        "ingest": IngestSettings,
        "aggregator": AggregatorSettings,
        "dashboard": DashboardSettings,
    }[service.split("-")[0]]
    assert cls().kafka_bootstrap == "kafka-1:9092,kafka-2:9092,kafka-3:9092"
    if not service.startswith("ingest"):
        assert StorageSettings().host_list == ["cassandra-1", "cassandra-2", "cassandra-3"]


def test_deploy_doc_and_readme_name_only_read_settings():
    names = set(APM_NAME.findall(DEPLOY_DOC.read_text()))
    assert len(names) > 20
    assert unknown_settings(names) == []
    assert unknown_settings(set(APM_NAME.findall(README.read_text()))) == []


def test_no_file_under_deploy_sets_an_unread_setting():
    """Compose and k8s are parsed above; this covers the rest too (.env.example, Dockerfile,
    systemd unit, agent.toml), by name wherever it appears."""
    found = {}
    for path in sorted((PROJECT_ROOT / "deploy").rglob("*")):
        # Not the git-ignored local files (deploy/compose/.env, secrets/).
        if path.is_file() and path.name != ".env" and "secrets" not in path.parts:
            try:
                text = path.read_text()
            except UnicodeDecodeError:
                continue
            found.update({name: path.relative_to(PROJECT_ROOT) for name in APM_NAME.findall(text)})
    assert "APM_AGENT_SPOOL_DIR" in found and "APM_STACK_JAR_CACHE" in found
    assert {name: str(found[name]) for name in unknown_settings(set(found))} == {}


def test_the_checker_catches_a_misspelt_or_unread_setting():
    assert unknown_settings(
        {
            "APM_INGEST_KAFKA_BOOTSTRAPS",
            "APM_NOPE",
            "APM_CASSANDRA_HOSTS",
            "APM_KAFKA_BOOTSTRAP",
            "APM_INGEST_KAFKA_BOOTSTRAP",
        }
    ) == ["APM_CASSANDRA_HOSTS", "APM_INGEST_KAFKA_BOOTSTRAPS", "APM_NOPE"]
