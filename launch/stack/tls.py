"""The local engines with TLS for their clients (``APM_STACK_TLS_CERT``/``_KEY``/``_CA``).

Off by default. Given a PEM certificate and key, ``apm stack up`` makes one PKCS#12 keystore
of them (Kafka and Cassandra both read it; Cassandra's JDK keystores do not take a PEM key
without a password) and adds to the rendered configs:

- Kafka: the clients' listener becomes ``SSL`` (the controller's stays plain on its own
  port); the lines are appended after the template's, and a later key wins in a
  properties file;
- Cassandra: ``client_encryption_options`` enabled and required on the native port.

The templates stay as they are, since ``launch/cluster`` renders them too. The stack's own
health checks connect through the same TLS, trusting ``tls_ca``.
"""

from __future__ import annotations

import secrets
import ssl
import subprocess
from pathlib import Path

from apm.kafka_tls import KafkaTls
from apm.tls import client_context as tls_client_context
from launch.stack.config import StackSettings

__all__ = ["cassandra_yaml", "client_context", "kafka_properties", "kafka_tls", "keystore"]


def keystore(settings: StackSettings, engine: str) -> tuple[Path, str]:
    """(the PKCS#12 keystore of ``tls_cert`` and ``tls_key`` under the engine's home, its
    password), made again at each start so that a renewed pair is picked up."""
    assert settings.tls_cert is not None and settings.tls_key is not None
    home = settings.var / engine
    home.mkdir(parents=True, exist_ok=True)
    store, secret = home / "keystore.p12", home / "keystore.pass"
    password = secrets.token_urlsafe(24)
    secret.touch(mode=0o600)
    secret.write_text(password)
    done = subprocess.run(
        [
            "openssl",
            "pkcs12",
            "-export",
            "-in",
            str(settings.tls_cert),
            "-inkey",
            str(settings.tls_key),
            "-name",
            engine,
            "-out",
            str(store),
            "-passout",
            f"file:{secret}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode != 0:
        raise RuntimeError(f"openssl pkcs12 (the {engine} keystore) failed: {done.stderr.strip()}")
    store.chmod(0o600)
    return store, password


def kafka_properties(settings: StackSettings) -> str:
    """The lines appended to server.properties: nothing without TLS."""
    if not settings.tls:
        return ""
    store, password = keystore(settings, "kafka")
    lines = [
        "# TLS for the clients (APM_STACK_TLS_*, launch/stack/tls.py): these win over the above",
        f"listeners=SSL://{settings.host}:{settings.kafka_port},"
        f"CONTROLLER://{settings.host}:{settings.kafka_controller_port}",
        f"advertised.listeners=SSL://{settings.host}:{settings.kafka_port}",
        "inter.broker.listener.name=SSL",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,SSL:SSL",
        "ssl.keystore.type=PKCS12",
        f"ssl.keystore.location={store}",
        f"ssl.keystore.password={password}",
    ]
    if settings.tls_ca is not None:
        # The broker's own client (the one-node inter-broker listener) trusts this CA.
        lines += ["ssl.truststore.type=PEM", f"ssl.truststore.location={settings.tls_ca}"]
    return "\n".join(lines) + "\n"


def cassandra_yaml(settings: StackSettings) -> str:
    """The block appended to cassandra.yaml: nothing without TLS."""
    if not settings.tls:
        return ""
    store, password = keystore(settings, "cassandra")
    return (
        "# TLS for the clients (APM_STACK_TLS_*, launch/stack/tls.py)\n"
        "client_encryption_options:\n"
        "  enabled: true\n"
        "  optional: false\n"
        f"  keystore: {store}\n"
        f"  keystore_password: {password}\n"
        "  store_type: PKCS12\n"
        "  require_client_auth: false\n"
    )


def kafka_tls(settings: StackSettings) -> KafkaTls:
    """What the stack's Kafka health check connects with (never the environment's)."""
    return KafkaTls(enabled=settings.tls, ca=settings.tls_ca if settings.tls else None)


def client_context(settings: StackSettings) -> ssl.SSLContext | None:
    """The Cassandra health check's TLS context, None for a plain stack."""
    if not settings.tls:
        return None
    return tls_client_context(settings.tls_ca, None, None)
