"""POST /v1/metrics, the sample intake: auth, admission, limits, parse, validate, publish, then
202 once Kafka has acked.

Bounds on one request (docs/ingest.md, Limits and Load shedding): admission into at most
``max_inflight`` requests at work (else 503 at once); the body's bytes and JSON values;
inflating, parsing and validating on ``parse_threads`` worker threads, never on the event
loop; and an answer within ``answer_timeout_s`` of the request, 503 + Retry-After if Kafka
has not acknowledged by then (the agent's timeout is set above it).

The path itself is ingest.intake's, which the OTLP and remote_write routes take too; this
module adds the JSON contract's decoding and answer.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from fastapi import APIRouter, Request, Response

from ingest.body import check_media, decode_body
from ingest.deps import AuthDep, ServiceDep, State
from ingest.errors import ApiError, json_response
from ingest.intake import Decoded, intake
from ingest.publisher import to_records
from ingest.schema import ERROR_RESPONSES, REQUEST_BODY, Accepted
from ingest.validate import Batch, count_samples

__all__ = ["router"]

router = APIRouter(tags=["samples"])


def _decode(state: State, raw: bytes, gzipped: bool) -> Decoded:
    """Inflate, count, parse, validate and encode: the CPU-heavy part, on a worker thread."""
    s = state.settings
    doc = decode_body(raw, gzipped, s.max_decompressed_bytes, s.max_json_values)
    try:
        batch = state.validator.validate(doc)
    except ApiError as exc:
        exc.samples = count_samples(doc)
        raise
    return batch, to_records(batch.by_metric, s.record_max_bytes)


def _body(batch: Batch, listed: int) -> dict[str, object]:
    body: dict[str, object] = {"accepted": batch.samples, "snapshots": batch.snapshots}
    if batch.rejected:
        # Like OTLP's partial success: the good snapshots are in, these are not (and a retry
        # would not help them); indices are into the request's 'snapshots'.
        body["rejected_snapshots"] = len(batch.rejected)
        body["rejected_samples"] = batch.rejected_samples
        body["rejected"] = [r.body() for r in batch.rejected[:listed]]
    return body


@router.post(
    "/v1/metrics",
    status_code=202,
    response_model=Accepted,
    summary="publish a batch of snapshots",
    responses=ERROR_RESPONSES,
    openapi_extra={"requestBody": REQUEST_BODY},
)
async def post_samples(request: Request, state: ServiceDep, _key: AuthDep) -> Response:
    def prepare() -> Callable[[bytes], Decoded]:
        gzipped = check_media(
            request.headers.get("content-type"), request.headers.get("content-encoding")
        )
        return functools.partial(_decode, state, gzipped=gzipped)

    batch, _records = await intake(request, state, prepare)
    return json_response(_body(batch, state.settings.max_listed_rejections), 202)
