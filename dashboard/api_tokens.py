"""API tokens of the dashboard's users (``apm token``): for scripts and a Grafana data source,
sent as ``Authorization: Bearer`` (or as the password of Basic auth to the Prometheus API).

A token is ``apm_<id>_<secret>``: the id (16 hex digits) finds its row, the secret (256 random
bits) is checked against the row's SHA-256 digest in constant time. A slow hash is for
passwords people choose; a 256-bit secret is out of reach of any guessing, so one SHA-256
keeps a check cheap on every API call. The token is printed once, at creation.

A token acts with its own role, which is at most its user's: refused above it at creation,
and lowered to it at use when the user's role has been lowered since (a disabled or removed
user's tokens stop working). Expired and revoked tokens are refused. A check is remembered
for ``cache_s`` seconds (a revocation reaches every replica within that), and a token's last
use is written at most once a ``touch_s`` per replica.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from apm.audit import NO_AUDIT, Recorder
from dashboard.guard import StorageUnavailable, guarded
from dashboard.roles import ROLES, allows, parse_role
from dashboard.telemetry import DashboardTelemetry
from dashboard.users import UserConflict, UserDirectory, UserError

__all__ = [
    "MAX_EXPIRY_S",
    "PREFIX",
    "TokenDirectory",
    "TokenHolder",
    "looks_like_token",
    "parse_expiry",
    "token_state",
]

log = logging.getLogger(__name__)

PREFIX = "apm_"
_TOKEN = re.compile(r"apm_([0-9a-f]{16})_([A-Za-z0-9_-]{43})")
MAX_EXPIRY_S = 3650 * 86_400
_UNITS = {"m": 60, "h": 3600, "d": 86_400, "w": 7 * 86_400}
_CACHED = 1024  # token checks remembered at once


@dataclass(frozen=True)
class TokenHolder:
    """Who a token acts for: its user, the role it acts with, and its label."""

    user: str
    role: str
    label: str
    token_id: str
    expires_at: float | None = None  # checked on every use, cached or not


def looks_like_token(text: object) -> bool:
    return isinstance(text, str) and text.startswith(PREFIX)


def parse_expiry(text: str) -> float | None:
    """``30d``, ``12h``, ``90m``, ``2w`` as seconds, or ``never`` (None); ValueError else."""
    if text == "never":
        return None
    found = re.fullmatch(r"([1-9][0-9]{0,5})([mhdw])", text)
    if found is None:
        raise ValueError(f"bad expiry {text[:40]!r}: a number and m, h, d or w (30d), or never")
    seconds = int(found.group(1)) * _UNITS[found.group(2)]
    if seconds > MAX_EXPIRY_S:
        raise ValueError(f"expiry {text!r} is over 3650 days: use never for a token without one")
    return float(seconds)


def token_state(row: Any) -> dict[str, Any]:
    """What the audit log keeps of a token: never its digest."""
    return {
        "user": row.user,
        "role": row.role,
        "label": row.label,
        "expires_at": row.expires_at,
        "revoked_at": row.revoked_at,
    }


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class TokenDirectory:
    """Tokens over a :class:`storage.tokens.TokenStore`, for the users of ``users``."""

    def __init__(
        self,
        store: Any,
        users: UserDirectory,
        telemetry: DashboardTelemetry,
        clock: Callable[[], float] = time.time,
        cache_s: float = 5.0,
        touch_s: float = 60.0,
        audit: Recorder = NO_AUDIT,
    ) -> None:
        self.store, self.users, self.telemetry, self.clock = store, users, telemetry, clock
        self.audit = audit  # records each change once stored (apm token sets it)
        self.cache_s, self.touch_s = cache_s, touch_s
        self._lock = threading.Lock()
        self._checked: dict[str, tuple[TokenHolder | None, float]] = {}  # digest -> (who, at)
        self._touched: dict[str, float] = {}  # token id -> last use written (monotonic)

    def _g(self, op: str, call: Callable[[], Any]) -> Any:
        return guarded(self.telemetry, op, call)

    def create(
        self, user: str, role: str | None, expires_s: float | None, label: str
    ) -> tuple[str, Any]:
        """The new token (shown once) and its stored row."""
        if len(label) > 100 or not label.isprintable():
            raise UserError("the label must be at most 100 printable characters")
        has = self.users.role(user)
        if has is None:
            raise UserConflict(f"no enabled user {user!r} (apm user list)")
        try:
            wanted = has if role is None else parse_role(role)
        except ValueError as exc:
            raise UserError(str(exc)) from None
        if not allows(has, wanted):
            raise UserError(f"a token of {user!r} may be at most {has}, the user's role")
        from storage.tokens import StoredToken

        now = self.clock()
        secret = secrets.token_urlsafe(32)
        for _ in range(3):  # an id taken already (2**-64 a try): draw another
            row = StoredToken(
                secrets.token_hex(8), _digest(secret), user, wanted, label, now,
                None if expires_s is None else now + expires_s, None, None,
            )  # fmt: skip
            if self._g("token_add", partial(self.store.add, row)):
                self.audit.record("token", row.id, "create", None, token_state(row))
                return f"{PREFIX}{row.id}_{secret}", row
        raise RuntimeError("could not draw a free token id")

    def list(self) -> list[Any]:
        return list(self._g("token_list", self.store.list))

    def revoke(self, token_id: str) -> None:
        if re.fullmatch(r"[0-9a-f]{16}", token_id) is None:
            raise UserError(f"bad token id {token_id[:40]!r}: 16 hex digits (apm token list)")
        old = self._g("token_get", lambda: self.store.get(token_id))
        now = self.clock()
        if not self._g("token_revoke", lambda: self.store.revoke(token_id, now)):
            raise UserConflict(f"no token {token_id!r}")
        before = None if old is None else token_state(old)
        self.audit.record(
            "token", token_id, "revoke", before, {**(before or {}), "revoked_at": now}
        )
        with self._lock:
            self._checked.clear()  # this replica at once; the others within cache_s

    def verify(self, token: str) -> TokenHolder | None:
        """Who ``token`` acts for now, or None (unknown, wrong, expired, revoked, or its user
        is disabled). Raises StorageUnavailable when the tables cannot be read."""
        found = _TOKEN.fullmatch(token)
        if found is None:
            return None
        key, now = _digest(token), time.monotonic()
        with self._lock:
            cached = self._checked.get(key)
        if cached is not None and now - cached[1] < self.cache_s:
            holder = cached[0]
        else:
            holder = self._check(found.group(1), found.group(2))
            with self._lock:
                if len(self._checked) >= _CACHED:
                    self._checked.clear()
                self._checked[key] = (holder, now)
        if holder is None:
            return None
        if holder.expires_at is not None and holder.expires_at <= self.clock():
            return None
        self._touch(holder.token_id, now)
        return holder

    def _check(self, token_id: str, secret: str) -> TokenHolder | None:
        row = self._g("token_get", lambda: self.store.get(token_id))
        if row is None or not hmac.compare_digest(row.digest, _digest(secret)):
            return None
        if row.revoked_at is not None:
            return None
        if row.expires_at is not None and row.expires_at <= self.clock():
            return None
        has = self.users.role(row.user)
        if has is None or row.role not in ROLES:
            return None
        role = row.role if allows(has, row.role) else has  # never above the user's role now
        return TokenHolder(row.user, role, row.label, row.id, row.expires_at)

    def _touch(self, token_id: str, now: float) -> None:
        with self._lock:
            if now - self._touched.get(token_id, -self.touch_s) < self.touch_s:
                return
            self._touched[token_id] = now
        try:
            self._g("token_touch", lambda: self.store.touch(token_id, self.clock()))
        except StorageUnavailable:  # the token was checked: a lost last use is only a hint
            log.warning("could not record the last use of token %s", token_id)
