"""The dashboard's users as ``apm user`` and the login use them: names, roles
(:mod:`dashboard.roles`) and passwords checked here, stored by :class:`storage.users.UserStore`.

Passwords are hashed with scrypt (werkzeug's ``generate_password_hash`` over the standard
library's ``hashlib.scrypt``, a random 16-character salt) at :data:`SCRYPT` parameters:
N = 2**15, r = 8, p = 1, i.e. 32 MiB of memory and some tens of milliseconds of CPU per check,
so a stolen table is slow to guess offline. The login throttle (:mod:`dashboard.throttle`)
runs before any check. An unknown or disabled user costs the same hash as a known one, so the
answer's time does not tell which names exist.

A user of the auth proxy (:mod:`dashboard.auth_proxy`) is created by :meth:`UserDirectory.sign_up`
with :data:`NO_PASSWORD` in place of a hash: no password matches it, so it signs in only
through the proxy.

A signed-in user's role is read again on each request (:meth:`UserDirectory.role`), cached
for ``cache_s`` seconds: a role change or a disable reaches open sessions within that time.
When Cassandra cannot be read, the last role read is used until it can (a blip does not sign
everybody out); a user never read by this process is then refused with a 503.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import Any

from werkzeug.security import check_password_hash, generate_password_hash

from apm.audit import NO_AUDIT, Recorder
from dashboard.guard import StorageUnavailable, guarded
from dashboard.roles import parse_role
from dashboard.telemetry import DashboardTelemetry

__all__ = [
    "MAX_PASSWORD_CHARS",
    "MIN_PASSWORD_CHARS",
    "NO_PASSWORD",
    "SCRYPT",
    "UserConflict",
    "UserDirectory",
    "UserError",
    "name_error",
]

SCRYPT = "scrypt:32768:8:1"  # werkzeug's method string: scrypt:N:r:p
MIN_PASSWORD_CHARS = 8
# scrypt reads the whole password; a megabyte one would cost the same as a short one, but
# nobody types more than this.
MAX_PASSWORD_CHARS = 1024
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
# Stored for a user of the auth proxy: not a werkzeug hash (those start with a method name), so
# no password matches it; non-empty, since the table reads an empty hash as no user.
NO_PASSWORD = "!auth-proxy: no password"
# Checked against for an unknown or disabled name: the same cost as a real check.
_DUMMY = generate_password_hash("not a password of anyone", method=SCRYPT)


class UserError(ValueError):
    """Refused input: a bad name, role or password."""


class UserConflict(UserError):
    """A user that exists (add) or does not (a change)."""


def name_error(name: str) -> str | None:
    """Why ``name`` cannot name a user, or None."""
    if _NAME.fullmatch(name) is None:
        return (
            f"bad user name {name[:70]!r}: 1 to 64 letters, digits, '.', '_', '@' or '-', "
            "starting with a letter or digit"
        )
    return None


def _password_error(password: str) -> str | None:
    if len(password) < MIN_PASSWORD_CHARS:
        return f"the password must be at least {MIN_PASSWORD_CHARS} characters"
    if len(password) > MAX_PASSWORD_CHARS:
        return f"the password must be at most {MAX_PASSWORD_CHARS} characters"
    return None


class UserDirectory:
    """Users over a :class:`storage.users.UserStore` (any object with its methods)."""

    def __init__(
        self,
        store: Any,
        telemetry: DashboardTelemetry,
        clock: Callable[[], float] = time.time,
        cache_s: float = 5.0,
        audit: Recorder = NO_AUDIT,
    ) -> None:
        self.store, self.telemetry, self.clock, self.cache_s = store, telemetry, clock, cache_s
        # Records each change once stored; whoever knows who acts sets it (apm user does).
        self.audit = audit
        self._lock = threading.Lock()
        # name -> (role: None when disabled or unknown, whether it exists, read at)
        self._roles: dict[str, tuple[str | None, bool, float]] = {}

    def _g(self, op: str, call: Callable[[], Any]) -> Any:
        return guarded(self.telemetry, op, call)

    def add(self, name: str, role: str, password: str) -> None:
        if (err := name_error(name) or _password_error(password)) is not None:
            raise UserError(err)
        role = self._role_arg(role)
        hashed = generate_password_hash(password, method=SCRYPT)
        if not self._g("user_add", lambda: self.store.add(name, role, hashed, self.clock())):
            raise UserConflict(f"user {name!r} exists (apm user set-role to change its role)")
        self.audit.record("user", name, "create", None, {"role": role, "disabled": False})

    def sign_up(self, name: str, role: str) -> bool:
        """Adds ``name`` with ``role`` and no password (:data:`NO_PASSWORD`): a user of the auth
        proxy. False when a user of that name exists (it is left as it was)."""
        if (err := name_error(name)) is not None:
            raise UserError(err)
        role = self._role_arg(role)
        added = bool(
            self._g("user_add", lambda: self.store.add(name, role, NO_PASSWORD, self.clock()))
        )
        with self._lock:
            if added:
                self._roles[name] = (role, True, time.monotonic())
            else:
                self._roles.pop(name, None)  # read it afresh: it is someone else's now
        if added:
            self.audit.record(
                "user", name, "create", None, {"role": role, "disabled": False, "by": "auth proxy"}
            )
        return added

    def list(self) -> list[Any]:
        return list(self._g("user_list", self.store.list))

    def set_role(self, name: str, role: str) -> None:
        role = self._role_arg(role)
        self._change(
            "user_set_role", name, lambda: self.store.set_role(name, role, self.clock()),
            "set_role", {"role": role},
        )  # fmt: skip

    def set_disabled(self, name: str, disabled: bool) -> None:
        self._change(
            "user_disable", name, lambda: self.store.set_disabled(name, disabled, self.clock()),
            "disable" if disabled else "enable", {"disabled": disabled},
        )  # fmt: skip

    def verify(self, name: str, password: str) -> str | None:
        """The role of the enabled user ``name`` whose password this is, else None."""
        user = None
        if name_error(name) is None and len(password) <= MAX_PASSWORD_CHARS:
            user = self._g("user_get", lambda: self.store.get(name))
        if user is None or user.disabled or user.password_hash == NO_PASSWORD:
            check_password_hash(_DUMMY, password[:MAX_PASSWORD_CHARS])
            return None
        try:
            ok = check_password_hash(user.password_hash, password)
        except (ValueError, TypeError):  # a malformed stored hash refuses, never crashes
            ok = False
        return user.role if ok else None

    def role(self, name: str) -> str | None:
        """The role of the enabled user ``name`` now (None: unknown or disabled)."""
        return self.state(name)[0]

    def state(self, name: str) -> tuple[str | None, bool]:
        """``(role, exists)`` of ``name`` now: the role is None for a disabled or unknown user,
        ``exists`` tells which (the auth proxy creates only an unknown one)."""
        now = time.monotonic()
        with self._lock:
            cached = self._roles.get(name)
        if cached is not None and now - cached[2] < self.cache_s:
            return cached[0], cached[1]
        try:
            user = self._g("user_get", lambda: self.store.get(name))
        except StorageUnavailable:
            if cached is None:
                raise
            return cached[0], cached[1]  # the last state read, until Cassandra answers again
        role = None if user is None or user.disabled else user.role
        with self._lock:
            self._roles[name] = (role, user is not None, now)
        return role, user is not None

    def _change(
        self, op: str, name: str, call: Callable[[], bool], action: str, change: dict[str, Any]
    ) -> None:
        if (err := name_error(name)) is not None:
            raise UserError(err)
        old = self._g("user_get", lambda: self.store.get(name))
        if not self._g(op, call):
            raise UserConflict(f"no user {name!r}")
        # Never the password hash: the log says what a user may do, not how to be one.
        before = None if old is None else {"role": old.role, "disabled": old.disabled}
        self.audit.record("user", name, action, before, {**(before or {}), **change})
        with self._lock:
            self._roles.pop(name, None)

    @staticmethod
    def _role_arg(role: str) -> str:
        try:
            return parse_role(role)
        except ValueError as exc:
            raise UserError(str(exc)) from None
