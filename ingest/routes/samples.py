"""POST /v1/metrics, the sample intake: auth, admission, limits, parse, validate, publish, then
202 once Kafka has acked.

Bounds on one request (docs/ingest.md, Limits and Load shedding): admission into at most
``max_inflight`` requests at work (else 503 at once); the body's bytes and JSON values;
inflating, parsing and validating on ``parse_threads`` worker threads, never on the event
loop; and an answer within ``answer_timeout_s`` of the request, 503 + Retry-After if Kafka
has not acknowledged by then (the agent's timeout is set above it).

:func:`intake` is that path without the JSON contract's own decoding and answer; the OTLP and
remote_write routes (ingest/routes/otlp.py, remote_write.py) take it too.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

import anyio
from fastapi import APIRouter, Request, Response

from ingest.body import check_media, decode_body, read_limited
from ingest.deps import AuthDep, ServiceDep, Slot, State
from ingest.errors import ApiError, json_response, unavailable
from ingest.publisher import PublishUnavailable, to_records
from ingest.schema import ERROR_RESPONSES, REQUEST_BODY, Accepted
from ingest.validate import Batch, count_samples

__all__ = ["Decoded", "intake", "router"]

router = APIRouter(tags=["samples"])


# A decoded request: its validated batch and that batch's Kafka records (topic -> values).
Decoded = tuple[Batch, dict[str, list[bytes]]]


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


def _publish(state: State, slot: Slot, records: dict[str, list[bytes]]) -> bool:
    """On a publish thread; False if the request was answered (503) before this started."""
    if not slot.claim():
        return False
    try:
        state.publisher.publish(records)
        return True
    finally:
        slot.release("thread")


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


async def intake(
    request: Request, state: State, prepare: Callable[[], Callable[[bytes], Decoded]]
) -> Decoded:
    """The one path every protocol's POST takes: admission, the answer deadline, the body
    read within ``max_body_bytes``, decoding on a parse thread, publishing on a publish
    thread; returns only once Kafka acknowledged every record (or there were none). Raises
    ApiError (counted in /metrics) otherwise.

    ``prepare`` checks the headers (a 415 is raised before the body is read) and returns the
    decoder: raw body -> the validated batch and its records (ingest.records.to_records), run
    off the event loop."""
    settings = state.settings
    slot = state.gate.enter()
    if slot is None:
        state.telemetry.rejected("overloaded", 0)
        raise unavailable(
            f"the ingest is at its limit of {settings.max_inflight} requests at work; retry later",
            settings.retry_after_s,
            "overloaded",
        )
    phase = "read"
    try:
        with anyio.move_on_after(settings.answer_timeout_s) as scope:
            decode = prepare()
            raw = await read_limited(
                request.stream(), request.headers.get("content-length"), settings.max_body_bytes
            )
            phase = "parse"
            batch, records = await anyio.to_thread.run_sync(
                decode, raw, limiter=state.parse_limiter
            )
            del raw
            phase = "publish"
            started = time.perf_counter()
            # Abandoned at the deadline: the thread goes on (and keeps its slot) until the
            # publisher's own timeout, but the caller hears 503 before its own timeout.
            # Nothing to publish (a request of stale markers only): nothing to wait for.
            published = not records or await anyio.to_thread.run_sync(
                _publish,
                state,
                slot,
                records,
                abandon_on_cancel=True,
                limiter=state.publish_limiter,
            )
            state.telemetry.publish_seconds.observe(time.perf_counter() - started)
        if scope.cancelled_caught or not published:
            late = _late(phase, settings.answer_timeout_s, settings.retry_after_s)
            late.samples = batch.samples if phase == "publish" else 0
            raise late
    except PublishUnavailable as exc:
        state.telemetry.rejected("unavailable", batch.samples)
        raise unavailable(str(exc), settings.retry_after_s, "unavailable") from exc
    except ApiError as exc:
        state.telemetry.rejected(exc.reason, exc.samples)
        raise
    finally:
        slot.release("route")
    state.telemetry.accepted(batch.samples, batch.snapshots, batch.rejected)
    return batch, records


def _late(phase: str, limit: float, retry_after_s: int) -> ApiError:
    if phase == "read":  # the client's upload is what is slow: a 408, which it may retry
        return ApiError(
            408,
            "request_timeout",
            f"the body did not arrive within {limit:g}s",
            at="body",
            reason="request_timeout",
        )
    if phase == "parse":
        why = "the ingest was too busy to read the batch"
    else:  # publish
        why = "Kafka did not acknowledge the batch (it may still be delivered: at least once)"
    return unavailable(f"{why} within the answer deadline of {limit:g}s", retry_after_s, "deadline")
