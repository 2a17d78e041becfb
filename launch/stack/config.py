"""Where the local stack lives and which ports it uses (env prefix ``APM_STACK_``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings

from apm.settings import PROJECT_ROOT, env_config
from apm.tls import check_ca, check_named, check_server_files

__all__ = ["StackSettings"]


class StackSettings(BaseSettings):
    model_config = env_config("APM_STACK_")

    root: Path = PROJECT_ROOT
    var_dir: Path | None = Field(default=None, description="data, logs, pid files (git-ignored)")
    jar_cache: Path | None = Field(default=None, description="Maven-resolved jars (git-ignored)")
    host: str = "127.0.0.1"
    kafka_port: int = 9092
    kafka_controller_port: int = 9093
    cassandra_port: int = 9042
    cassandra_storage_port: int = 7000
    cassandra_jmx_port: int = 7199
    # Heaps are capped so Kafka, Cassandra and a Spark driver fit on 2 cores / 24 GiB with room.
    kafka_heap: str = "768m"
    cassandra_heap: str = "1536m"
    java: str = "java"
    mvn: str = "mvn"
    start_timeout_s: float = 180.0
    stop_timeout_s: float = 60.0
    # TLS for the clients (docs/security.md, Kafka and Cassandra TLS): given a PEM certificate
    # and key, Kafka's broker listener speaks only SSL and Cassandra's native port only TLS;
    # tls_ca is what the stack's own health checks trust (none: the system's roots). Off by
    # default: `make run` and CI run plain on loopback.
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_ca: Path | None = None

    @model_validator(mode="after")
    def _tls_files(self) -> StackSettings:
        if self.tls_ca is not None and self.tls_cert is None:
            raise ValueError(
                "APM_STACK_TLS_CA is for a stack started with TLS: give APM_STACK_TLS_CERT "
                "and APM_STACK_TLS_KEY too"
            )
        check_server_files("APM_STACK_", self.tls_cert, self.tls_key, None)
        if self.tls_ca is not None:
            check_named((("APM_STACK_TLS_CA", self.tls_ca, "cert"),))
            check_ca("APM_STACK_TLS_CA", self.tls_ca)
        return self

    @property
    def tls(self) -> bool:
        return self.tls_cert is not None

    @property
    def var(self) -> Path:
        return self.var_dir or self.root / "var"

    @property
    def jars(self) -> Path:
        return self.jar_cache or self.root / ".cache" / "jars"

    @property
    def deploy(self) -> Path:
        return self.root / "deploy" / "local"

    @property
    def kafka_bootstrap(self) -> str:
        return f"{self.host}:{self.kafka_port}"
