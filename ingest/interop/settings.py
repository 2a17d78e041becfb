"""InteropSettings: the OTLP and remote_write intake's knobs, from ``APM_INGEST_*`` (the
ingest's prefix; the request limits they share, such as ``max_body_bytes``, are
IngestSettings')."""

from __future__ import annotations

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings

from apm.labels import LABELS_KEEP
from apm.settings import env_config
from ingest.interop.tags import OTLP_IDENTIFYING, OTLP_RESOURCE_TAGS, mapping_error

__all__ = ["InteropSettings"]


class InteropSettings(BaseSettings):
    model_config = env_config("APM_INGEST_")

    # Prometheus remote_write (POST /api/v1/write). The server is the value of
    # remote_write_server_label, else remote_write_default_server. Labels in
    # remote_write_name_labels ("*": all) and not in remote_write_ignore_labels become name
    # parts (__name__ and the server label never do).
    remote_write_server_label: str = "instance"
    remote_write_default_server: str = "prometheus"
    remote_write_name_labels: list[str] = Field(default_factory=lambda: ["*"])
    remote_write_ignore_labels: list[str] = Field(default_factory=lambda: ["job"])
    remote_write_max_series: int = Field(default=50_000, ge=1)
    remote_write_max_labels: int = Field(default=64, ge=1)
    # Labels that are the server's tags (label -> tag key; docs/interop.md, Tags): job, which
    # is no name part, names what scraped the server.
    remote_write_tag_labels: dict[str, str] = Field(default_factory=lambda: {"job": "job"})

    # OTLP/HTTP (POST /otlp/v1/metrics). The server is the resource's host.name, else
    # service.instance.id, else otlp_default_server. Data point attributes in
    # otlp_name_attributes ("*": all) and not in otlp_ignore_attributes become name parts.
    otlp_default_server: str = "otlp"
    # The server is "<host.name>.<service.instance.id>" when the resource has both: two
    # processes of one service on one host kept apart, at the price of a new server at every
    # process start where the SDK makes the instance id a random UUID (Python's does).
    otlp_server_with_instance: bool = False
    otlp_name_attributes: list[str] = Field(default_factory=lambda: ["*"])
    otlp_ignore_attributes: list[str] = Field(default_factory=list)
    # Resource attributes that are the server's tags (attribute -> tag key; docs/interop.md,
    # Tags): service.name -> service, deployment.environment -> env, and a few more of
    # OpenTelemetry's conventions. {} publishes none.
    otlp_resource_tags: dict[str, str] = Field(default_factory=lambda: dict(OTLP_RESOURCE_TAGS))
    otlp_max_points: int = Field(default=50_000, ge=1)
    otlp_max_attributes: int = Field(default=64, ge=1)
    # The previous point of each cumulative series (rates), per ingest process, LRU.
    otlp_rate_series_max: int = Field(default=100_000, ge=1)
    # ... and its bytes (~530 per series: the key is a digest, whatever the attributes' length),
    # and the series of one metric (its new series past it are dropped, counted, warned of).
    otlp_rate_state_max_bytes: int = Field(default=64 * 1024 * 1024, ge=1)
    otlp_series_per_metric_max: int = Field(default=10_000, ge=1)
    # Each protocol's cache of names (apm.labels.Namer): bytes, emptied when reached.
    names_cache_max_bytes: int = Field(default=16 * 1024 * 1024, ge=1)

    # Both protobuf bodies are counted before they are parsed (ingest.interop.wirecount): at
    # most this many repeated messages of all kinds together (series, labels, samples;
    # resource_metrics, scope_metrics, metrics, points, attributes), ~50 bytes each parsed.
    protobuf_max_elements: int = Field(default=1_000_000, ge=1)
    # A body of at most this many (inflated) bytes is parsed first and counted after, with
    # len() on the message (ingest.interop.parsedcount): n bytes hold at most n/2 elements,
    # parsed into at most ~32 n bytes, so the count can wait and costs far less. 0: always
    # count on the wire first.
    protobuf_parse_first_max_bytes: int = Field(default=1024 * 1024, ge=0)

    # The cardinality guard of DogStatsD tags (apm.labels), for labels and attributes.
    drop_unbounded_labels: bool = True
    labels_keep: list[str] = Field(default_factory=lambda: list(LABELS_KEEP))

    @model_validator(mode="after")
    def _tag_mappings(self) -> InteropSettings:
        otlp = mapping_error(self.otlp_resource_tags, OTLP_IDENTIFYING)
        if otlp is not None:
            raise ValueError(f"otlp_resource_tags: {otlp}")
        rw = mapping_error(self.remote_write_tag_labels, {self.remote_write_server_label})
        if rw is not None:
            raise ValueError(f"remote_write_tag_labels: {rw}")
        return self
