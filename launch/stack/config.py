"""Where the local stack lives and which ports it uses (env prefix ``APM_STACK_``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings

from apm.settings import PROJECT_ROOT, env_config

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
