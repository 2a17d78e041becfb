"""The saved dashboards' REST API under ``/api/dashboards``: create, read, update (a PUT of
the whole dashboard; its panels' order is the new order), delete, duplicate, export (the JSON
``import`` reads back), import under a new name, and share links (create, revoke).

A module-level blueprint whose handlers find the one :class:`BoardBook` through
:func:`install`; every write validates through :func:`dashboard.boards.parse_board`, so a
refused dashboard is a 422 whose ``at`` names the field and nothing is stored. A body is at
most :data:`MAX_BODY` bytes: a larger one is refused (413) on its Content-Length before any
of it is read. Errors have the one shape of :mod:`apm.errors`."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from flask import Blueprint, Flask, Response, current_app, jsonify, request
from werkzeug.exceptions import HTTPException

from dashboard.api import error
from dashboard.auth import SHARE_PREFIX
from dashboard.board_book import BoardBook, NoBoard
from dashboard.boards import BoardError, export_json
from dashboard.guard import StorageUnavailable

__all__ = ["MAX_BODY", "blueprint", "install"]

log = logging.getLogger(__name__)

# 50 panels of 8 query ids each are ~60 KiB of JSON; a 10,000-panel document of small panels
# still fits, so that it gets the 422 that says why rather than a 413.
MAX_BODY = 1024 * 1024
_KEY = "apm.dashboards"

blueprint = Blueprint("dashboards_api", __name__, url_prefix="/api/dashboards")


def install(server: Flask, book: Callable[[], BoardBook]) -> None:
    """Registers the API on ``server`` over ``book`` (built on first use)."""
    server.extensions[_KEY] = book
    server.register_blueprint(blueprint)


def _book() -> BoardBook:
    book: Callable[[], BoardBook] = current_app.extensions[_KEY]
    return book()


class _BadBody(Exception):
    pass


def _body(optional: bool = False) -> Any:
    raw = request.get_data(cache=True)
    if optional and not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the stack
        raise _BadBody() from None


@blueprint.before_request
def _limit_body() -> None:
    request.max_content_length = MAX_BODY


@blueprint.errorhandler(_BadBody)
def _bad_body(_: _BadBody) -> tuple[Response, int]:
    return error(400, "bad_request", "the body must be JSON", "body")


@blueprint.errorhandler(BoardError)
def _invalid(exc: BoardError) -> tuple[Response, int]:
    return error(422, "validation", exc.detail, exc.at)


@blueprint.errorhandler(NoBoard)
def _missing(exc: NoBoard) -> tuple[Response, int]:
    return error(404, "not_found", f"no dashboard {str(exc.args[0])[:64]!r}", "dashboard_id")


@blueprint.errorhandler(StorageUnavailable)
def _unavailable(exc: StorageUnavailable) -> tuple[Response, int]:
    return error(503, "storage_unavailable", str(exc))


@blueprint.errorhandler(Exception)
def _bug(exc: Exception) -> tuple[Response, int]:
    if isinstance(exc, HTTPException):  # 404, 405, 413: in the one shape too
        return error(exc.code or 500, "http", exc.description or exc.name)
    log.exception("dashboards API: unexpected failure")
    return error(500, "internal", "unexpected failure, logged by the dashboard")


def _name_arg() -> str | None:
    name = request.args.get("name")
    return None if name is None else name


@blueprint.get("")
def list_boards() -> Response:
    return jsonify([b.to_dict() for b in _book().list()])


@blueprint.post("")
def create() -> tuple[Response, int]:
    return jsonify(_book().create(_body()).to_dict()), 201


@blueprint.get("/<board_id>")
def get(board_id: str) -> Response:
    return jsonify(_book().get(board_id).to_dict())


@blueprint.put("/<board_id>")
def update(board_id: str) -> Response:
    return jsonify(_book().update(board_id, _body()).to_dict())


@blueprint.delete("/<board_id>")
def delete(board_id: str) -> Response:
    _book().delete(board_id)
    return Response(status=204)


@blueprint.post("/<board_id>/duplicate")
def duplicate(board_id: str) -> tuple[Response, int]:
    body = _body(optional=True)
    name = body.get("name") if isinstance(body, dict) else None
    if name is not None and not isinstance(name, str):
        raise BoardError("'name' must be a string", "name")
    return jsonify(_book().duplicate(board_id, name).to_dict()), 201


@blueprint.get("/<board_id>/export")
def export(board_id: str) -> Response:
    board = _book().get(board_id)
    response = jsonify(export_json(board))
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in board.name)[:60] or "dashboard"
    response.headers["Content-Disposition"] = f'attachment; filename="{safe}.json"'
    return response


@blueprint.post("/import")
def import_board() -> tuple[Response, int]:
    """The body is an export; ``?name=`` stores it under another name."""
    board = _book().create(_body(), importing=True, name=_name_arg())
    return jsonify(board.to_dict()), 201


@blueprint.post("/<board_id>/share")
def share(board_id: str) -> tuple[Response, int]:
    token = _book().share(board_id)
    return jsonify({"token": token, "url": SHARE_PREFIX + token}), 201


@blueprint.delete("/<board_id>/share")
def revoke(board_id: str) -> Response | tuple[Response, int]:
    if not _book().revoke(board_id):
        return error(404, "not_found", "this dashboard has no share link", "dashboard_id")
    return Response(status=204)
