"""The ingest's failures as :class:`ApiError`; every non-2xx answer's body is the shape both
HTTP APIs share (:mod:`apm.errors`): ``{"error", "detail", "at"}``."""

from __future__ import annotations

import orjson
from starlette.responses import Response

from apm.errors import ErrorBody, error_body

__all__ = ["ApiError", "json_response"]


class ApiError(Exception):
    """An answer other than 202. ``reason`` labels the rejection in /metrics."""

    def __init__(
        self,
        status: int,
        error: str,
        detail: str,
        at: str | None = None,
        reason: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.error = error
        self.detail = detail
        self.at = at
        self.reason = reason or error
        self.headers = headers or {}

    def body(self) -> ErrorBody:
        return error_body(self.error, self.detail, self.at)


def json_response(
    body: object, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    return Response(
        orjson.dumps(body), status_code=status, headers=headers, media_type="application/json"
    )
