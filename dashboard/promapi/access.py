"""Who may read through the Prometheus API: the dashboard's own credentials, in the forms a
Prometheus client (Grafana's data source) can send.

- ``Authorization: Bearer <APM_DASHBOARD_TOKEN>`` or a user's API token (``apm token``, any
  role may read; also as Basic's password): :func:`dashboard.signin.check_bearer`,
  compared in constant time, and wrong tokens throttled per client (429 with ``Retry-After``);
- ``Authorization: Basic``: the configured user with its password, any user with the token,
  or a user of ``apm user`` with its password (:func:`dashboard.signin.sign_in`; every role
  may read). The password check runs scrypt, so an unknown
  credential first takes a token from the login throttle (the same buckets as the login
  page: 429 with ``Retry-After`` when empty), and one that passed is remembered as an HMAC
  digest for ``basic_cache_seconds`` so a Grafana panel does not cost a scrypt per request;
- the browser's session cookie (a signed-in user opening the API in the browser, whose user
  is still enabled: :func:`dashboard.signin.session_role`); a POST made with it must carry
  the session's CSRF token, as everywhere in the dashboard.

- a request the auth proxy names its user in (:mod:`dashboard.auth_proxy`): the login hook
  has then opened or kept that user's session, checked here as any session (the CSRF token
  on a POST too); the ``Authorization`` header is not read.

A remembered Basic credential of a user of ``apm user`` is still asked of the directory on
each use (cached for a few seconds there), so a disable reaches it as it reaches a session.

Anything else is refused (401 with ``WWW-Authenticate``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from dashboard.api_tokens import TokenHolder, looks_like_token
from dashboard.guard import StorageUnavailable
from dashboard.sessions import SignedSessions
from dashboard.settings import DashboardSettings
from dashboard.signin import Tokens, Users, check_bearer, same_secret, session_role, sign_in
from dashboard.telemetry import DashboardTelemetry
from dashboard.throttle import LoginThrottle

__all__ = ["MAX_REMEMBERED", "Access", "Refusal"]

MAX_REMEMBERED = 1024  # Basic credentials remembered at once (a few data sources, in practice)
_SAFE = ("GET", "HEAD", "OPTIONS")


@dataclass(frozen=True)
class Refusal:
    status: int  # 401, 403 or 429
    error_type: str
    message: str
    retry_after: int = 0


class Access:
    def __init__(
        self,
        settings: DashboardSettings,
        sessions: SignedSessions,
        throttle: LoginThrottle,
        telemetry: DashboardTelemetry,
        remember_s: float,
        clock: Callable[[], float] = time.monotonic,
        users: Users | None = None,
        tokens: Tokens | None = None,
    ) -> None:
        self._settings, self._sessions, self._throttle = settings, sessions, throttle
        self._users, self._tokens = users, tokens
        self._telemetry, self._remember_s, self._clock = telemetry, remember_s, clock
        self._key = secrets.token_bytes(32)  # digests of remembered credentials, this process
        self._lock = threading.Lock()
        # digest -> (expiry (monotonic), whether it is a user of apm user)
        self._remembered: dict[bytes, tuple[float, bool]] = {}

    def check(
        self,
        authorization: Any,
        session: MutableMapping[str, Any],
        method: str,
        csrf: str | None,
        client: str,
        proxied: str | None = None,
    ) -> Refusal | None:
        """None when the request may read, else why not. ``authorization`` is werkzeug's
        ``request.authorization``; ``proxied`` the user a trusted auth proxy names."""
        if authorization is not None and proxied is None:
            if authorization.type == "bearer":
                return self._bearer(authorization.token, client)
            if authorization.type == "basic":
                return self._basic(
                    authorization.username or "", authorization.password or "", client
                )
            return self._refuse(
                "bad_token", 401, f"unsupported authorization {authorization.type!r}"
            )
        try:
            valid = self._sessions.valid(session)
            role = session_role(session, self._users, proxied) if valid else None
        except StorageUnavailable:
            return Refusal(503, "unavailable", "the user store is unavailable; retry shortly")
        if role is None:
            return self._refuse("no_session", 401, "authentication required (Bearer or Basic)")
        if method not in _SAFE and not same_secret(csrf, session.get("csrf")):
            return self._refuse(
                "csrf", 403, "CSRF token missing or wrong (X-CSRFToken header)", "forbidden"
            )
        return None

    def _bearer(self, token: str | None, client: str) -> Refusal | None:
        try:
            refusal = check_bearer(
                self._settings, self._throttle, self._telemetry, token, client, self._tokens
            )
        except StorageUnavailable:
            return Refusal(503, "unavailable", "the token store is unavailable; retry shortly")
        if isinstance(refusal, TokenHolder):
            return None
        error_type = "unavailable" if refusal.status == 429 else "unauthorized"
        return Refusal(refusal.status, error_type, refusal.detail, refusal.retry_after)

    def _basic(self, user: str, password: str, client: str) -> Refusal | None:
        if looks_like_token(password):
            # An API token as Basic's password (a Grafana data source), with any user name: it
            # is checked as a Bearer token is, never remembered here, so that a revocation
            # reaches it within the token check's own few seconds.
            return self._bearer(password, client)
        digest = hmac.new(self._key, f"{user}\0{password}".encode(), hashlib.sha256).digest()
        now = self._clock()
        with self._lock:
            expiry, stored_user = self._remembered.get(digest, (0.0, False))
        if expiry > now:
            if not stored_user or self._still_enabled(user):
                return None
            with self._lock:
                self._remembered.pop(digest, None)
        wait, bucket = self._throttle.check(client)
        if wait:
            self._telemetry.logins.labels("throttled").inc()
            self._telemetry.refused.labels(f"throttled_{bucket}").inc()
            return Refusal(429, "unavailable", f"too many attempts; retry in {wait} s", wait)
        try:
            who = sign_in(self._settings, self._users, user, password)
        except StorageUnavailable:
            return Refusal(503, "unavailable", "the user store is unavailable; retry shortly")
        if who is None:
            self._telemetry.logins.labels("failed").inc()
            return self._refuse("bad_password", 401, "wrong user, password or token")
        self._telemetry.logins.labels("ok").inc()
        if self._remember_s > 0:
            with self._lock:
                if len(self._remembered) >= MAX_REMEMBERED:
                    self._remembered = {k: v for k, v in self._remembered.items() if v[0] > now}
                    while len(self._remembered) >= MAX_REMEMBERED:  # oldest first
                        del self._remembered[next(iter(self._remembered))]
                self._remembered[digest] = (now + self._remember_s, not who[1])
        return None

    def _still_enabled(self, user: str) -> bool:
        """A remembered user of ``apm user`` is asked again of the directory (its few seconds'
        cache), so that a disable reaches its Basic credentials too; when the directory cannot
        be read, the remembered answer stands."""
        try:
            directory = self._users() if self._users is not None else None
            return directory is not None and directory.role(user) is not None
        except StorageUnavailable:
            return True

    def _refuse(
        self, reason: str, status: int, message: str, error_type: str = "unauthorized"
    ) -> Refusal:
        self._telemetry.refused.labels(reason).inc()
        return Refusal(status, error_type, message)
