"""A second Kafka and Cassandra, started by the project's own stack scripts with client TLS
(``APM_STACK_TLS_*``), on their own ports and var dir: the shared stack stays as it is."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from launch.probe import free_port
from launch.stack.config import StackSettings
from tests.support.certs import Ca, make_ca

__all__ = ["TlsStack", "tls_stack"]


@dataclass(frozen=True)
class TlsStack:
    settings: StackSettings
    ca: Ca  # signed the engines' certificate ("localhost", 127.0.0.1)
    other_ca: Ca  # signed nothing they present

    @property
    def kafka_bootstrap(self) -> str:
        return self.settings.kafka_bootstrap


@contextmanager
def tls_stack(shared: StackSettings, home: Path) -> Iterator[TlsStack]:
    """Both engines with TLS, healthy (their health checks speak TLS too); stopped on exit.
    Small heaps: a third JVM pair beside the shared stack on a small machine."""
    from launch.stack import control

    ca, other = make_ca(home / "ca"), make_ca(home / "other-ca", "other")
    cert, key = ca.issue("engines")
    settings = StackSettings(
        root=shared.root,
        jar_cache=shared.jars,
        var_dir=home / "var",
        host="127.0.0.1",
        kafka_port=free_port(),
        kafka_controller_port=free_port(),
        cassandra_port=free_port(),
        cassandra_storage_port=free_port(),
        cassandra_jmx_port=free_port(),
        kafka_heap="256m",
        cassandra_heap="512m",
        tls_cert=cert,
        tls_key=key,
        tls_ca=ca.cert,
    )
    try:
        control.up(settings)
        yield TlsStack(settings, ca, other)
    finally:
        control.down(settings)
