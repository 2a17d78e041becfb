"""Settings shared by every service: where the project lives and how settings classes are built.

Each service owns one pydantic-settings class with its own env prefix (``APM_INGEST_``,
``APM_AGENT_`` ...). One rule decides every value, as OpenTelemetry resolves its endpoints
(``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, else ``OTEL_EXPORTER_OTLP_ENDPOINT``, else the default):

1. an explicit keyword argument (a command-line flag) wins;
2. else the service's own variable, e.g. ``APM_INGEST_KAFKA_BOOTSTRAP``;
3. else, for an engine address, the shared variable, e.g. ``APM_KAFKA_BOOTSTRAP``;
4. else the default.

The shared variables are the keys of ``SHARED``; a class declares such a field with
``shared(prefix, name)``, which gives it the env choices of steps 2 and 3. Cassandra's shared
variables are the storage tier's own, ``APM_STORAGE_HOSTS``, ``APM_STORAGE_PORT``,
``APM_STORAGE_KEYSPACE`` ...: every process that talks to Cassandra (aggregator, dashboard,
``apm storage``) builds ``storage.settings.StorageSettings``, and none has an override of its
own. ``env_names`` lists the variables a class reads, for checks of deploy files and docs.
``refusals`` turns a settings class's ValidationError into the lines a service prints at a
refused start, each naming the variable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import AliasChoices, Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = [
    "KAFKA_BOOTSTRAP",
    "PROJECT_ROOT",
    "SHARED",
    "SHARED_PREFIX",
    "env_config",
    "env_names",
    "refusals",
    "shared",
]

# The checkout this package runs from (editable install); overridable per service.
PROJECT_ROOT = Path(__file__).resolve().parent.parent

SHARED_PREFIX = "APM_"
KAFKA_BOOTSTRAP = "127.0.0.1:9092"
# The shared settings (APM_<NAME>) and their defaults.
SHARED: dict[str, Any] = {"kafka_bootstrap": KAFKA_BOOTSTRAP}


def env_config(prefix: str) -> SettingsConfigDict:
    """The one settings config every service uses, differing only by env prefix. Fields
    declared with ``shared`` read aliases; ``validate_by_name`` keeps their keyword arguments
    working (and winning over the environment)."""
    return SettingsConfigDict(
        env_prefix=prefix, extra="ignore", validate_default=True, validate_by_name=True
    )


def shared(prefix: str, name: str, **field: Any) -> Any:
    """A field that reads ``<prefix><NAME>``, else ``APM_<NAME>``, else the shared default.
    ``prefix`` must be the class's env prefix (an alias bypasses it; tests check they agree)."""
    if name not in SHARED:
        raise KeyError(f"{name!r} is not a shared setting (apm.settings.SHARED: {list(SHARED)})")
    return Field(
        default=SHARED[name],
        validation_alias=AliasChoices(f"{prefix}{name}".upper(), f"{SHARED_PREFIX}{name}".upper()),
        **field,
    )


def env_names(cls: type[BaseSettings]) -> set[str]:
    """Every environment variable ``cls`` reads (upper case): its prefix and field names, or a
    field's alias choices in place of those, and those it reads beside its fields
    (``env_extra``, e.g. the Kafka TLS variables of apm.kafka_tls.WithKafkaTls)."""
    prefix = str(cls.model_config.get("env_prefix", ""))
    extra = getattr(cls, "env_extra", None)
    names = set(extra()) if callable(extra) else set()
    for name, info in cls.model_fields.items():
        alias = info.validation_alias
        if isinstance(alias, AliasChoices):
            names |= {c for c in alias.choices if isinstance(c, str)}
        elif isinstance(alias, str):
            names.add(alias)
        else:
            names.add(prefix + name)
    return {n.upper() for n in names}


def refusals(prog: str, prefix: str, exc: ValidationError) -> str:
    """One line per refused setting, ``prog: PREFIX_NAME: why``; a check over several settings
    (a model validator) names them in its own message."""
    lines = []
    for error in exc.errors():
        where = "".join(f"{prefix}{str(part).upper()}: " for part in error["loc"][:1])
        lines.append(f"{prog}: {where}{error['msg'].removeprefix('Value error, ')}")
    return "\n".join(lines)
