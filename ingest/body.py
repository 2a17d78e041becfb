"""Reading a request body within the size limits: media type, gzip, then JSON (400/413/415)."""

from __future__ import annotations

import json
import zlib
from collections.abc import AsyncIterator

import orjson

from ingest.errors import ApiError

__all__ = ["check_media", "gunzip", "parse_json", "read_limited"]


def check_media(content_type: str | None, content_encoding: str | None) -> bool:
    """True when the body is gzipped; raises 415 for anything but JSON, identity or gzip."""
    media = (content_type or "").split(";")[0].strip().lower()
    if media != "application/json":
        raise ApiError(
            415,
            "unsupported_media_type",
            f"Content-Type must be application/json, got {content_type!r}",
            at="header:Content-Type",
            reason="media_type",
        )
    encoding = (content_encoding or "identity").strip().lower()
    if encoding not in ("identity", "gzip"):
        raise ApiError(
            415,
            "unsupported_media_type",
            f"Content-Encoding must be gzip or identity, got {content_encoding!r}",
            at="header:Content-Encoding",
            reason="encoding",
        )
    return encoding == "gzip"


def _too_large(what: str, limit: int, at: str) -> ApiError:
    return ApiError(
        413, "too_large", f"{what} exceeds the limit of {limit} bytes", at=at, reason="too_large"
    )


async def read_limited(
    stream: AsyncIterator[bytes], content_length: str | None, limit: int
) -> bytes:
    if (
        content_length is not None
        and content_length.strip().isdigit()
        and int(content_length) > limit
    ):
        raise _too_large("the body", limit, "header:Content-Length")
    chunks: list[bytes] = []
    size = 0
    async for chunk in stream:  # chunked uploads have no Content-Length: count as we go
        size += len(chunk)
        if size > limit:
            raise _too_large("the body", limit, "body")
        chunks.append(chunk)
    return b"".join(chunks)


def gunzip(body: bytes, limit: int) -> bytes:
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise ApiError(
            400,
            "malformed_gzip",
            f"the body is not valid gzip: {exc}",
            at="body",
            reason="malformed",
        ) from exc
    if len(out) > limit or inflater.unconsumed_tail:
        raise _too_large("the decompressed body", limit, "body")
    if not inflater.eof:
        raise ApiError(
            400, "malformed_gzip", "the gzip stream is truncated", at="body", reason="malformed"
        )
    if inflater.unused_data:
        raise ApiError(
            400,
            "malformed_gzip",
            "data follows the end of the gzip stream",
            at="body",
            reason="malformed",
        )
    return out


def parse_json(raw: bytes) -> object:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        first = exc
    # orjson refuses NaN/Infinity and numbers beyond a double; the standard parser reads them
    # (as non-finite floats) so validation can name the field instead of a bare 400.
    try:
        return json.loads(raw, parse_int=float)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise ApiError(
            400,
            "malformed_json",
            f"the body is not valid JSON: {first}",
            at="body",
            reason="malformed",
        ) from None
