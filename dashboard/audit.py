"""The dashboard's side of the audit log (docs/security.md, Audit): who makes the current
request (:func:`request_actor`) and the one audit table over the app's repository
(:func:`audit_store_for`). The rows are written by :class:`storage.audit_log.AuditLog`, which
records a change only once it is stored; the app counts a row it could not write in
``apm_dashboard_audit_failures_total`` (:func:`dashboard_log`).

**Who.** A user's session; a user's API token, with its id and label; the built-in login and
``APM_DASHBOARD_TOKEN``, named as what they are. **From where:** the client's address as
Flask sees it, i.e. after ``APM_DASHBOARD_PROXY_HOPS``' ProxyFix (the address the trusted
proxies saw), as the login throttle counts it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from dashboard.guard import StorageUnavailable
from dashboard.telemetry import DashboardTelemetry
from storage.audit_log import Actor, AuditLog, lazy_store

__all__ = ["audit_store_for", "dashboard_log", "request_actor"]

_TOKEN_ID = re.compile(r"apm_([0-9a-f]{16})_")


def request_actor(built_in_token: str | None, label_of: Callable[[str], str | None]) -> Actor:
    """Who makes the current Flask request, as :mod:`dashboard.auth` let it through;
    ``label_of(token)`` is an API token's label (None: unknown). Outside a request: the
    dashboard itself."""
    from flask import g, has_request_context, request, session

    from dashboard.signin import same_secret

    if not has_request_context():
        return Actor("dashboard", "no request", "-")
    address = request.remote_addr or "-"
    user = g.get("apm_user") or "-"  # "-": not signed in yet (a sign-in that creates one)
    auth = request.authorization
    if request.path.startswith("/api/") and auth is not None and auth.type == "bearer":
        if built_in_token and same_secret(auth.token, built_in_token):
            return Actor("APM_DASHBOARD_TOKEN", "built-in token (admin)", address)
        found = _TOKEN_ID.match(auth.token or "")
        token_id = found.group(1) if found else "?"
        label = label_of(auth.token or "") if found else None
        via = f"token {token_id}" + (f" ({label})" if label else "")
        return Actor(str(user), via, address)
    if session.get("builtin", True):
        return Actor(str(user), "built-in login (admin)", address)
    return Actor(str(user), "session", address)


def dashboard_log(
    store: Callable[[], Any],
    telemetry: DashboardTelemetry,
    who: Callable[[], Actor],
    clock: Callable[[], float],
) -> AuditLog:
    """The app's audit log: a row it could not write is counted by kind on /metrics."""

    def failed(kind: str) -> None:
        telemetry.audit_failures.labels(kind).inc()

    return AuditLog(store, who, clock, failed)


def audit_store_for(repo: object) -> Callable[[], Any]:
    """The one :class:`storage.audit.AuditStore` over ``repo``'s Cassandra session, built (its
    table created) on first use; StorageUnavailable for a repository without one."""
    session, keyspace = getattr(repo, "session", None), getattr(repo, "keyspace", None)
    if session is None or not isinstance(keyspace, str):

        def missing() -> Any:
            raise StorageUnavailable("the audit log needs the Cassandra store")

        return missing
    return lazy_store(session, keyspace)
