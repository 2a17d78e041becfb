"""Settings of the storage tier: where Cassandra is, which keyspace, how long results live."""

from __future__ import annotations

import re

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings

from apm.settings import env_config

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
    replication: str = DEFAULT_REPLICATION
    connect_timeout_s: float = Field(default=10.0, gt=0)
    request_timeout_s: float = Field(default=20.0, gt=0)
    # Cassandra 4.0+ speaks v5; saying so skips the driver's noisy downgrade negotiation.
    protocol_version: int = Field(default=5, ge=3, le=6)
    concurrency: int = Field(default=64, ge=1, le=1024)  # in-flight requests of bulk writes
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

    @property
    def host_list(self) -> list[str]:
        return [h.strip() for h in self.hosts.split(",") if h.strip()]
