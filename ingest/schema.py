"""The contract as OpenAPI: the batch's JSON schema and the answers. Documentation only; the
hot path parses with orjson and checks with ingest.validate, which enforce the same rules."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from apm.model import METRIC_NAME_RE, SERVER_NAME_RE
from apm.tags import MAX_TAG_VALUE_LEN, MAX_TAGS, TAG_KEY_RE

__all__ = ["ERROR_RESPONSES", "REQUEST_BODY", "Accepted", "ErrorBody", "RejectedSnapshot"]


class RejectedSnapshot(BaseModel):
    index: int = Field(description="the snapshot's index in the request's 'snapshots'")
    error: str = Field(description="validation")
    detail: str = Field(description="what was wrong with it, for a human")
    at: str = Field(description="its first bad field, e.g. snapshots[3].ts")


class Accepted(BaseModel):
    accepted: int = Field(description="samples accepted and acknowledged by Kafka")
    snapshots: int = Field(description="snapshots accepted")
    rejected_snapshots: int | None = Field(
        default=None,
        description="only when some snapshots were bad: how many were left out "
        "(a retry would not help them); the others are accepted",
    )
    rejected_samples: int | None = Field(default=None, description="their samples")
    rejected: list[RejectedSnapshot] | None = Field(
        default=None, description="the first max_listed_rejections (100) of them, by index"
    )


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
        "tags": {
            "type": "object",
            "description": "the server's host tags (apm.tags); a bad tag refuses the snapshot. "
            "Left out: the server's tags are unchanged; {}: it has none",
            "maxProperties": MAX_TAGS,
            "propertyNames": {"pattern": f"^{TAG_KEY_RE.pattern}$", "not": {"const": "server"}},
            "additionalProperties": {"type": "string", "maxLength": MAX_TAG_VALUE_LEN},
        },
    },
}

REQUEST_BODY: dict[str, Any] = {
    "required": True,
    "description": "A batch of snapshots, JSON, optionally with Content-Encoding: gzip. "
    "Limits: 5 MiB on the wire, 16 MiB decompressed, 1 Mi JSON values, 200,000 samples "
    "(all settings). Each snapshot is judged alone: bad ones are left out and listed in "
    "the 202; a batch with no good snapshot is a 422.",
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
    408: {**_ERR, "description": "the body did not arrive within answer_timeout_s"},
    413: {**_ERR, "description": "over the size limits (wire, decompressed, JSON values)"},
    415: {**_ERR, "description": "unsupported Content-Type or Content-Encoding"},
    422: {
        **_ERR,
        "description": "no good snapshot (the first bad field is named), more than "
        "max_rejected_snapshots bad ones, an empty batch, or too many samples",
    },
    503: {
        **_ERR,
        "description": "Kafka unavailable, the producer's buffer full, max_inflight "
        "requests at work, or no acknowledgement within answer_timeout_s (4 s); "
        "retry after the Retry-After header's seconds",
        "headers": {"Retry-After": {"schema": {"type": "integer"}}},
    },
}
