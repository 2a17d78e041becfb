"""Load generator settings (env prefix ``APM_LOADGEN_``) and the parsers for its CLI values."""

from __future__ import annotations

import math
import re
import time
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, field_validator

from apm.kafka_tls import WithKafkaTls
from apm.model import TOPIC_PARTITIONS
from apm.settings import env_config, shared
from apm.tls import check_ca, check_pem

__all__ = ["INGEST_PATH", "LoadgenSettings", "metrics_url", "parse_duration", "parse_start"]

INGEST_PATH = "/v1/metrics"
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd]?)")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86_400}


def parse_duration(text: str) -> float:
    """``90``, ``30s``, ``5m``, ``1h`` -> seconds."""
    m = _DURATION.fullmatch(text.strip().lower())
    if not m or float(m.group(1)) <= 0:
        raise ValueError(f"expected a positive duration such as 30s, 5m or 1h, got {text!r}")
    return float(m.group(1)) * _UNITS[m.group(2)]


def parse_start(text: str, now: float | None = None) -> float:
    """A backfill start: epoch seconds (``1763800000``), ISO 8601 (``2025-11-22T08:00:00Z``)
    or relative to now (``-10m``). Returns whole epoch seconds."""
    raw = text.strip()
    now = time.time() if now is None else now
    if raw.startswith("-"):
        return float(math.floor(now - parse_duration(raw[1:])))
    try:
        return float(math.floor(float(raw)))
    except ValueError:
        pass
    try:
        stamp = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"expected epoch seconds, ISO 8601 or -DURATION (e.g. -10m), got {text!r}"
        ) from None
    if stamp.tzinfo is None:
        raise ValueError(f"an ISO start needs a time zone (e.g. Z), got {text!r}")
    return float(math.floor(stamp.timestamp()))


def metrics_url(target: str) -> str:
    """The ingest endpoint for ``target``: a base URL gets ``/v1/metrics`` appended."""
    parts = urlsplit(target)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(
            f"target must be an http(s) URL such as http://127.0.0.1:8000, got {target!r}"
        )
    path = parts.path if parts.path not in ("", "/") else INGEST_PATH
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


class LoadgenSettings(WithKafkaTls):
    """What to simulate and where to send it. CLI flags override these, which override env."""

    model_config = env_config("APM_LOADGEN_")

    servers: int = Field(default=200, ge=1, le=1_000_000)
    metrics: int = Field(default=20, ge=1, le=10_000)
    duration_s: float = Field(default=60.0, gt=0)
    seed: int = 42
    metric_prefix: str = ""  # prepended to every metric name: isolated topics for a test
    silent_fraction: float = Field(default=0.02, ge=0.0, le=1.0)
    # None: real time, one snapshot per server per second, stamped with the wall clock.
    # A number: backfill from that epoch second as fast as the target accepts.
    start: float | None = None
    target: str = "http://127.0.0.1:8080"  # the ingest's default port
    api_key: str = ""
    # The CA bundle an https:// target's certificate is verified against, *instead of* the
    # system store (apm.tls.client_context, as the agent's tls_ca); None: the default roots.
    tls_ca: Path | None = None
    servers_per_request: int = Field(default=100, ge=1)
    concurrency: int = Field(default=16, ge=1, le=1024)
    gzip_level: int = Field(default=1, ge=0, le=9)  # 0 sends plain JSON
    # 0: every second's values are generated. N > 0: N seconds are generated once and then
    # replayed in a cycle with fresh timestamps, and the HTTP sink reuses their encoded request
    # bodies (only the timestamp is substituted): a cheap load for benchmarks. The truth for
    # --expect follows the values actually sent.
    replay_seconds: int = Field(default=0, ge=0, le=3600)
    request_timeout_s: float = Field(default=30.0, gt=0)
    # Per request, across 503s and refused connections.
    retry_deadline_s: float = Field(default=120.0, gt=0)
    # Each server's role, dc and env tags (loadgen.tags) in its snapshots; off: the bodies of
    # before tags (a benchmark's baseline). The direct Kafka sink never writes tags.
    tags: bool = True
    direct_kafka: bool = False
    # APM_LOADGEN_KAFKA_BOOTSTRAP, else the shared APM_KAFKA_BOOTSTRAP (apm.settings).
    kafka_bootstrap: str = shared("APM_LOADGEN_", "kafka_bootstrap")
    topic_partitions: int = Field(default=TOPIC_PARTITIONS, ge=1)  # sized by volume (apm.model)
    topic_replication: int = Field(default=1, ge=1)
    record_max_bytes: int = Field(default=512 * 1024, ge=1024)
    progress_interval_s: float = Field(default=1.0, gt=0)

    @field_validator("target")
    @classmethod
    def _target_is_url(cls, value: str) -> str:
        metrics_url(value)
        return value

    @field_validator("tls_ca")
    @classmethod
    def _ca_is_usable(cls, value: Path | None) -> Path | None:
        if value is not None:
            try:
                check_pem(value, "cert")
            except ValueError as exc:
                raise ValueError(f"tls_ca: {exc}") from None
            check_ca("tls_ca", value)
        return value

    @property
    def url(self) -> str:
        return metrics_url(self.target)

    @property
    def ticks(self) -> int:
        """Seconds of fleet time to generate."""
        return max(1, math.ceil(self.duration_s))
