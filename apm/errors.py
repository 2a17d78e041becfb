"""The one error shape both HTTP APIs (the ingest and the dashboard's JSON API) answer with:
``{"error": code, "detail": message, "at": where}``.

- ``error``: a short, stable machine code (``bad_request``, ``not_found``, ``invalid_query``,
  ``validation``, ``unavailable`` ...); clients branch on it.
- ``detail``: what was wrong, for a human; its wording may change.
- ``at``: where, or null: a field path (``snapshots[3].ts``), a header (``header:Content-Type``),
  a parameter (``from``), or, for a query that does not parse, the 0-based character offset in
  the query text (an integer).

Standard library only, like the rest of the shared contract.
"""

from __future__ import annotations

from typing import TypedDict

__all__ = ["ErrorBody", "error_body", "status_error"]

_BY_STATUS = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    415: "unsupported_media_type",
    500: "internal_error",
    503: "unavailable",
}


class ErrorBody(TypedDict):
    error: str
    detail: str
    at: str | int | None


def error_body(error: str, detail: str, at: str | int | None = None) -> ErrorBody:
    """The body of every non-2xx JSON answer."""
    return {"error": error, "detail": detail, "at": at}


def status_error(status: int) -> str:
    """The ``error`` code for an answer the web framework gives itself (an unknown route, a
    method not allowed, an unhandled exception), from its status alone."""
    return _BY_STATUS.get(status, "http_error")
