"""What each local engine is: how to prepare it, the JVM command that runs it, and its health."""

from __future__ import annotations

import base64
import logging
import subprocess
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from string import Template

from apm.kafka import new_admin
from launch.jvm import CASSANDRA_JDK17, jvm_command
from launch.stack.config import StackSettings
from launch.stack.jars import jar_dir
from launch.stack.tls import cassandra_yaml, client_context, kafka_properties, kafka_tls

__all__ = ["SERVICES", "Service"]


@dataclass(frozen=True)
class Service:
    name: str
    ports: Callable[[StackSettings], tuple[int, ...]]
    prepare: Callable[[StackSettings], None]
    command: Callable[[StackSettings], list[str]]
    healthy: Callable[[StackSettings], bool]

    def home(self, settings: StackSettings) -> Path:
        return settings.var / self.name


def _render(template: Path, target: Path, **values: object) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(Template(template.read_text()).substitute(**values))


def _append(target: Path, text: str) -> None:
    if text:
        with target.open("a") as out:
            out.write(text)


# --- Kafka (KRaft, one combined broker + controller) ---------------------------------------


def _kafka_props(settings: StackSettings) -> Path:
    return settings.var / "kafka" / "server.properties"


def _kafka_prepare(settings: StackSettings) -> None:
    home = settings.var / "kafka"
    data = home / "data"
    _render(
        settings.deploy / "kafka-server.properties.tmpl",
        _kafka_props(settings),
        host=settings.host,
        kafka_port=settings.kafka_port,
        kafka_controller_port=settings.kafka_controller_port,
        data_dir=data,
    )
    _append(_kafka_props(settings), kafka_properties(settings))
    if (data / "meta.properties").exists():
        return
    id_file = home / "cluster.id"
    # As Kafka's own Uuid.randomUuid: an id starting with "-" would be read as an option by
    # kafka-storage's argument parser (1 in 64 ids; it failed a CI run).
    while not id_file.exists() or id_file.read_text().startswith("-"):
        id_file.write_text(base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode())
    cmd = [
        *jvm_command(settings, "kafka-format", "256m"),
        "-cp",
        str(jar_dir(settings, "kafka") / "*"),
        f"-Dlog4j2.configurationFile={settings.deploy / 'kafka-log4j2.properties'}",
        "kafka.tools.StorageTool",
        "format",
        "-t",
        id_file.read_text().strip(),
        "-c",
        str(_kafka_props(settings)),
        "--ignore-formatted",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"kafka storage format failed: {_cause(done.stdout, done.stderr)}")


def _cause(*outputs: str, tail: int = 400) -> str:
    """The first line that names an error (StorageTool prints its reason on stdout, a JVM's
    on stderr, above pages of stack trace), else the end of the output."""
    lines = [line.strip() for out in outputs for line in out.strip().splitlines()]
    first = next((ln for ln in lines if "rror" in ln or "xception" in ln), "")
    return first[:600] or "\n".join(lines)[-tail:] or "no output"


def _kafka_command(settings: StackSettings) -> list[str]:
    return [
        *jvm_command(settings, "kafka", settings.kafka_heap),
        f"-Dlog4j2.configurationFile={settings.deploy / 'kafka-log4j2.properties'}",
        "-cp",
        str(jar_dir(settings, "kafka") / "*"),
        "kafka.Kafka",
        str(_kafka_props(settings)),
    ]


def _kafka_healthy(settings: StackSettings) -> bool:
    from kafka.errors import KafkaError

    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    try:
        admin = new_admin(
            settings.kafka_bootstrap, tls=kafka_tls(settings), request_timeout_ms=3000
        )
    except (KafkaError, OSError):
        return False
    try:
        admin.list_topics()
        return True
    except (KafkaError, OSError):
        return False
    finally:
        admin.close()


# --- Cassandra (single node through CassandraDaemon) ---------------------------------------


def _cassandra_prepare(settings: StackSettings) -> None:
    home = settings.var / "cassandra"
    _render(
        settings.deploy / "cassandra.yaml.tmpl",
        home / "cassandra.yaml",
        host=settings.host,
        cassandra_port=settings.cassandra_port,
        cassandra_storage_port=settings.cassandra_storage_port,
        data_dir=home,
    )
    _append(home / "cassandra.yaml", cassandra_yaml(settings))


def _cassandra_command(settings: StackSettings) -> list[str]:
    home = settings.var / "cassandra"
    jars = jar_dir(settings, "cassandra")
    jamm = sorted(jars.glob("jamm-*.jar"))
    return [
        *jvm_command(settings, "cassandra", settings.cassandra_heap),
        "-Xss256k",
        *CASSANDRA_JDK17,
        *([f"-javaagent:{jamm[-1]}"] if jamm else []),
        f"-Dcassandra.config=file://{home / 'cassandra.yaml'}",
        f"-Dcassandra.storagedir={home}",
        f"-Dcassandra.logdir={home}",
        f"-Dlogback.configurationFile={settings.deploy / 'cassandra-logback.xml'}",
        "-Dcassandra-foreground=yes",
        f"-Dcassandra.jmx.local.port={settings.cassandra_jmx_port}",
        # One node: nothing to gossip with, so don't wait for it.
        "-Dcassandra.skip_wait_for_gossip_to_settle=0",
        "-cp",
        str(jars / "*"),
        "org.apache.cassandra.service.CassandraDaemon",
    ]


def _cassandra_healthy(settings: StackSettings) -> bool:
    from cassandra import DriverException
    from cassandra.cluster import Cluster, NoHostAvailable

    logging.getLogger("cassandra").setLevel(logging.CRITICAL)
    cluster = Cluster(
        [settings.host],
        port=settings.cassandra_port,
        connect_timeout=3,
        control_connection_timeout=3,
        ssl_context=client_context(settings),
    )
    try:
        session = cluster.connect()
        session.execute("SELECT release_version FROM system.local", timeout=3)
        return True
    except (NoHostAvailable, DriverException, OSError):
        return False
    finally:
        cluster.shutdown()


SERVICES: tuple[Service, ...] = (
    Service(
        "kafka",
        lambda s: (s.kafka_port, s.kafka_controller_port),
        _kafka_prepare,
        _kafka_command,
        _kafka_healthy,
    ),
    Service(
        "cassandra",
        lambda s: (s.cassandra_port, s.cassandra_storage_port, s.cassandra_jmx_port),
        _cassandra_prepare,
        _cassandra_command,
        _cassandra_healthy,
    ),
)
