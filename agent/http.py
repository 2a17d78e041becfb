"""The agent's HTTP client: a Protocol the pusher depends on, and a standard-library
implementation that keeps one connection alive between pushes."""

from __future__ import annotations

import http.client
import threading
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urlsplit

__all__ = ["HttpClient", "HttpResponse", "StdlibHttpClient"]


@dataclass
class HttpResponse:
    status: int
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names
    body: bytes = b""


class HttpClient(Protocol):
    def post(self, url: str, body: bytes, headers: dict[str, str], timeout: float) -> HttpResponse:
        """Sends one request; raises OSError (or a subclass) when no answer came back."""
        ...


class StdlibHttpClient:
    def __init__(self) -> None:
        self._conn: http.client.HTTPConnection | None = None
        self._target: tuple[str, str, float] | None = None
        self._lock = threading.Lock()

    def _connection(self, scheme: str, netloc: str, timeout: float) -> http.client.HTTPConnection:
        if self._conn is None or self._target != (scheme, netloc, timeout):
            self.close()
            cls = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
            self._conn = cls(netloc, timeout=timeout)
            self._target = (scheme, netloc, timeout)
        return self._conn

    def post(self, url: str, body: bytes, headers: dict[str, str], timeout: float) -> HttpResponse:
        parts = urlsplit(url)
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        with self._lock:
            conn = self._connection(parts.scheme, parts.netloc, timeout)
            try:
                conn.request("POST", path, body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
            except (OSError, http.client.HTTPException) as exc:
                self.close()  # a half-used connection is not reusable
                if isinstance(exc, OSError):
                    raise
                raise ConnectionError(f"bad HTTP exchange with {parts.netloc}: {exc!r}") from exc
            if response.will_close:
                self.close()
            return HttpResponse(
                response.status, {k.lower(): v for k, v in response.getheaders()}, data
            )

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
