"""create_app: the FastAPI application, its lifespan (producer flushed on shutdown) and the
error handlers that give every failure the same JSON shape."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

from fastapi import FastAPI, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from prometheus_client import Counter
from starlette.exceptions import HTTPException as StarletteHTTPException

from apm.errors import error_body, status_error
from ingest.auth import KeyFile
from ingest.deps import State
from ingest.errors import ApiError, json_response
from ingest.interop.runtime import Interop, InteropTelemetry
from ingest.interop.settings import InteropSettings
from ingest.publisher import KafkaPublisher, Publisher
from ingest.routes import health, otlp, remote_write, samples
from ingest.settings import IngestSettings
from ingest.telemetry import IngestTelemetry
from ingest.validate import Validator

__all__ = ["create_app"]

log = logging.getLogger(__name__)

DESCRIPTION = """Validates batches of snapshots from agents and publishes each metric's samples
to its own Kafka topic (`apm.model.topic_for(metric)`, records encoded as in `apm.wire`). A 202
comes only after every record of the accepted snapshots is acknowledged by Kafka (acks=all); bad
snapshots are left out and listed by index (a batch with no good snapshot is a 422, and
publishes nothing). Every POST is answered within `answer_timeout_s` (4 s); past `max_inflight`
requests at work the answer is 503 + Retry-After at once. Errors are `{"error", "detail",
"at"}`."""


def create_app(
    settings: IngestSettings | None = None,
    publisher: Publisher | None = None,
    keys: KeyFile | None = None,
    interop: InteropSettings | None = None,
) -> FastAPI:
    """The app. ``publisher`` defaults to Kafka; it is closed (flushed) at shutdown.
    ``interop`` configures the OTLP and remote_write intake (docs/interop.md)."""
    settings = settings or IngestSettings()
    publisher = publisher if publisher is not None else KafkaPublisher(settings)
    keys = keys if keys is not None else KeyFile(settings.keys_file, settings.keys_recheck_s)
    if settings.linger_ms / 1000 >= min(settings.publish_timeout_s, settings.answer_timeout_s):
        log.warning(
            "linger_ms (%g) is not below publish_timeout_s (%g) and answer_timeout_s (%g): "
            "requests will get 503 while their window lingers",
            settings.linger_ms,
            settings.publish_timeout_s,
            settings.answer_timeout_s,
        )
    if keys.path is None:
        log.warning("no API key file (APM_INGEST_KEYS_FILE): every request will get 401")
    state = State(
        settings=settings,
        publisher=publisher,
        keys=keys,
        telemetry=IngestTelemetry(publisher.queue_depth, publisher.lingering),
        validator=Validator(
            settings.max_samples,
            settings.max_future_s,
            settings.topic_retention_s,
            max_rejected=settings.max_rejected_snapshots,
            cache_max_bytes=settings.names_seen_max_bytes,
        ),
    )
    state.telemetry.inflight.set_function(state.gate.count)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        # Connect early so the first request does not pay for it; a failure is not fatal
        # (/readyz says so and publishing retries).
        if not await run_in_threadpool(publisher.ready):
            log.warning("Kafka at %s is not reachable yet", settings.kafka_bootstrap)
        yield
        log.info("shutting down: flushing the producer")
        await run_in_threadpool(publisher.close, settings.shutdown_timeout_s)

    app = FastAPI(title="APM ingest", version="1", description=DESCRIPTION, lifespan=lifespan)
    app.state.ingest = state
    app.state.interop = Interop(
        interop or InteropSettings(), InteropTelemetry(state.telemetry.registry)
    )
    _watch_name_caches(state.validator, app.state.interop.telemetry)
    app.include_router(samples.router)
    app.include_router(remote_write.router)
    app.include_router(otlp.router)
    app.include_router(health.router)

    @app.exception_handler(ApiError)
    async def api_error(_request: Request, exc: ApiError) -> Response:
        return json_response(exc.body(), exc.status, exc.headers)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> Response:
        return json_response(
            error_body(status_error(exc.status_code), str(exc.detail)),
            exc.status_code,
            dict(exc.headers or {}),
        )

    @app.exception_handler(RequestValidationError)
    async def request_error(_request: Request, exc: RequestValidationError) -> Response:
        first = exc.errors()[0] if exc.errors() else {}
        at = ".".join(str(p) for p in first.get("loc", ()))
        return json_response(error_body("validation", str(first.get("msg", exc)), at), 422)

    @app.exception_handler(Exception)
    async def internal_error(_request: Request, _exc: Exception) -> Response:
        # Starlette still re-raises the exception after this answer, so it is logged.
        return json_response(error_body(status_error(500), "internal error"), 500)

    return app


def _watch_name_caches(validator: Validator, telemetry: InteropTelemetry) -> None:
    """The validator's name caches in the same gauges as the protocols' caches."""
    for label, cache in (("servers", validator.servers), ("metrics", validator.metrics)):
        telemetry.cache_bytes.labels(label).set_function(partial(getattr, cache, "bytes"))
        evictions = telemetry.cache_evictions.labels(label)
        cache.on_evict = partial(_count_eviction, evictions)


def _count_eviction(counter: Counter, _names: int) -> None:
    counter.inc()
