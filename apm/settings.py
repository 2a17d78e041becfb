"""Settings shared by every service: where the project lives and how settings classes are built.

Each service owns one pydantic-settings class with its own env prefix (``APM_INGEST_``,
``APM_AGENT_`` ...). Keyword arguments given to the class win over the environment, which wins
over the defaults, as in OpenTelemetry's readers.
"""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["PROJECT_ROOT", "ServiceSettings", "env_config"]

# The checkout this package runs from (editable install); overridable per service.
PROJECT_ROOT = Path(__file__).resolve().parent.parent


def env_config(prefix: str) -> SettingsConfigDict:
    """The one settings config every service uses, differing only by env prefix."""
    return SettingsConfigDict(env_prefix=prefix, extra="ignore", validate_default=True)


class ServiceSettings(BaseSettings):
    """Addresses of the engines, common to the services that talk to them."""

    model_config = env_config("APM_")

    kafka_bootstrap: str = "127.0.0.1:9092"
    cassandra_hosts: str = "127.0.0.1"
    cassandra_port: int = 9042
    cassandra_keyspace: str = "apm"
