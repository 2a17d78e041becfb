"""The stored queries as the dashboard changes them, with each change recorded in the audit
log: the repository's writes, each followed by one :meth:`apm.audit.Recorder.record` once it
returned (a write that raised, or a delete of nothing, records nothing). Reads, and anything
else of the repository (its session, keyspace), pass through unchanged.

The API and the pages reach the repository only through :class:`dashboard.context.AppContext`,
and :func:`dashboard.app.create_app` puts this wrapper there: every query change made through
the dashboard goes through it."""

from __future__ import annotations

from typing import Any

from apm.audit import Recorder
from apm.query import StoredQuery

__all__ = ["AuditedQueries", "query_state"]


def query_state(stored: StoredQuery | None) -> dict[str, Any] | None:
    """What the audit log keeps of a query: its text and whether it is paused."""
    return None if stored is None else {"text": stored.text, "paused": stored.paused}


class AuditedQueries:
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
