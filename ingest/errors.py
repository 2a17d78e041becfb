"""The ingest's failures as :class:`ApiError`; every non-2xx answer's body is the shape both
HTTP APIs share (:mod:`apm.errors`): ``{"error", "detail", "at"}``."""

from __future__ import annotations

import json

import orjson
from starlette.responses import Response

from apm.errors import ErrorBody, error_body

__all__ = ["ApiError", "json_response", "printable", "unavailable"]


def printable(text: str) -> str:
    """``text`` made encodable as UTF-8: a lone surrogate (which a JSON body can carry as
    ``\\ud800``, and a parser's message then quotes) becomes its escape, ``\\ud800``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


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
        samples: int = 0,
    ) -> None:
        detail = printable(detail)  # the answer quotes it: never a 500 for the text it quotes
        super().__init__(detail)
        self.status = status
        self.error = error
        self.detail = detail
        self.at = printable(at) if at is not None else None
        self.reason = reason or error
        self.headers = headers or {}
        self.samples = samples  # samples the refused request carried, for /metrics

    def body(self) -> ErrorBody:
        return error_body(self.error, self.detail, self.at)


def unavailable(detail: str, retry_after_s: int, reason: str) -> ApiError:
    """A 503 the caller should retry after ``retry_after_s`` (Kafka, overload, deadline)."""
    return ApiError(
        503,
        "unavailable",
        detail,
        reason=reason,
        headers={"Retry-After": str(retry_after_s)},
    )


def json_response(
    body: object, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    try:
        content = orjson.dumps(body)
    except TypeError:
        # orjson refuses lone surrogates, which a body's field names may hold (the standard
        # parser reads "\udc00"); an error about bad input must not itself become a 500.
        content = json.dumps(body, ensure_ascii=True).encode()
    return Response(content, status_code=status, headers=headers, media_type="application/json")
