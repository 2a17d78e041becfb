"""The read API's limits (env prefix ``APM_DASHBOARD_PROM_``); keyword arguments win over env."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings

from apm.settings import env_config
from dashboard.promapi.budget import MAX_SAMPLES

__all__ = ["PromApiSettings"]


class PromApiSettings(BaseSettings):
    model_config = env_config("APM_DASHBOARD_PROM_")

    # Series one /series call (or ALERTS selector) may answer; past it: 422 execution, before
    # any result is read. Queries are bounded by max_samples instead.
    max_series: int = Field(default=1000, ge=1)
    # Samples one query may load, windows read x the series each feeds plus series x steps of
    # each selector (Prometheus' query.max-samples): :mod:`.budget`, where the default is
    # measured (about 170 B a sample held, so about 255 MB).
    max_samples: int = Field(default=MAX_SAMPLES, ge=1)
    # Points one query_range may answer, series x steps, checked before reading: bounds the
    # memory and the JSON of one answer (Prometheus bounds each series at 11,000 steps).
    max_points: int = Field(default=500_000, ge=1)
    # The step of a subquery that names none (`max_over_time(x[1h:])`): Prometheus' global
    # evaluation_interval, whose default this is.
    subquery_step_seconds: float = Field(default=60.0, ge=0.001)
    # How long one evaluation may take (a smaller `timeout` parameter wins): past it, 503
    # errorType "timeout".
    timeout_seconds: float = Field(default=30.0, gt=0)
    # A Basic credential that passed the password check is remembered (as an HMAC digest)
    # this long, so Grafana's requests do not each run scrypt; 0 checks every request.
    basic_cache_seconds: float = Field(default=300.0, ge=0)
