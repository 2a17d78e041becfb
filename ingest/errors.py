"""The one error shape every non-2xx answer uses: ``{"error", "detail", "at"}``."""

from __future__ import annotations

import orjson
from starlette.responses import Response

__all__ = ["ApiError", "error_body", "json_response"]


class ApiError(Exception):
    """An answer other than 202. ``reason`` labels the rejection in /metrics."""

    def __init__(self, status: int, error: str, detail: str, at: str | None = None,
                 reason: str | None = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.error = error
        self.detail = detail
        self.at = at
        self.reason = reason or error
        self.headers = headers or {}


def error_body(error: str, detail: str, at: str | None = None) -> dict[str, object]:
    return {"error": error, "detail": detail, "at": at}


def json_response(body: object, status: int = 200,
                  headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(body), status_code=status, headers=headers,
                    media_type="application/json")
