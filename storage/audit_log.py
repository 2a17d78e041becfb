"""Recording the audit log (docs/security.md, Audit): :class:`AuditLog`, the
:class:`apm.audit.Recorder` that writes one row of :mod:`storage.audit` per change with who
made it and from where, and :class:`AuditedQueries`, the repository's query writes recorded.
The dashboard, ``apm user``, ``apm token``, ``apm query`` and ``apm alert`` all record
through these; who acts is theirs to say (:func:`command_actor` for a command).

**The order.** A service records a change only after its store said the change was made (a
write that raised or was not applied records nothing), so no row says that a failed write
happened. The row is written after the change, not with it: Cassandra has no transaction
over two tables. When the audit insert fails, the change stays made, the failure is logged
(``audit: could not record ...``) and handed to ``failed(kind)`` (the dashboard counts it in
``apm_dashboard_audit_failures_total``); the caller's answer is unchanged. A missing row is
possible, a false one is not.
"""

from __future__ import annotations

import getpass
import json
import logging
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from apm.audit import Recorder
from apm.query import StoredQuery
from storage.audit import AuditRow, AuditStore, new_at

__all__ = [
    "MAX_STATE_CHARS",
    "Actor",
    "AuditLog",
    "AuditedQueries",
    "bounded_json",
    "command_actor",
    "command_log",
    "lazy_store",
    "query_state",
]

log = logging.getLogger(__name__)

# A before or after past this is kept as its head, marked truncated: a dashboard with many
# panels must not make a row of megabytes.
MAX_STATE_CHARS = 16_384


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
    """Who runs ``command`` (``apm user``, ``apm query``, ...) on this host: whoever can reach
    Cassandra with the platform's settings, named by their OS login."""
    try:
        login = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry, no LOGNAME (a bare container)
        login = "unknown"
    return Actor(login, command, f"local ({socket.gethostname()})")


class AuditLog:
    """Rows of ``store()`` (an :class:`storage.audit.AuditStore`, built on first use) for the
    changes made by ``who()``; ``failed(kind)`` hears of each row that could not be written."""

    def __init__(
        self,
        store: Callable[[], Any],
        who: Callable[[], Actor],
        clock: Callable[[], float] = time.time,
        failed: Callable[[str], None] = lambda kind: None,
    ) -> None:
        self.store, self.who, self.clock, self.failed = store, who, clock, failed

    def record(self, kind: str, object_id: str, action: str, before: Any, after: Any) -> None:
        try:
            actor = self.who()
            row = AuditRow(
                new_at(self.clock()), actor.name[:200], actor.via[:200], actor.address[:200],
                kind, object_id[:200], action, bounded_json(before), bounded_json(after),
            )  # fmt: skip
            self.store().add(row)
        except Exception as exc:  # the change is made: say so loudly, never undo or fail it
            self.failed(kind)
            log.error("audit: could not record %s %s %s: %r", action, kind, object_id, exc)
            log.debug("audit: the failure", exc_info=True)


def lazy_store(
    session: Any, keyspace: str, retention_days: int | None = None
) -> Callable[[], AuditStore]:
    """The one :class:`AuditStore` of ``keyspace``, built (its table created) on first use;
    ``retention_days`` defaults to ``APM_STORAGE_AUDIT_RETENTION_DAYS``."""
    made: list[AuditStore] = []
    lock = threading.Lock()

    def store() -> AuditStore:
        with lock:
            if not made:
                from storage.settings import StorageSettings

                days = retention_days or StorageSettings().audit_retention_days
                made.append(AuditStore(session, keyspace, days))
            return made[0]

    return store


def command_log(repo: Any, command: str) -> AuditLog:
    """The audit log over ``repo``'s keyspace (its table created at the first change) for
    changes made by ``command``."""
    actor = command_actor(command)
    return AuditLog(lazy_store(repo.session, repo.keyspace), lambda: actor)


def query_state(stored: StoredQuery | None) -> dict[str, Any] | None:
    """What the audit log keeps of a query: its text and whether it is paused."""
    return None if stored is None else {"text": stored.text, "paused": stored.paused}


class AuditedQueries:
    """A repository whose query writes are each followed by one :meth:`Recorder.record` once
    they returned (a write that raised, or a delete of nothing, records nothing). Reads, and
    anything else of the repository (its session, keyspace), pass through unchanged."""

    def __init__(self, repo: Any, audit: Recorder) -> None:
        self._repo, self._audit = repo, audit

    def __getattr__(self, name: str) -> Any:
        if name == "_repo":  # not set yet (a copy being made): no endless lookup
            raise AttributeError(name)
        return getattr(self._repo, name)

    def save_query(self, text: str) -> StoredQuery:
        made = self._repo.save_query(text)
        self._audit.record("query", made.id, "create", None, query_state(made))
        return made

    def update_query(self, query_id: str, text: str) -> StoredQuery:
        before = self._repo.get_query(query_id)
        after = self._repo.update_query(query_id, text)
        self._audit.record("query", query_id, "update", query_state(before), query_state(after))
        return after

    def set_paused(self, query_id: str, paused: bool) -> StoredQuery:
        before = self._repo.get_query(query_id)
        after = self._repo.set_paused(query_id, paused)
        if before is None or before.paused != after.paused:  # a resume of an active one: none
            action = "pause" if paused else "resume"
            self._audit.record("query", query_id, action, query_state(before), query_state(after))
        return after

    def delete_query(self, query_id: str) -> bool:
        before = self._repo.get_query(query_id)
        gone = bool(self._repo.delete_query(query_id))
        if gone:
            self._audit.record("query", query_id, "delete", query_state(before), None)
        return gone
