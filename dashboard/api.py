"""The REST API on the dashboard's own Flask server, for automation. It validates through
:mod:`dashboard.validation`, like the UI, so a 422 carries the parser's message and position.
Every query in a response carries its ``state`` and ``reason`` (:mod:`dashboard.states`).
Every error is :func:`apm.errors.error_body`, the ingest's shape: ``{"error", "detail", "at"}``.
A module-level blueprint: :func:`install` hands its handlers the repository, settings,
telemetry and clock through the app's extensions."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from flask import Blueprint, Flask, Response, current_app, jsonify, request

from apm.errors import error_body
from apm.model import server_name_error
from apm.query import QueryError, StoredQuery
from dashboard.guard import StorageUnavailable, guarded
from dashboard.ports import QueryRepository
from dashboard.series import build_series, stored_query_json, window_json
from dashboard.settings import DashboardSettings
from dashboard.states import QueryStates
from dashboard.telemetry import DashboardTelemetry
from dashboard.validation import error_json, parse_time, validate

__all__ = [
    "MAX_POINTS",
    "MAX_QUERY_ID_CHARS",
    "MAX_RANGE_SECONDS",
    "StorageUnavailable",
    "blueprint",
    "error",
    "guarded",
    "install",
]

log = logging.getLogger(__name__)
MAX_RANGE_SECONDS = 366 * 86_400  # a year of windows is already far past the retention
MAX_POINTS = 100_000  # points per series a client may ask for
# Stored ids are uuid4 strings; a longer or unprintable one cannot name a query (and Cassandra
# refuses a key over 64 KiB: that refusal must not pass for an outage).
MAX_QUERY_ID_CHARS = 128
_KEY = "apm.api"


class _BadRequest(ValueError):
    def __init__(self, detail: str, at: str | None = None) -> None:
        super().__init__(detail)
        self.at = at


def error(status: int, code: str, detail: str, at: str | int | None = None) -> tuple[Response, int]:
    """A non-2xx JSON answer in the shape both HTTP APIs share (:mod:`apm.errors`)."""
    return jsonify(error_body(code, detail, at)), status


@dataclass(frozen=True)
class _Deps:
    repo: QueryRepository
    settings: DashboardSettings
    telemetry: DashboardTelemetry
    clock: Callable[[], float]
    states: QueryStates


blueprint = Blueprint("api", __name__, url_prefix="/api")


def install(
    server: Flask,
    repo: QueryRepository,
    settings: DashboardSettings,
    telemetry: DashboardTelemetry,
    clock: Callable[[], float] = time.time,
) -> None:
    """Registers the API on ``server`` over ``repo``."""
    # Read fresh on every call (ttl 0): an API client acts on what it gets.
    states = QueryStates(repo, telemetry, clock, ttl_s=0.0)
    server.extensions[_KEY] = _Deps(repo, settings, telemetry, clock, states)
    server.register_blueprint(blueprint)


def _deps() -> _Deps:
    deps: _Deps = current_app.extensions[_KEY]
    return deps


def _as_json(q: StoredQuery) -> dict[str, object]:
    e = _deps().states.one(q)
    return stored_query_json(q, e.last_result_at, e.query_state)


def _body() -> dict[str, object]:
    try:
        data = json.loads(request.get_data(cache=True))
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the stack
        data = None
    if not isinstance(data, dict):
        raise _BadRequest("the body must be a JSON object", "body")
    return data


def _known(query_id: str) -> bool:
    return len(query_id) <= MAX_QUERY_ID_CHARS and query_id.isprintable()


def _get(query_id: str) -> StoredQuery | None:
    d = _deps()
    if not _known(query_id):
        return None
    return guarded(d.telemetry, "get_query", lambda: d.repo.get_query(query_id))


@blueprint.errorhandler(StorageUnavailable)
def _unavailable(exc: StorageUnavailable) -> tuple[Response, int]:
    return error(503, "storage_unavailable", str(exc))


@blueprint.before_request
def _limit_body() -> None:
    # Read at most this much (413 past it, chunked bodies included) before parsing.
    request.max_content_length = _deps().settings.max_body_bytes


@blueprint.errorhandler(QueryError)
def _invalid(exc: QueryError) -> tuple[Response, int]:
    return jsonify(error_json(exc)), 422


@blueprint.errorhandler(_BadRequest)
def _bad(exc: _BadRequest) -> tuple[Response, int]:
    return error(400, "bad_request", str(exc), exc.at)


@blueprint.get("/queries")
def list_queries() -> Response:
    d = _deps()
    queries = guarded(d.telemetry, "list_queries", d.repo.list_queries)
    evaluated = d.states.evaluate(queries)
    return jsonify(
        [
            stored_query_json(q, evaluated[q.id].last_result_at, evaluated[q.id].query_state)
            for q in queries
        ]
    )


@blueprint.post("/queries")
def create_query() -> tuple[Response, int]:
    d = _deps()
    text = _body().get("text")
    validate(text)
    assert isinstance(text, str)
    saved = guarded(d.telemetry, "save_query", lambda: d.repo.save_query(text))
    return jsonify(_as_json(saved)), 201


@blueprint.get("/queries/<query_id>")
def get_query(query_id: str) -> Response | tuple[Response, int]:
    found = _get(query_id)
    return _no_query(query_id) if found is None else jsonify(_as_json(found))


@blueprint.patch("/queries/<query_id>")
def patch_query(query_id: str) -> Response | tuple[Response, int]:
    d = _deps()
    data = _body()
    if not _known(query_id):
        return _no_query(query_id)
    unknown = set(data) - {"text", "paused"}
    if unknown or not data:
        return error(
            400,
            "bad_request",
            "PATCH takes 'text' and/or 'paused'"
            + (f"; unknown: {sorted(unknown)}" if unknown else ""),
            min(unknown) if unknown else "body",
        )
    if "paused" in data and not isinstance(data["paused"], bool):
        return error(400, "bad_request", "'paused' must be true or false", "paused")
    if "text" in data:
        validate(data["text"])
    try:
        result = None
        if "text" in data:
            text = str(data["text"])
            result = guarded(
                d.telemetry, "update_query", lambda: d.repo.update_query(query_id, text)
            )
        if "paused" in data:
            paused = bool(data["paused"])
            result = guarded(d.telemetry, "set_paused", lambda: d.repo.set_paused(query_id, paused))
    except KeyError:
        return _no_query(query_id)
    assert result is not None
    return jsonify(_as_json(result))


@blueprint.delete("/queries/<query_id>")
def delete_query(query_id: str) -> Response | tuple[Response, int]:
    d = _deps()
    if not _known(query_id):
        return _no_query(query_id)
    if not guarded(d.telemetry, "delete_query", lambda: d.repo.delete_query(query_id)):
        return _no_query(query_id)
    return Response(status=204)


def _range() -> tuple[float, float, int | None]:
    """from, to and max_points of a results request; _BadRequest naming the parameter."""
    now = _deps().clock()
    param = "to"
    try:
        end = parse_time(request.args.get("to"), now)
        param = "from"
        start = parse_time(request.args.get("from"), end - 3600)
        param = "max_points"
        raw_points = request.args.get("max_points")
        max_points = int(raw_points) if raw_points else None
    except ValueError as exc:
        raise _BadRequest(f"bad parameter: {exc}", param) from None
    if end <= start:
        raise _BadRequest("'from' must be before 'to'", "from")
    if end - start > MAX_RANGE_SECONDS:
        days = MAX_RANGE_SECONDS // 86_400
        raise _BadRequest(f"the range may span at most {days} days", "from")
    if max_points is not None and not 2 <= max_points <= MAX_POINTS:
        raise _BadRequest(f"'max_points' must be from 2 to {MAX_POINTS}", "max_points")
    return start, end, max_points


@blueprint.get("/queries/<query_id>/results")
def results(query_id: str) -> Response | tuple[Response, int]:
    d = _deps()
    start, end, max_points = _range()
    found = _get(query_id)
    if found is None:
        return _no_query(query_id)
    out: dict[str, object] = {"query": _as_json(found), "from": start, "to": end}
    windows = guarded(d.telemetry, "read_results", partial(_windows, found, start, end, out))
    d.telemetry.windows_read.inc(len(windows))
    if max_points is None:
        out["windows"] = [window_json(w) for w in windows]
    else:
        series = build_series(found, windows, max_points)
        out["series"] = {k: {"t": s.x, "v": s.y} for k, s in series.items()}
    return jsonify(out)


def _windows(q: StoredQuery, start: float, end: float, out: dict[str, object]) -> list:
    """A query's series; a ``BY server`` query's is one server's (``?server=``), and without
    one the answer lists its servers (``"servers"``) and no windows."""
    repo = _deps().repo
    server = request.args.get("server", "")
    if not q.query.by_server:
        if server:
            raise _BadRequest(
                "'server' is for a BY server query; this one has one series", "server"
            )
        return list(repo.read_results(q.id, start, end))
    if not server:
        out["servers"] = repo.list_result_servers(q.id, start, end)
        out["detail"] = "a BY server query has one series per server: add ?server=<name>"
        return []
    if (err := server_name_error(server)) is not None:
        raise _BadRequest(f"bad parameter: {err}", "server")
    out["server"] = server
    return list(repo.read_server_results(q.id, server, start, end))


def _no_query(query_id: str) -> tuple[Response, int]:
    return error(404, "not_found", f"no query {query_id[:MAX_QUERY_ID_CHARS]!r}")
