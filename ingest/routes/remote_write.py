"""POST /api/v1/write: Prometheus remote_write 1.0 into the ingest (docs/interop.md).

The request takes the ingest's one path (ingest.intake.intake: admission, limits,
the answer deadline, validation, publishing, the answer only after Kafka's acks); this route
adds the protocol's headers, its decoding and its answers. Answers follow the remote_write
spec, as Prometheus reads them: 204 when every sample is in; 5xx and 429 (with Retry-After)
when it should send the batch again; any other 4xx when it must drop it (400 for bad data,
also after the good samples of the request were published, as Prometheus' own receiver does).
Error bodies are one line of text, which Prometheus logs.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter, Request, Response

from ingest.deps import ServiceDep, require_bearer
from ingest.errors import ApiError, printable
from ingest.intake import Decoded, for_senders, intake
from ingest.interop.points import Tally
from ingest.interop.remote_write import check_headers, remote_write_decoder
from ingest.interop.runtime import Interop
from ingest.interop.wirecount import Deadline

__all__ = ["router"]

router = APIRouter(tags=["interop"])


def _text(status: int, text: str, headers: dict[str, str] | None = None) -> Response:
    return Response(
        printable(text) + "\n", status_code=status, headers=headers, media_type="text/plain"
    )


@router.post(
    "/api/v1/write",
    status_code=204,
    summary="Prometheus remote_write 1.0 (snappy-compressed protobuf WriteRequest)",
    responses={
        204: {"description": "every sample is in Kafka (acks=all)"},
        400: {"description": "bad data, or some samples refused: drop, do not retry"},
        413: {"description": "over a size limit: drop"},
        415: {"description": "not remote_write 1.0 (Content-Type, Content-Encoding)"},
        429: {"description": "too many new metric names this minute: retry after Retry-After"},
        503: {"description": "Kafka or the ingest cannot take it now: retry after Retry-After"},
    },
)
async def remote_write(request: Request, state: ServiceDep) -> Response:
    interop: Interop = request.app.state.interop
    tally = Tally()
    settings = state.settings
    try:
        await require_bearer(state, request)

        def prepare() -> Callable[[bytes], Decoded]:
            check_headers(
                request.headers.get("content-type"), request.headers.get("content-encoding")
            )
            return remote_write_decoder(
                state.validator,
                interop.settings,
                interop.remote_write_names,
                settings.max_decompressed_bytes,
                settings.max_samples,
                settings.record_max_bytes,
                tally,
                Deadline(settings.answer_timeout_s, settings.retry_after_s),
            )

        batch, _records = await intake(request, state, prepare)
    except ApiError as exc:
        error = for_senders(exc)
        interop.telemetry.answered("remote_write", error.status, tally, error)
        return _text(error.status, f"{error.error}: {error.detail}", error.headers)
    refused = tally.of("rejected")
    if refused:
        # The good samples are in; the rest would be refused again: Prometheus must drop
        # the batch, not resend it.
        error = ApiError(400, "bad_request", tally.first_problem, reason="partial")
        interop.telemetry.answered("remote_write", 400, tally, error)
        return _text(
            400,
            f"bad_request: {batch.samples} samples accepted, {refused} refused "
            f"({_reasons(tally)}); the first: {tally.first_problem}",
        )
    interop.telemetry.answered("remote_write", 204, tally, None)
    return Response(status_code=204)


def _reasons(tally: Tally) -> str:
    return ", ".join(f"{reason}: {n}" for reason, n in tally.reasons("rejected").items())
