"""The contract as OpenAPI: the batch's JSON schema and the answers. Documentation only; the
hot path parses with orjson and checks with ingest.validate, which enforce the same rules."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from apm.model import METRIC_NAME_RE, SERVER_NAME_RE

__all__ = ["ERROR_RESPONSES", "REQUEST_BODY", "Accepted", "ErrorBody"]


class Accepted(BaseModel):
    accepted: int = Field(description="samples accepted (all of the batch's)")
    snapshots: int = Field(description="snapshots in the batch")


class ErrorBody(BaseModel):
    error: str = Field(
        description="a stable code: malformed_json, malformed_gzip, "
        "unauthorized, too_large, unsupported_media_type, validation, "
        "unavailable, not_found ..."
    )
    detail: str = Field(description="what was wrong, for a human")
    at: str | None = Field(
        description="path of the first bad field, e.g. "
        'snapshots[3].metrics["cpu.util"], or header:<name>, or body'
    )


_SNAPSHOT: dict[str, Any] = {
    "type": "object",
    "description": "one server's metrics at one second",
    "required": ["server", "ts", "metrics"],
    "additionalProperties": False,
    "properties": {
        "server": {"type": "string", "pattern": f"^{SERVER_NAME_RE.pattern}$"},
        "ts": {
            "type": "number",
            "description": "epoch seconds; at most 5 minutes ahead, "
            "not older than the topics' retention",
        },
        "metrics": {
            "type": "object",
            "description": "metric name -> finite number",
            "propertyNames": {"pattern": f"^{METRIC_NAME_RE.pattern}$"},
            "additionalProperties": {"type": "number"},
        },
    },
}

REQUEST_BODY: dict[str, Any] = {
    "required": True,
    "description": "A batch of snapshots, JSON, optionally with Content-Encoding: gzip. "
    "Limits: 5 MiB on the wire, 50 MiB decompressed, a configured number of "
    "samples. The batch is accepted or rejected whole.",
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "required": ["snapshots"],
                "additionalProperties": False,
                "properties": {"snapshots": {"type": "array", "minItems": 1, "items": _SNAPSHOT}},
                "example": {
                    "snapshots": [
                        {
                            "server": "web-042",
                            "ts": 1763800000.0,
                            "metrics": {"cpu.util": 12.5, "rpc.latency.max": 0.084},
                        }
                    ]
                },
            }
        }
    },
}

_ERR = {"model": ErrorBody}
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {**_ERR, "description": "malformed JSON or gzip"},
    401: {**_ERR, "description": "missing or wrong API key"},
    413: {**_ERR, "description": "over the size limits (wire or decompressed)"},
    415: {**_ERR, "description": "unsupported Content-Type or Content-Encoding"},
    422: {**_ERR, "description": "a bad name, value or ts, an empty batch, or too many samples"},
    503: {
        **_ERR,
        "description": "Kafka unavailable or the producer's buffer is full; "
        "retry after the Retry-After header's seconds",
        "headers": {"Retry-After": {"schema": {"type": "integer"}}},
    },
}
