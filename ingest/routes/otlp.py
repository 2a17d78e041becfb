"""POST /otlp/v1/metrics: OpenTelemetry OTLP/HTTP metrics into the ingest (docs/interop.md).

OTLP's own path is /v1/metrics, which is this ingest's JSON contract: exporters point
``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` at ``http://<ingest>/otlp/v1/metrics`` (or
``OTEL_EXPORTER_OTLP_ENDPOINT`` at ``http://<ingest>/otlp``). The request takes the ingest's one
path (ingest.intake.intake: admission, limits, the answer deadline, validation,
publishing, the answer only after Kafka's acks). Answers, per the OTLP spec: 200 with an
``ExportMetricsServiceResponse`` (``partial_success`` when some points were refused, which a
retry would not change); 400 when no point could be taken; 429, 503 with Retry-After to retry;
other 4xx to drop; error bodies are a ``google.rpc.Status``, in the request's encoding.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from fastapi import APIRouter, Request, Response

from ingest.deps import ServiceDep, State, require_bearer
from ingest.errors import ApiError
from ingest.intake import Decoded, for_senders, intake
from ingest.interop.otlp import (
    JSON,
    PROTOBUF,
    check_headers,
    decode_export,
    error_answer,
    success_answer,
)
from ingest.interop.otlp_map import map_export
from ingest.interop.points import Tally, bad_request, to_decoded
from ingest.interop.rates import Pending
from ingest.interop.runtime import Interop
from ingest.interop.wirecount import Deadline

__all__ = ["router"]

router = APIRouter(tags=["interop"])


def _decode(
    state: State,
    interop: Interop,
    media: str,
    gzipped: bool,
    tally: Tally,
    deadline: Deadline,
    pending: Pending,
    raw: bytes,
) -> Decoded:
    s, i = state.settings, interop.settings
    limits = dict.fromkeys(
        ("resource_metrics", "scope_metrics", "metrics", "points"),
        (i.otlp_max_points, "otlp_max_points"),
    )
    request = decode_export(
        raw,
        media,
        gzipped,
        s.max_decompressed_bytes,
        s.max_json_values,
        limits,
        (i.protobuf_max_elements, "protobuf_max_elements"),
        deadline,
        i.protobuf_parse_first_max_bytes,
    )
    points = map_export(request, i, interop.otlp_names, interop.rates, tally, deadline, pending)
    decoded = to_decoded(points, state.validator, s.record_max_bytes, "otlp")
    if tally.of("rejected") and not tally.of("accepted") and not tally.of("dropped"):
        # Nothing of it can ever be taken: OTLP's "bad data", not a partial success.
        raise bad_request(_message(tally), "no_valid_point")
    return decoded


def _message(tally: Tally) -> str:
    reasons = ", ".join(f"{r}: {n}" for r, n in tally.reasons("rejected").items())
    return (
        f"{tally.of('rejected')} data points refused ({reasons}); the first: {tally.first_problem}"
    )


@router.post(
    "/otlp/v1/metrics",
    summary="OpenTelemetry OTLP/HTTP metrics (protobuf or JSON, gzip accepted)",
    responses={
        200: {"description": "ExportMetricsServiceResponse; partial_success lists refusals"},
        400: {"description": "not OTLP, or no point could be taken: drop (google.rpc.Status)"},
        413: {"description": "over a size limit: drop"},
        415: {"description": "Content-Type or Content-Encoding not supported"},
        429: {"description": "too many new metric names this minute: retry after Retry-After"},
        503: {"description": "Kafka or the ingest cannot take it now: retry after Retry-After"},
    },
)
async def otlp_metrics(request: Request, state: ServiceDep) -> Response:
    interop: Interop = request.app.state.interop
    tally = Tally()
    pending: Pending = {}
    media = JSON if "json" in (request.headers.get("content-type") or "").lower() else PROTOBUF
    try:
        await require_bearer(state, request)

        def prepare() -> Callable[[bytes], Decoded]:
            kind, gzipped = check_headers(
                request.headers.get("content-type"), request.headers.get("content-encoding")
            )
            deadline = Deadline(state.settings.answer_timeout_s, state.settings.retry_after_s)
            return functools.partial(
                _decode, state, interop, kind, gzipped, tally, deadline, pending
            )

        await intake(request, state, prepare)
        # Only now, with every record acknowledged, do the series' rate states move.
        interop.rates.commit(pending)
    except ApiError as exc:
        error = for_senders(exc)
        interop.telemetry.answered("otlp", error.status, tally, error)
        return error_answer(error, media)
    interop.telemetry.answered("otlp", 200, tally, None)
    refused = tally.of("rejected")
    return success_answer(media, refused, _message(tally) if refused else "")
