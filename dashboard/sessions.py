"""Sessions that any dashboard replica can verify: the session lives in Flask's signed cookie
(itsdangerous, HMAC over the content with ``APM_DASHBOARD_SECRET_KEY``), with its own expiry
inside, so nothing about it is kept in one process's memory.

The expiry is checked against an injected clock (tests never sleep); Flask's own timestamp
check (``PERMANENT_SESSION_LIFETIME``) refuses an old cookie independently. A logged-out
session id is remembered by the replica that served the logout until the session would have
expired anyway (a bounded list).
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, MutableMapping
from typing import Any

__all__ = ["MIN_SECRET_KEY_CHARS", "SignedSessions", "secret_key"]

log = logging.getLogger(__name__)

MIN_SECRET_KEY_CHARS = 16
_MAX_REVOKED = 100_000


def secret_key(configured: str) -> str:
    """The HMAC key: the configured one (shared by every replica), else a random one for this
    process only (logins then end on restart and do not carry over to another replica)."""
    if configured:
        if len(configured) < MIN_SECRET_KEY_CHARS:
            raise ValueError(
                f"APM_DASHBOARD_SECRET_KEY must be at least {MIN_SECRET_KEY_CHARS} characters"
            )
        return configured
    log.warning(
        "APM_DASHBOARD_SECRET_KEY is not set: sessions are signed with a random key of this "
        "process, so they end on restart and another replica refuses them"
    )
    return secrets.token_hex(32)


class SignedSessions:
    """Opens, checks and closes sessions stored in the (signed) Flask session mapping."""

    def __init__(self, ttl_s: float, clock: Callable[[], float] = time.time) -> None:
        self._ttl = ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._revoked: dict[str, float] = {}  # session id -> its expiry

    def open(
        self,
        session: MutableMapping[str, Any],
        user: str,
        built_in: bool = True,
        proxy: bool = False,
    ) -> None:
        """``built_in``: the configured login or the token (:mod:`dashboard.signin`), else a
        user of ``apm user``, whose role is read on each request. ``proxy``: opened for the
        auth proxy's header (:mod:`dashboard.auth_proxy`), valid only beside it."""
        session.clear()
        session["sid"] = secrets.token_urlsafe(24)
        session["user"] = user
        session["builtin"] = built_in
        if proxy:
            session["proxy"] = True
        session["csrf"] = secrets.token_urlsafe(24)
        session["exp"] = self._clock() + self._ttl

    def valid(self, session: MutableMapping[str, Any]) -> bool:
        sid, exp = session.get("sid"), session.get("exp")
        if not isinstance(sid, str) or not sid or not isinstance(exp, int | float):
            return False
        if isinstance(exp, bool) or not exp > self._clock():
            return False
        with self._lock:
            return sid not in self._revoked

    def close(self, session: MutableMapping[str, Any]) -> None:
        sid, exp = session.get("sid"), session.get("exp")
        if isinstance(sid, str) and isinstance(exp, int | float):
            now = self._clock()
            with self._lock:
                if len(self._revoked) >= _MAX_REVOKED:
                    self._revoked = {k: v for k, v in self._revoked.items() if v > now}
                if len(self._revoked) < _MAX_REVOKED:
                    self._revoked[sid] = float(exp)
        session.clear()
