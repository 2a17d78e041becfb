"""Request dependencies: the app's settings, publisher, telemetry and the API-key check, and
the bounds on work in flight (:class:`Gate`, the thread limiters).

Every dependency is ``async def``: a plain ``def`` one runs in the same thread pool as the
blocking publishes, so /metrics and authentication would queue behind Kafka under load. None
of them blocks: the key file is stat'ed at most once a second (ingest.auth).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Annotated

import anyio
from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ingest.auth import KeyFile
from ingest.errors import ApiError
from ingest.publisher import Publisher
from ingest.settings import IngestSettings
from ingest.tags import ServerTags
from ingest.telemetry import IngestTelemetry
from ingest.validate import Validator

__all__ = [
    "CLIENT_CERTIFICATE",
    "AuthDep",
    "Gate",
    "PublisherDep",
    "ServiceDep",
    "SettingsDep",
    "Slot",
    "State",
    "require_bearer",
    "require_key",
]


class Slot:
    """One admitted request's place in the :class:`Gate`. The route owns it until a publish
    thread claims it; whoever owns it last gives it back, exactly once."""

    __slots__ = ("_gate", "_lock", "_owner")

    def __init__(self, gate: Gate) -> None:
        self._gate = gate
        self._lock = threading.Lock()
        self._owner = "route"

    def claim(self) -> bool:
        """Called by the publish thread as it starts: False if the route already gave the
        slot back (it answered 503 at its deadline), and then the thread must not publish."""
        with self._lock:
            if self._owner != "route":
                return False
            self._owner = "thread"
            return True

    def release(self, by: str) -> None:
        """Gives the slot back if ``by`` ("route" or "thread") owns it."""
        with self._lock:
            if self._owner != by:
                return
            self._owner = "done"
        self._gate.leave()


class Gate:
    """At most ``limit`` POST requests at work, counted from admission until their publish
    thread returns (a request answered 503 at its deadline keeps counting while its thread
    still waits on Kafka). Past the limit a request is refused at once, never queued."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._count = 0
        self._lock = threading.Lock()

    def enter(self) -> Slot | None:
        with self._lock:
            if self._count >= self.limit:
                return None
            self._count += 1
        return Slot(self)

    def leave(self) -> None:
        with self._lock:
            self._count -= 1

    def count(self) -> int:
        return self._count


@dataclass
class State:
    """What one app instance holds; nothing here outlives a request except caches."""

    settings: IngestSettings
    publisher: Publisher
    keys: KeyFile
    telemetry: IngestTelemetry
    validator: Validator
    gate: Gate = field(init=False)
    # The tags last published per server (ingest.tags): only changes go to Kafka.
    tags: ServerTags = field(init=False)
    # Parsing and validation hold the GIL for up to ~0.5 s per maximal body: a few threads,
    # so that a burst of them cannot take every core and the event loop with them.
    parse_limiter: anyio.CapacityLimiter = field(init=False)
    # Publishes block up to publish_timeout_s; their own tokens keep anyio's default pool
    # (readiness checks, the lifespan) free of them.
    publish_limiter: anyio.CapacityLimiter = field(init=False)

    def __post_init__(self) -> None:
        self.gate = Gate(self.settings.max_inflight)
        self.tags = ServerTags(self.settings.tags_seen_max_bytes, self.telemetry.tag_records)
        self.telemetry.tag_servers.set_function(self.tags.__len__)
        self.parse_limiter = anyio.CapacityLimiter(self.settings.parse_threads)
        self.publish_limiter = anyio.CapacityLimiter(self.settings.max_inflight)


async def get_state(request: Request) -> State:
    return request.app.state.ingest


ServiceDep = Annotated[State, Depends(get_state)]


async def get_settings(state: ServiceDep) -> IngestSettings:
    return state.settings


async def get_publisher(state: ServiceDep) -> Publisher:
    return state.publisher


SettingsDep = Annotated[IngestSettings, Depends(get_settings)]
PublisherDep = Annotated[Publisher, Depends(get_publisher)]

_bearer = HTTPBearer(auto_error=False, description="an API key made by `apm ingest keygen`")


def _unauthorized(detail: str) -> ApiError:
    return ApiError(
        401,
        "unauthorized",
        detail,
        at="header:Authorization",
        reason="unauthorized",
        headers={"WWW-Authenticate": "Bearer"},
    )


# The key id require_key gives a request let in by its client certificate alone.
CLIENT_CERTIFICATE = "client-certificate"


async def require_key(
    state: ServiceDep, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> str:
    if credentials is None:
        if state.settings.tls_client_auth == "instead_of_key":
            # The ingest listens only on TLS that requires a certificate from tls_client_ca
            # (the settings refuse this mode without one), so every request here came over a
            # connection whose certificate the handshake verified. A key that is sent is
            # still checked below: a wrong one is refused, never ignored.
            return CLIENT_CERTIFICATE
        state.telemetry.rejected("unauthorized", 0)
        raise _unauthorized("missing 'Authorization: Bearer <api key>'")
    if not state.keys.check(credentials.credentials):  # one SHA-256, no I/O most calls
        state.telemetry.rejected("unauthorized", 0)
        raise _unauthorized("the API key is not valid")
    return credentials.credentials.partition(".")[0]


async def require_bearer(state: State, request: Request) -> str:
    """:func:`require_key` for routes that answer in their own protocol's shape (OTLP,
    remote_write), so they call it themselves instead of taking it as a dependency."""
    return await require_key(state, await _bearer(request))


AuthDep = Annotated[str, Depends(require_key)]
