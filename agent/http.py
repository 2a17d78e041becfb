"""The agent's HTTP client: a Protocol the pusher depends on, and a standard-library
implementation that keeps one connection alive between pushes. Over https:// it verifies the
ingest with agent.tls's context (the system store, or ``tls_ca``), taken again for every new
connection so that a replaced CA file is used without a restart."""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urlsplit

from agent.tls import ClientTls, TlsFiles, TlsRefused, closed_after_handshake

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


class _Https(http.client.HTTPSConnection):
    """HTTPS whose certificate is checked against ``server_name`` (``tls_server_name``) when
    given, else the URL's host: for an ingest reached by an address its certificate lacks."""

    def __init__(
        self, netloc: str, timeout: float, context: ssl.SSLContext, server_name: str | None
    ) -> None:
        super().__init__(netloc, timeout=timeout, context=context)
        self._tls = context
        self._server_name = server_name
        # Set once the handshake is done; http.client drops ``sock`` on a reset, this stays.
        self.handshaken = False

    def connect(self) -> None:
        self.sock = socket.create_connection((self.host, self.port), self.timeout)
        self.sock = self._tls.wrap_socket(self.sock, server_hostname=self._server_name or self.host)
        self.handshaken = True


class StdlibHttpClient:
    def __init__(self, tls: ClientTls | None = None) -> None:
        self._conn: http.client.HTTPConnection | None = None
        self._target: tuple[str, str, float] | None = None
        self._lock = threading.Lock()
        # Without settings, https:// is verified against the system store.
        self._tls = tls or ClientTls(TlsFiles())

    def _connection(self, scheme: str, netloc: str, timeout: float) -> http.client.HTTPConnection:
        if self._conn is None or self._target != (scheme, netloc, timeout):
            self.close()
            if scheme == "https":
                try:
                    context = self._tls.context()
                except ValueError as exc:  # a TLS file gone since the agent started
                    raise ConnectionError(f"TLS settings: {exc}") from None
                self._conn = _Https(netloc, timeout, context, self._tls.server_name)
            else:
                self._conn = http.client.HTTPConnection(netloc, timeout=timeout)
            self._target = (scheme, netloc, timeout)
        return self._conn

    def post(self, url: str, body: bytes, headers: dict[str, str], timeout: float) -> HttpResponse:
        return self._exchange("POST", url, body, headers, timeout)

    def get(self, url: str, timeout: float) -> HttpResponse:
        """One GET (``check-config --ready``'s TLS check: any answer means TLS works)."""
        return self._exchange("GET", url, None, {}, timeout)

    def _exchange(
        self, method: str, url: str, body: bytes | None, headers: dict[str, str], timeout: float
    ) -> HttpResponse:
        parts = urlsplit(url)
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        with self._lock:
            fresh = self._conn is None
            conn = self._connection(parts.scheme, parts.netloc, timeout)
            fresh = fresh or conn.sock is None
            try:
                conn.request(method, path, body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
            except (OSError, http.client.HTTPException) as exc:
                handshaken = isinstance(conn, _Https) and conn.handshaken
                self.close()  # a half-used connection is not reusable
                if fresh and handshaken and closed_after_handshake(exc):
                    raise TlsRefused(parts.netloc, exc) from exc
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
