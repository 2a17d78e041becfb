"""OTLP/HTTP metrics, the wire side: media types, gzip, the protobuf and JSON encodings of
``ExportMetricsServiceRequest`` (opentelemetry-proto), and the answers: a full or partial
success (``ExportMetricsServiceResponse.partial_success``) or a ``google.rpc.Status``, in the
request's own encoding, as the OTLP specification's "OTLP/HTTP Response" section says."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from starlette.responses import Response

from ingest.body import check_media, count_values, gunzip
from ingest.errors import ApiError, printable
from ingest.interop.parsedcount import OTLP_LEVELS, parse_bounded
from ingest.interop.points import bad_request
from ingest.interop.prompb import Status
from ingest.interop.wirecount import OTLP, Deadline

__all__ = ["JSON", "PROTOBUF", "check_headers", "decode_export", "error_answer", "success_answer"]

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
# google.rpc.Code of each HTTP status the intake answers with.
_GRPC_CODE = {400: 3, 401: 16, 408: 4, 413: 8, 415: 3, 429: 8, 500: 13, 503: 14}


def check_headers(content_type: str | None, content_encoding: str | None) -> tuple[str, bool]:
    """The request's media type (protobuf or JSON) and whether it is gzipped; 415 else."""
    gzipped = check_media(content_type, content_encoding, (PROTOBUF, JSON))
    return (content_type or "").split(";")[0].strip().lower(), gzipped


def decode_export(
    raw: bytes,
    media: str,
    gzipped: bool,
    max_inflated: int,
    max_json_values: int,
    limits: Mapping[str, tuple[int, str]],
    max_elements: tuple[int, str],
    deadline: Deadline,
    parse_first_max_bytes: int = 0,
) -> Any:
    """The ExportMetricsServiceRequest in ``raw``: 400 when it is not one, 413 past a limit
    (gzip bombs stop at ``max_inflated``; JSON values are counted before parsing, protobuf
    elements by kind, ``limits``, and in all, ``max_elements``, before parsing a body over
    ``parse_first_max_bytes``, after it for a smaller one: ingest.interop.parsedcount); 503
    past ``deadline``."""
    if gzipped:
        raw = gunzip(raw, max_inflated)
    elif len(raw) > max_inflated:
        raise ApiError(
            413,
            "too_large",
            f"the body exceeds {max_inflated} bytes",
            at="body",
            reason="too_large",
        )
    if media == PROTOBUF:
        return parse_bounded(
            raw,
            _parse_protobuf,
            OTLP,
            OTLP_LEVELS,
            limits,
            max_elements,
            deadline,
            parse_first_max_bytes,
        )
    request = ExportMetricsServiceRequest()
    count_values(raw, max_json_values)
    try:
        json_format.Parse(raw.decode("utf-8"), request, ignore_unknown_fields=True)
    except (json_format.ParseError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        message = str(exc)[:300]
        raise bad_request(
            f"the body is not an OTLP JSON ExportMetricsServiceRequest: {message}", "malformed"
        ) from None
    return request


def _encode(message: Any, media: str) -> bytes:
    if media == JSON:
        return json_format.MessageToJson(message, indent=None).encode()
    return bytes(message.SerializeToString())


def success_answer(media: str, rejected_points: int, error_message: str) -> Response:
    """200, with ``partial_success`` filled when some points were refused."""
    response = ExportMetricsServiceResponse()
    if rejected_points or error_message:
        response.partial_success.rejected_data_points = rejected_points
        response.partial_success.error_message = printable(error_message)
    return Response(_encode(response, media), status_code=200, media_type=media)


def error_answer(error: ApiError, media: str) -> Response:
    """A 4xx or 5xx with a google.rpc.Status body (Retry-After kept)."""
    status = Status(code=_GRPC_CODE.get(error.status, 2), message=f"{error.error}: {error.detail}")
    return Response(
        _encode(status, media), status_code=error.status, headers=error.headers, media_type=media
    )


def _parse_protobuf(raw: bytes) -> Any:
    request = ExportMetricsServiceRequest()
    try:
        request.ParseFromString(raw)
    except (DecodeError, ValueError, RecursionError) as exc:
        raise bad_request(
            f"the body is not a protobuf ExportMetricsServiceRequest: {exc}", "malformed"
        ) from None
    return request
