"""Single sign-on behind an authenticating proxy, as Grafana's ``auth.proxy``: the proxy (nginx
with the company's SSO, oauth2-proxy, ...) signs the person in and names them in a header
(``APM_DASHBOARD_AUTH_PROXY_HEADER``, ``X-WEBAUTH-USER`` by default); the dashboard believes
that header only from the proxies' own addresses (:mod:`dashboard.proxy_trust`).

- From a trusted proxy, the header names a user of :mod:`dashboard.users` and the request acts
  as that user with its stored role, so ``apm user set-role`` raises it. A name never seen
  becomes a user with the default role and no password (auto sign-up, on by default); a
  disabled user is a 403. A value that is not a user name (``apm user add``'s rules) is a 400
  naming the header.
- From any other address the header is ignored, as if it were not there: the request is an
  ordinary one (a session or the login page). Each is counted
  (``apm_dashboard_refused{reason="untrusted_proxy_header"}``) and logged at most once a
  minute, with how many there were.

The login hook (:mod:`dashboard.auth`) gives such a request a session of its own (the same
signed cookie and CSRF token as a login's), so a state-changing request through the proxy
still needs the CSRF token: the proxy's header is as ambient as a cookie. A session opened
this way is accepted only beside the header naming its user from a trusted proxy, so a proxy
that stops sending it (the person signed out of the SSO) ends it on the next request.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dashboard.proxy_trust import is_trusted, parse_networks
from dashboard.settings import DashboardSettings
from dashboard.telemetry import DashboardTelemetry
from dashboard.users import UserDirectory, name_error

__all__ = ["LOG_EVERY_S", "MAX_HEADER_CHARS", "AuthProxy", "ProxyRefusal", "ProxyUser"]

log = logging.getLogger(__name__)

# A user name is at most 64 characters; a longer value is refused before any other check.
MAX_HEADER_CHARS = 64
LOG_EVERY_S = 60.0  # ignored headers are logged at most this often (each is counted)


@dataclass(frozen=True)
class ProxyUser:
    name: str
    role: str


@dataclass(frozen=True)
class ProxyRefusal:
    status: int  # 400 (a bad header), 403 (a disabled or unknown user) or 503
    error: str
    detail: str
    at: str | None


class AuthProxy:
    """Who a request names through the auth proxy. ``users`` gives the users' directory
    (:func:`dashboard.signin.users_for`); None, or one that gives None, has no users (503)."""

    def __init__(
        self,
        settings: DashboardSettings,
        users: Callable[[], UserDirectory | None] | None,
        telemetry: DashboardTelemetry,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.header = settings.auth_proxy_header
        self.networks = parse_networks(settings.auth_proxy_trusted)
        self.auto_sign_up = settings.auth_proxy_auto_sign_up
        self.default_role = settings.auth_proxy_default_role
        self._users, self._telemetry, self._clock = users, telemetry, clock
        self._lock = threading.Lock()
        self._ignored = 0
        self._logged_at: float | None = None

    def identify(self, headers: Any, peer: str | None) -> ProxyUser | ProxyRefusal | None:
        """The user a request from ``peer`` (the connection's address) names, a refusal, or
        None when the request does not come through the proxy (no header, or an untrusted
        address). ``headers`` is werkzeug's ``request.headers``. Raises StorageUnavailable
        when the users' table cannot be read."""
        value = headers.get(self.header)
        if value is None:
            return None
        if not is_trusted(peer, self.networks):
            self._ignore(peer)
            return None
        # The header sent twice reaches WSGI joined by ", ": not a name, so a 400 below.
        if len(value) > MAX_HEADER_CHARS:
            return self._bad(
                f"the {self.header} header is {len(value)} characters; a user name is at most "
                f"{MAX_HEADER_CHARS}"
            )
        if (err := name_error(value)) is not None:
            return self._bad(f"the {self.header} header from the auth proxy: {err}")
        directory = self._users() if self._users is not None else None
        if directory is None:
            return ProxyRefusal(
                503, "unavailable", "the auth proxy's users need the user store", None
            )
        role, exists = directory.state(value)
        if role is None and not exists and self.auto_sign_up:
            if directory.sign_up(value, self.default_role):
                log.info("auth proxy: user %r signed up with the role %s", value, self.default_role)
                self._telemetry.logins.labels("proxy_sign_up").inc()
                return ProxyUser(value, self.default_role)
            role, exists = directory.state(value)  # another replica made it just now
        if role is not None:
            return ProxyUser(value, role)
        self._telemetry.refused.labels("proxy_user").inc()
        if exists:
            detail = f"the user {value!r} is disabled (an admin can: apm user enable {value})"
        else:
            detail = (
                f"{value!r} is not a user of this dashboard and auto sign-up is off "
                f"(APM_DASHBOARD_AUTH_PROXY_AUTO_SIGN_UP); an admin can: apm user add {value}"
            )
        return ProxyRefusal(403, "forbidden", detail, f"header:{self.header}")

    def _bad(self, detail: str) -> ProxyRefusal:
        self._telemetry.refused.labels("proxy_header").inc()
        return ProxyRefusal(400, "bad_request", detail, f"header:{self.header}")

    def _ignore(self, peer: str | None) -> None:
        self._telemetry.refused.labels("untrusted_proxy_header").inc()
        now = self._clock()
        with self._lock:
            self._ignored += 1
            if self._logged_at is not None and now - self._logged_at < LOG_EVERY_S:
                return
            count, self._ignored, self._logged_at = self._ignored, 0, now
        log.warning(
            "auth proxy: ignored the %s header of %d request(s) from addresses that are not "
            "trusted proxies (the last from %s; APM_DASHBOARD_AUTH_PROXY_TRUSTED); they were "
            "answered as requests without it",
            self.header,
            count,
            peer or "an unknown address",
        )
