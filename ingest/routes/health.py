"""Liveness, readiness (Kafka reachable) and the service's telemetry (the Prometheus scrape
endpoint, /metrics)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from apm.errors import error_body
from ingest.deps import ServiceDep
from ingest.errors import json_response

__all__ = ["router"]

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="the process is alive")
async def healthz() -> Response:
    return json_response({"status": "ok"})


@router.get("/readyz", summary="Kafka is reachable", responses={503: {"description": "not"}})
async def readyz(request: Request) -> Response:
    # No auth (a probe's), no I/O and no lock: the publisher answers from the state its
    # background probe (every ready_probe_s) or the last publish left, so the thread pool
    # being busy with publishes, or a slow broker, cannot stall it. The state is read off the
    # app directly: a plain-def dependency would wait for a worker thread.
    if request.app.state.ingest.publisher.ready():
        return json_response({"status": "ready"})
    return json_response(error_body("unavailable", "kafka unreachable"), 503)


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
async def telemetry(state: ServiceDep) -> Response:
    return Response(generate_latest(state.telemetry.registry), media_type=CONTENT_TYPE_LATEST)
