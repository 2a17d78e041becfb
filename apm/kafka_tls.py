"""TLS from the platform's Kafka clients to the brokers: one ``KafkaTls``, resolved from the
settings by one rule and turned into each client's options.

Every kafka-python client is built by ``apm.kafka.client_config``, which adds
``KafkaTls.client_options``; Spark's Kafka source (a Java client) gets ``spark_options``. So
one set of variables reaches the ingest, the aggregator (its driver and Spark's source), the
load generator, the dashboard and ``apm stack``'s health check alike.

The variables follow ``apm.settings``' rule: an explicit argument, else the service's own
``<PREFIX>KAFKA_<NAME>`` (``APM_INGEST_KAFKA_TLS_CA``), else the shared ``APM_KAFKA_<NAME>``,
else the default (plain TLS off). ``SECURITY_PROTOCOL`` is Kafka's own name for the switch
(``PLAINTEXT`` or ``SSL``); ``TLS_CA`` (a PEM bundle; none: the system's roots),
``TLS_CERT`` and ``TLS_KEY`` (a client certificate for brokers that require one) and
``TLS_CHECK_HOSTNAME`` (on by default) shape it. Bad settings raise ``KafkaTlsError`` naming
the variable, before any connection.
"""

from __future__ import annotations

import os
import socket
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import PrivateAttr, model_validator
from pydantic_settings import BaseSettings

from apm.tls import check_client_files, client_context

__all__ = [
    "FIELDS",
    "KafkaTls",
    "KafkaTlsError",
    "WithKafkaTls",
    "handshake_error",
    "kafka_tls",
]

# The settings, as the lower-case keyword of ``kafka_tls`` and the tail of each variable.
FIELDS = ("security_protocol", "tls_ca", "tls_cert", "tls_key", "tls_check_hostname")
_PROTOCOLS = ("PLAINTEXT", "SSL")
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


class KafkaTlsError(ValueError):
    """A Kafka TLS setting that no client could connect with; the message names it."""


@dataclass(frozen=True)
class KafkaTls:
    """How a client reaches the brokers: ``enabled`` is ``security.protocol=SSL``."""

    enabled: bool = False
    ca: Path | None = None
    cert: Path | None = None
    key: Path | None = None
    check_hostname: bool = True

    def client_options(self) -> dict[str, Any]:
        """kafka-python's keyword arguments (nothing for plain connections)."""
        if not self.enabled:
            return {}
        options: dict[str, Any] = {
            "security_protocol": "SSL",
            "ssl_check_hostname": self.check_hostname,
        }
        if self.ca is not None:
            options["ssl_cafile"] = str(self.ca)
        if self.cert is not None and self.key is not None:
            options["ssl_certfile"], options["ssl_keyfile"] = str(self.cert), str(self.key)
        return options

    def spark_options(self) -> dict[str, str]:
        """Spark's Kafka source options (``kafka.`` + the Java client's config). The Java
        client reads PEM itself (``ssl.truststore.type=PEM``, Kafka 2.7+); a client key is
        handed over as text (``ssl.keystore.key``, a PASSWORD config Kafka and Spark redact
        in their logs) because a PEM keystore file must hold key and chain together."""
        if not self.enabled:
            return {}
        options = {
            "kafka.security.protocol": "SSL",
            # "https" is the Java client's default; empty turns the host name check off.
            "kafka.ssl.endpoint.identification.algorithm": "https" if self.check_hostname else "",
        }
        if self.ca is not None:
            options["kafka.ssl.truststore.type"] = "PEM"
            options["kafka.ssl.truststore.location"] = str(self.ca)
        if self.cert is not None and self.key is not None:
            options["kafka.ssl.keystore.type"] = "PEM"
            options["kafka.ssl.keystore.certificate.chain"] = self.cert.read_text()
            options["kafka.ssl.keystore.key"] = self.key.read_text()
        return options


def handshake_error(server: str, tls: KafkaTls, timeout_s: float = 5.0) -> str | None:
    """Why a TLS handshake with ``server`` (``host:port``) as ``tls`` fails, None when it
    succeeds or the server cannot be reached at all. kafka-python only logs the handshake's
    error and then raises a bare timeout; this names it for the exception."""
    host, _, port = server.rpartition(":")
    context = client_context(tls.ca, tls.cert, tls.key, tls.check_hostname)
    name = host.strip("[]")
    try:
        with (
            socket.create_connection((name, int(port)), timeout=timeout_s) as raw,
            context.wrap_socket(raw, server_hostname=name),
        ):
            return None
    except ssl.SSLCertVerificationError as exc:
        return f"the broker's certificate is not trusted: {exc.verify_message}"
    except ssl.SSLError as exc:
        return f"the TLS handshake failed: {exc.reason or exc}"
    except (OSError, ValueError):
        return None


def _flag(name: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE | _FALSE:
        return text in _TRUE
    raise KafkaTlsError(f"{name}: {value!r} is not a boolean (true or false)")


def kafka_tls(
    prefix: str = "APM_", environ: Mapping[str, str] | None = None, **explicit: Any
) -> KafkaTls:
    """The ``KafkaTls`` of a service whose variables start with ``prefix`` (``APM_INGEST_``;
    the default ``APM_`` reads the shared variables only), checked. ``explicit`` takes the
    names of ``FIELDS``; None there means not given."""
    env = os.environ if environ is None else environ
    if unknown := set(explicit) - set(FIELDS):
        raise TypeError(f"not a Kafka TLS setting: {sorted(unknown)} (one of {FIELDS})")
    raw: dict[str, tuple[str, Any]] = {}  # field -> (where it came from, value)
    for field in FIELDS:
        names = dict.fromkeys(f"{p}KAFKA_{field.upper()}" for p in (prefix, "APM_"))
        if explicit.get(field) is not None:
            raw[field] = (f"{prefix}KAFKA_{field.upper()}", explicit[field])
            continue
        for var in names:
            if env.get(var, "").strip():
                raw[field] = (var, env[var].strip())
                break

    def path(field: str) -> Path | None:
        return Path(raw[field][1]) if field in raw else None

    def name(field: str) -> str:
        return raw[field][0] if field in raw else f"{prefix}KAFKA_{field.upper()}"

    protocol = str(raw.get("security_protocol", ("", "PLAINTEXT"))[1]).upper()
    if protocol not in _PROTOCOLS:
        raise KafkaTlsError(
            f"{name('security_protocol')}: {protocol!r} is not supported (PLAINTEXT or SSL)"
        )
    tls = KafkaTls(
        enabled=protocol == "SSL",
        ca=path("tls_ca"),
        cert=path("tls_cert"),
        key=path("tls_key"),
        check_hostname=_flag(
            name("tls_check_hostname"), raw.get("tls_check_hostname", ("", True))[1]
        ),
    )
    given = [name(f) for f in ("tls_ca", "tls_cert", "tls_key") if f in raw]
    if given and not tls.enabled:
        raise KafkaTlsError(
            f"{', '.join(given)} given but {name('security_protocol')} is not SSL: "
            "set it to SSL to reach the brokers over TLS, or unset the TLS files"
        )
    try:
        check_client_files(
            (name("tls_ca"), name("tls_cert"), name("tls_key")), tls.ca, tls.cert, tls.key
        )
    except ValueError as exc:
        raise KafkaTlsError(str(exc)) from None
    return tls


class WithKafkaTls(BaseSettings):
    """The base of a service's settings class that makes Kafka clients: ``kafka_tls`` is its
    ``KafkaTls`` from ``<its env prefix>KAFKA_*`` else ``APM_KAFKA_*``, resolved and checked
    when the settings are built, so that a bad file stops the service at start."""

    _kafka_tls: KafkaTls = PrivateAttr(default_factory=KafkaTls)

    @model_validator(mode="after")
    def _resolve_kafka_tls(self) -> WithKafkaTls:
        self._kafka_tls = kafka_tls(str(self.model_config.get("env_prefix") or "APM_"))
        return self

    @property
    def kafka_tls(self) -> KafkaTls:
        return self._kafka_tls

    @classmethod
    def env_extra(cls) -> set[str]:
        """The variables ``kafka_tls`` reads, for ``apm.settings.env_names``."""
        prefix = str(cls.model_config.get("env_prefix") or "APM_")
        return {f"{p}KAFKA_{field.upper()}" for p in (prefix, "APM_") for field in FIELDS}
