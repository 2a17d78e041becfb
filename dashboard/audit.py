"""Recording the audit log (docs/security.md, Audit): an :class:`apm.audit.Recorder` that
writes one row of :mod:`storage.audit` per change, with who made it and from where.

**The order.** A service records a change only after its store said the change was made (a
write that raised or was not applied records nothing), so no row says that a failed write
happened. The row is written after the change, not with it: Cassandra has no transaction
over two tables. When the audit insert fails, the change stays made, the failure is logged
(``audit: could not record ...``) and counted in ``apm_dashboard_audit_failures_total`` on
``/metrics`` by kind; the caller's answer is unchanged. A missing row is possible, a false
one is not.

**Who.** :func:`request_actor` in the dashboard (a user's session, a user's API token with
its id and label, the built-in login or ``APM_DASHBOARD_TOKEN`` named as what they are;
the client's address as Flask sees it, i.e. after ``APM_DASHBOARD_PROXY_HOPS``' ProxyFix);
:func:`command_actor` for ``apm user`` and ``apm token`` (the OS user and the host).
"""

from __future__ import annotations

import getpass
import json
import logging
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dashboard.guard import StorageUnavailable
from dashboard.telemetry import DashboardTelemetry
from storage.errors import is_unavailable

__all__ = [
    "MAX_STATE_CHARS",
    "Actor",
    "AuditTrail",
    "audit_store_for",
    "bounded_json",
    "command_actor",
    "request_actor",
]

log = logging.getLogger(__name__)

# A before or after past this is kept as its head, marked truncated: a dashboard with many
# panels must not make a row of megabytes.
MAX_STATE_CHARS = 16_384
_TOKEN_ID = re.compile(r"apm_([0-9a-f]{16})_")


@dataclass(frozen=True)
class Actor:
    name: str  # a user's name, or what acted when no user did
    via: str
    address: str


def bounded_json(value: Any) -> str | None:
    """``value`` as JSON (None stays None), at most :data:`MAX_STATE_CHARS` characters: past it,
    ``{"truncated": true, "chars": n, "head": "<the first characters>"}``."""
    if value is None:
        return None
    text = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    if len(text) <= MAX_STATE_CHARS:
        return text
    keep = MAX_STATE_CHARS - 100
    while True:  # the head is escaped again inside the string: cut until it fits
        out = json.dumps(
            {"truncated": True, "chars": len(text), "head": text[:keep]}, ensure_ascii=False
        )
        if len(out) <= MAX_STATE_CHARS:
            return out
        keep = max(0, min(keep - 1, keep * MAX_STATE_CHARS // len(out) - 100))


def command_actor(command: str) -> Actor:
    """Who runs ``command`` (``apm user``, ``apm token``) on this host: whoever can reach
    Cassandra with the platform's settings, named by their OS login."""
    try:
        login = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry, no LOGNAME (a bare container)
        login = "unknown"
    return Actor(login, command, f"local ({socket.gethostname()})")


class AuditTrail:
    """Rows of ``store()`` (a :class:`storage.audit.AuditStore`, built on first use) for the
    changes made by ``who()``."""

    def __init__(
        self,
        store: Callable[[], Any],
        telemetry: DashboardTelemetry,
        who: Callable[[], Actor],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store, self.telemetry, self.who, self.clock = store, telemetry, who, clock

    def record(self, kind: str, object_id: str, action: str, before: Any, after: Any) -> None:
        from storage.audit import AuditRow, new_at

        try:
            actor = self.who()
            row = AuditRow(
                new_at(self.clock()), actor.name[:200], actor.via[:200], actor.address[:200],
                kind, object_id[:200], action, bounded_json(before), bounded_json(after),
            )  # fmt: skip
            self.store().add(row)
        except Exception as exc:  # the change is made: say so loudly, never undo or fail it
            self.telemetry.audit_failures.labels(kind).inc()
            if is_unavailable(exc) or isinstance(exc, StorageUnavailable):  # no stack to read
                log.error("audit: could not record %s %s %s: %s", action, kind, object_id, exc)
            else:
                log.exception("audit: could not record %s %s %s", action, kind, object_id)


def request_actor(built_in_token: str | None, label_of: Callable[[str], str | None]) -> Actor:
    """Who makes the current Flask request, as :mod:`dashboard.auth` let it through;
    ``label_of(token)`` is an API token's label (None: unknown). Outside a request: the
    dashboard itself."""
    from flask import g, has_request_context, request, session

    from dashboard.signin import same_secret

    if not has_request_context():
        return Actor("dashboard", "no request", "-")
    address = request.remote_addr or "-"
    user = g.get("apm_user")
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


def audit_store_for(repo: object, retention_days: int | None = None) -> Callable[[], Any]:
    """The one :class:`storage.audit.AuditStore` over ``repo``'s Cassandra session, built (its
    table created) on first use; ``retention_days`` defaults to
    ``APM_STORAGE_AUDIT_RETENTION_DAYS``. StorageUnavailable for a repository without one."""
    made: list[Any] = []
    lock = threading.Lock()

    def store() -> Any:
        with lock:
            if not made:
                from storage.audit import AuditStore
                from storage.settings import StorageSettings

                session, keyspace = getattr(repo, "session", None), getattr(repo, "keyspace", None)
                if session is None or not isinstance(keyspace, str):
                    raise StorageUnavailable("the audit log needs the Cassandra store")
                days = retention_days or StorageSettings().audit_retention_days
                made.append(AuditStore(session, keyspace, days))
            return made[0]

    return store
