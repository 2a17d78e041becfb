"""The one request path every protocol's POST takes (the JSON contract, OTLP, remote_write):
admission into at most ``max_inflight`` requests at work (else 503 at once); the body read
within ``max_body_bytes``; decoding on ``parse_threads`` worker threads, never on the event
loop; publishing on a publish thread; and an answer within ``answer_timeout_s`` of the request,
503 + Retry-After if Kafka has not acknowledged by then (docs/ingest.md, Limits and Load
shedding).

The routes (ingest/routes/) and the protocol decoders (ingest/interop/) import this module;
it imports neither: the handler calls the parser, the parser returns a :data:`Decoded`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import anyio
from fastapi import Request

from ingest.body import read_limited
from ingest.deps import Slot, State
from ingest.errors import ApiError, unavailable
from ingest.publisher import PublishUnavailable
from ingest.validate import Batch

__all__ = ["Decoded", "for_senders", "intake"]

# A decoded request: its validated batch and that batch's Kafka records (topic -> values).
Decoded = tuple[Batch, dict[str, list[bytes]]]


def _publish(state: State, slot: Slot, batch: Batch, records: dict[str, list[bytes]]) -> bool:
    """On a publish thread; False if the request was answered (503) before this started.
    The servers' changed tags go out once the samples are acknowledged (ingest.tags)."""
    if not slot.claim():
        return False
    try:
        if records:
            state.publisher.publish(records)
        state.tags.publish(batch.tags, state.publisher.publish_tags, batch.tags_from)
        return True
    finally:
        slot.release("thread")


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
            published = (not records and not batch.tags) or await anyio.to_thread.run_sync(
                _publish,
                state,
                slot,
                batch,
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


def for_senders(error: ApiError) -> ApiError:
    """The ingest's answer as remote_write senders and OTLP exporters read it: they retry 429
    and 5xx and drop every other 4xx. A 408 (the body was slow to arrive) is worth a retry:
    it becomes a 503. A 422 (past the cap on new names, for good) is bad data: a 400."""
    if error.status == 408:
        error.status = 503
        error.headers = {**error.headers, "Retry-After": "1"}
    elif error.status == 422:
        error.status = 400
    return error
