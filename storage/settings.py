"""Settings of the storage tier: where Cassandra is, how to reach it (TLS), which keyspace, how
long results live."""

from __future__ import annotations

import re
import ssl
from pathlib import Path

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings

from apm.settings import env_config
from apm.tls import check_client_files, client_context

__all__ = ["DEFAULT_REPLICATION", "StorageSettings", "keyspace_error"]

DEFAULT_REPLICATION = "{'class': 'SimpleStrategy', 'replication_factor': 1}"
# CQL unquoted identifiers: a letter, then letters, digits or underscores, at most 48 long.
_KEYSPACE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,47}")
# The replication map is interpolated into DDL (DDL cannot be prepared): a plain map literal only.
_ENTRY = r"\s*'[^';]+'\s*:\s*'?[^';{}]+'?\s*"
_REPLICATION = re.compile(r"\{" + _ENTRY + r"(," + _ENTRY + r")*\}")


def keyspace_error(name: str) -> str | None:
    """Why ``name`` is not a usable keyspace name, or None."""
    if not isinstance(name, str) or not _KEYSPACE.fullmatch(name):
        return (
            f"keyspace {name!r} must start with a letter and hold only letters, digits and "
            "underscores (at most 48)"
        )
    return None


class StorageSettings(BaseSettings):
    """``APM_STORAGE_*``: keyword arguments win over the environment, which wins over these.
    Every process that talks to Cassandra (aggregator, dashboard, ``apm storage``) builds this
    class, so these are the shared Cassandra variables; no service has its own."""

    model_config = env_config("APM_STORAGE_")

    hosts: str = "127.0.0.1"  # comma-separated contact points
    port: int = Field(default=9042, ge=1, le=65535)
    keyspace: str = "apm"
    retention_days: int = Field(default=30, ge=1, le=3650)
    # The rollup tiers' retentions (docs/storage.md, "Rollup tiers"): each window's partial
    # only has to outlive the allowed lateness and the rollup's lag.
    partials_retention_hours: int = Field(default=48, ge=1, le=24 * 90)
    tier_1m_retention_days: int = Field(default=90, ge=1, le=3650)
    tier_1h_retention_days: int = Field(default=730, ge=1, le=36500)
    replication: str = DEFAULT_REPLICATION
    connect_timeout_s: float = Field(default=10.0, gt=0)
    request_timeout_s: float = Field(default=20.0, gt=0)
    # Cassandra 4.0+ speaks v5; saying so skips the driver's noisy downgrade negotiation.
    protocol_version: int = Field(default=5, ge=3, le=6)
    concurrency: int = Field(default=64, ge=1, le=1024)  # in-flight requests of bulk writes
    # Client TLS (docs/security.md, Kafka and Cassandra TLS): with tls on, every connection
    # verifies the node's certificate up to tls_ca (none: the system's roots) and, unless
    # tls_check_hostname is off, that it names the contact point; tls_cert and tls_key
    # present a client certificate to nodes that require one.
    tls: bool = False
    tls_ca: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_check_hostname: bool = True
    # How long the audit log keeps a change (a TTL on each row; storage/audit.py).
    audit_retention_days: int = Field(default=400, ge=1, le=3650)

    @field_validator("keyspace")
    @classmethod
    def _keyspace(cls, value: str) -> str:
        if (err := keyspace_error(value)) is not None:
            raise ValueError(err)
        return value

    @field_validator("replication")
    @classmethod
    def _replication(cls, value: str) -> str:
        if not _REPLICATION.fullmatch(value.strip()):
            raise ValueError(
                f"replication must be a CQL map such as {DEFAULT_REPLICATION}, got {value!r}"
            )
        return value.strip()

    @field_validator("hosts")
    @classmethod
    def _hosts(cls, value: str) -> str:
        if not [h for h in value.split(",") if h.strip()]:
            raise ValueError("hosts must name at least one Cassandra contact point")
        return value

    @model_validator(mode="after")
    def _tls_files(self) -> StorageSettings:
        names = ("APM_STORAGE_TLS_CA", "APM_STORAGE_TLS_CERT", "APM_STORAGE_TLS_KEY")
        files = (self.tls_ca, self.tls_cert, self.tls_key)
        given = [n for n, p in zip(names, files, strict=True) if p is not None]
        if given and not self.tls:
            raise ValueError(
                f"{', '.join(given)} given but APM_STORAGE_TLS is off: set APM_STORAGE_TLS=true "
                "to reach Cassandra over TLS, or unset the TLS files"
            )
        check_client_files(names, self.tls_ca, self.tls_cert, self.tls_key)
        return self

    def ssl_context(self) -> ssl.SSLContext | None:
        """The driver's TLS context, None for plain connections."""
        if not self.tls:
            return None
        return client_context(self.tls_ca, self.tls_cert, self.tls_key, self.tls_check_hostname)

    def jvm_tls_conf(self) -> dict[str, str]:
        """The same TLS for the executors' Java writer (io.apm.aggregator.store.PemTls, which
        reads the PEM files itself): entries of its session conf, none for plain."""
        if not self.tls:
            return {}
        files = {"tls_ca": self.tls_ca, "tls_cert": self.tls_cert, "tls_key": self.tls_key}
        return {
            "tls": "true",
            "tls_check_hostname": "true" if self.tls_check_hostname else "false",
            **{name: str(path) for name, path in files.items() if path is not None},
        }

    @property
    def tier_ttl_s(self) -> dict[str, int]:
        """The rollup tiers' tables -> their TTL in seconds (storage.schema.migrate)."""
        from storage.tier_tables import tier_ttls

        return tier_ttls(
            self.partials_retention_hours, self.tier_1m_retention_days, self.tier_1h_retention_days
        )

    @property
    def host_list(self) -> list[str]:
        return [h.strip() for h in self.hosts.split(",") if h.strip()]
