"""POST /v1/metrics, the sample intake: auth, limits, parse, validate, publish, then 202 once
Kafka has acked."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool

from ingest.body import check_media, gunzip, parse_json, read_limited
from ingest.deps import AuthDep, ServiceDep
from ingest.errors import ApiError, json_response
from ingest.publisher import PublishUnavailable, to_records
from ingest.schema import ERROR_RESPONSES, REQUEST_BODY, Accepted
from ingest.validate import count_samples

__all__ = ["router"]

router = APIRouter(tags=["samples"])


@router.post(
    "/v1/metrics",
    status_code=202,
    response_model=Accepted,
    summary="publish a batch of snapshots",
    responses=ERROR_RESPONSES,
    openapi_extra={"requestBody": REQUEST_BODY},
)
async def post_samples(request: Request, state: ServiceDep, _key: AuthDep) -> Response:
    settings = state.settings
    doc: object = None
    try:
        gzipped = check_media(
            request.headers.get("content-type"), request.headers.get("content-encoding")
        )
        raw = await read_limited(
            request.stream(), request.headers.get("content-length"), settings.max_body_bytes
        )
        if gzipped:
            raw = gunzip(raw, settings.max_decompressed_bytes)
        elif len(raw) > settings.max_decompressed_bytes:
            raise ApiError(
                413,
                "too_large",
                "the body exceeds the decompressed limit",
                at="body",
                reason="too_large",
            )
        doc = parse_json(raw)
        batch = state.validator.validate(doc)
        records = to_records(batch.by_metric, settings.record_max_bytes)
        started = time.perf_counter()
        try:
            await run_in_threadpool(state.publisher.publish, records)
        except PublishUnavailable as exc:
            raise ApiError(
                503,
                "unavailable",
                str(exc),
                reason="unavailable",
                headers={"Retry-After": str(settings.retry_after_s)},
            ) from exc
        state.telemetry.publish_seconds.observe(time.perf_counter() - started)
    except ApiError as exc:
        state.telemetry.rejected(exc.reason, count_samples(doc))
        raise
    state.telemetry.accepted(batch.samples)
    return json_response({"accepted": batch.samples, "snapshots": batch.snapshots}, 202)
