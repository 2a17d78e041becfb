"""The agent's one settings class: defaults, then a TOML file, then ``APM_AGENT_*`` env vars,
then explicit arguments (each wins over the one before it). Bad values give a ConfigError that
names the field, never a traceback."""

from __future__ import annotations

import re
import socket
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

from agent.cardinality import DISK_EXCLUDE_FSTYPES, DISK_EXCLUDE_MOUNTS, NET_EXCLUDE
from agent.configfiles import ConfigFileError, ConfigFiles, read_config
from agent.tags import host_tags_error
from agent.tls import TlsFiles, check_files
from apm.labels import TAGS_KEEP
from apm.model import server_name_error
from apm.settings import PROJECT_ROOT, env_config

__all__ = [
    "DEFAULT_COLLECTORS",
    "INGEST_ANSWER_DEADLINE_S",
    "PUSH_TIMEOUT_S",
    "AgentSettings",
    "ConfigError",
    "default_server",
    "load_files",
    "load_settings",
]

# The ingest's contract (issue 14, item 7): it answers every POST within this many seconds,
# with 503 and Retry-After when Kafka is slow or it sheds load. The agent must wait longer than
# that, or it gives up before the answer, never sees Retry-After, and resends a batch that is
# still being published (a duplicate). 10 s leaves the deadline 2.5 times over for the upload
# of a 1 MiB batch on a slow link, a TLS handshake and queueing in a proxy.
INGEST_ANSWER_DEADLINE_S = 4.0
PUSH_TIMEOUT_S = 10.0

DEFAULT_COLLECTORS = ["cpu", "load", "memory", "disk", "network", "system", "agent"]
_TLS_KEYS = ("tls_ca", "tls_cert", "tls_key", "tls_server_name", "insecure_skip_verify")
# The TOML document being loaded; a context variable so that concurrent loads never mix.
_TOML: ContextVar[dict[str, Any] | None] = ContextVar("apm_agent_toml", default=None)


class ConfigError(ValueError):
    """A config file or value the agent cannot use; the message says which and why."""


def default_server() -> str:
    """The host name, reduced to the characters the naming rule allows."""
    name = re.sub(r"[^A-Za-z0-9_.\-]", "-", socket.gethostname().split(".")[0]) or "host"
    return name if name[0].isalnum() else "h" + name


class _TomlSource(PydanticBaseSettingsSource):
    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return (_TOML.get() or {}).get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(_TOML.get() or {})


class AgentSettings(BaseSettings):
    model_config = env_config("APM_AGENT_")

    server: str = Field(default_factory=default_server, description="name sent with every snapshot")
    ingest_url: str = "http://127.0.0.1:8080/v1/metrics"
    api_key: str = ""
    # Client TLS for an https:// ingest_url (agent.tls, docs/security.md): tls_ca replaces the
    # system roots; tls_cert with tls_key is the client certificate for an mTLS ingest.
    tls_ca: Path | None = Field(None, description="PEM CA bundle trusted instead of the system's")
    tls_cert: Path | None = Field(None, description="PEM client certificate, with tls_key")
    tls_key: Path | None = Field(None, description="PEM key of tls_cert")
    insecure_skip_verify: bool = Field(
        False, description="do not verify the ingest's certificate (warned at every start)"
    )
    tls_server_name: str = Field(
        "", description="name the ingest's certificate is checked against; default: URL's host"
    )
    interval_s: float = Field(1.0, gt=0, le=60)
    collectors: list[str] = Field(default_factory=lambda: list(DEFAULT_COLLECTORS))
    spool_dir: Path = PROJECT_ROOT / "var" / "agent" / "spool"
    spool_max_bytes: int = Field(100 * 1024 * 1024, ge=64 * 1024)
    spool_segment_bytes: int = Field(1024 * 1024, ge=4096)
    backoff_initial_s: float = Field(0.010, gt=0)
    backoff_cap_s: float = Field(30.0, gt=0)
    backoff_jitter: float = Field(0.2, ge=0, lt=1)
    push_timeout_s: float = Field(
        PUSH_TIMEOUT_S, gt=0, description="must exceed the ingest's answer deadline (4 s)"
    )
    retry_after_cap_s: float = Field(
        120.0, ge=0, le=3600, description="longest Retry-After honoured; longer hints are cut"
    )
    batch_max_snapshots: int = Field(300, ge=1)
    batch_max_bytes: int = Field(1024 * 1024, ge=1024)
    drain_rate: float = Field(200.0, gt=0, description="backlog snapshots sent per second at most")
    statsd_enabled: bool = True
    statsd_host: str = "127.0.0.1"
    statsd_port: int = Field(8125, ge=0, le=65535)
    statsd_tags: Literal["name", "drop"] = "name"
    statsd_drop_unbounded_tags: bool = Field(
        True, description="drop tags that look like ids, uuids, hex, numbers, tokens"
    )
    statsd_tags_keep: list[str] = Field(
        default_factory=lambda: list(TAGS_KEEP), description="tag keys never dropped"
    )
    max_metric_names: int = Field(
        10_000, ge=0, description="distinct metric names per agent run; 0 = no limit"
    )
    net_exclude: list[str] = Field(
        default_factory=lambda: list(NET_EXCLUDE), description="interface globs skipped"
    )
    disk_exclude_fstypes: list[str] = Field(default_factory=lambda: list(DISK_EXCLUDE_FSTYPES))
    disk_exclude_mounts: list[str] = Field(
        default_factory=lambda: list(DISK_EXCLUDE_MOUNTS), description="mount point globs skipped"
    )
    statsd_prefix: str = ""
    statsd_timer_stats: list[Literal["count", "avg", "p99"]] = Field(default_factory=list)
    statsd_idle_ttl_s: float = Field(60.0, ge=0)
    metrics_host: str = "127.0.0.1"
    metrics_port: int = Field(9101, ge=0, le=65535, description="Prometheus /metrics; 0 = off")
    tags: dict[str, str] = Field(
        default_factory=dict, description="host tags sent with every snapshot (agent.tags)"
    )
    send_tags: bool = Field(True, description="false: no tags (an ingest from before tags)")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, env_settings, _TomlSource(settings_cls)

    @field_validator("server")
    @classmethod
    def _server(cls, value: str) -> str:
        if (error := server_name_error(value)) is not None:
            raise ValueError(error)
        return value

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, value: object) -> object:
        # Before pydantic's coercion, so that a number is refused rather than made a string.
        if (error := host_tags_error(value)) is not None:
            raise ValueError(error)
        return value

    @field_validator("ingest_url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not re.match(r"https?://[^/\s]+", value):
            raise ValueError("must be an http:// or https:// URL with a host")
        return value

    @field_validator("tls_server_name")
    @classmethod
    def _server_name(cls, value: str) -> str:
        if value and not re.fullmatch(r"[A-Za-z0-9.\-:\[\]]{1,253}", value):
            raise ValueError("must be a host name or an address")
        return value

    @model_validator(mode="after")
    def _tls(self) -> AgentSettings:
        given = [name for name in _TLS_KEYS if getattr(self, name)]
        if given and not self.ingest_url.startswith("https://"):
            raise ValueError(
                f"{', '.join(given)} given but ingest_url is not https:// "
                f"({self.ingest_url}): TLS settings are for an https:// ingest"
            )
        check_files(self.tls_files)
        return self

    @property
    def tls_files(self) -> TlsFiles:
        return TlsFiles(
            self.tls_ca,
            self.tls_cert,
            self.tls_key,
            self.tls_server_name,
            self.insecure_skip_verify,
        )

    @field_validator("collectors")
    @classmethod
    def _collectors(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError(f"lists a collector twice: {value}")
        return value

    @field_validator("statsd_prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        if value and not re.fullmatch(r"[A-Za-z][A-Za-z0-9_.\-]*", value):
            raise ValueError("must start with a letter and hold only letters, digits, . _ -")
        return value


def _describe(exc: ValidationError, files: ConfigFiles | None) -> str:
    parts = []
    source = "env"
    for err in exc.errors():
        if not err["loc"]:
            # A check across fields (the TLS settings): its input is the whole document, the
            # api_key with it, so it is never echoed; the message names the keys.
            keys = [k for k in _TLS_KEYS if files is not None and k in files.origin]
            if keys and files is not None:
                source = str(files.origin[keys[0]])
            parts.append(str(err["msg"]).removeprefix("Value error, "))
            continue
        where = ".".join(str(p) for p in err["loc"])
        key = str(err["loc"][0])
        if files is not None and key in files.origin:
            source = str(files.origin[key])
        parts.append(f"{where}: {err['msg']} (got {err.get('input')!r})")
    return f"invalid agent config ({source}): " + "; ".join(parts)


def load_settings(config: Path | None = None, **overrides: Any) -> AgentSettings:
    """Settings from ``config`` (TOML) and its ``agent.d/*.toml`` fragments if given (see
    agent.configfiles), overridden by env vars, then ``overrides``."""
    files = load_files(config) if config is not None else None
    token = _TOML.set(files.document if files is not None else {})
    try:
        return AgentSettings(**overrides)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, files)) from None
    finally:
        _TOML.reset(token)


def load_files(config: Path) -> ConfigFiles:
    """The merged config files, or a ConfigError naming the file and the key."""
    try:
        return read_config(Path(config), AgentSettings.model_fields)
    except ConfigFileError as exc:
        raise ConfigError(f"agent config {exc}") from None
