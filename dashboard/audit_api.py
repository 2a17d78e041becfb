"""``GET /api/audit``: the audit log for admins (:data:`dashboard.roles.READ_ROLES`), newest
first, one page at a time (docs/security.md, Audit).

Parameters, all optional: ``kind`` (one of :data:`apm.audit.KINDS`), ``id`` (the object's),
``user`` (who made the change, as the log names them), ``limit`` (1 to 1000, default 100) and
``cursor`` (the ``next`` of the previous page). The answer is ``{"entries": [...], "next":
<cursor or null>}``; ``next`` is null at the end of the log. A bad parameter is a 400 in the
one error shape whose ``at`` names it; an unreachable Cassandra a 503."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flask import Blueprint, Flask, Response, current_app, jsonify, request

from dashboard.api import error
from dashboard.audit_read import (
    BadParam,
    format_cursor,
    parse_cursor,
    parse_filter,
    parse_limit,
    read_page,
    row_json,
)
from dashboard.guard import StorageUnavailable, guarded
from dashboard.telemetry import DashboardTelemetry

__all__ = ["blueprint", "install"]

_KEY = "apm.audit"

blueprint = Blueprint("audit_api", __name__, url_prefix="/api/audit")


@dataclass(frozen=True)
class _Deps:
    store: Callable[[], Any]  # the AuditStore, built on first use
    telemetry: DashboardTelemetry
    clock: Callable[[], float]


def install(
    server: Flask,
    store: Callable[[], Any],
    telemetry: DashboardTelemetry,
    clock: Callable[[], float] = time.time,
) -> None:
    server.extensions[_KEY] = _Deps(store, telemetry, clock)
    server.register_blueprint(blueprint)


@blueprint.errorhandler(BadParam)
def _bad(exc: BadParam) -> tuple[Response, int]:
    return error(400, "bad_request", str(exc), exc.param)


@blueprint.errorhandler(StorageUnavailable)
def _unavailable(exc: StorageUnavailable) -> tuple[Response, int]:
    return error(503, "storage_unavailable", str(exc))


@blueprint.get("", strict_slashes=False)
def read() -> Response:
    args = request.args
    keep = parse_filter(args.get("kind"), args.get("id"), args.get("user"))
    limit, cursor = parse_limit(args.get("limit")), parse_cursor(args.get("cursor"))
    deps: _Deps = current_app.extensions[_KEY]

    def page() -> tuple[list[Any], Any]:
        store = deps.store()
        return read_page(store, keep, cursor, limit, deps.clock(), store.retention_days)

    rows, after = guarded(deps.telemetry, "audit_read", page)
    return jsonify(
        {
            "entries": [row_json(r) for r in rows],
            "next": None if after is None else format_cursor(after),
        }
    )
