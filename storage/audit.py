"""The audit log's table: one row per change made to a query, a dashboard, an alert rule, a
silence, a share link, a user or a token, written by ``dashboard.audit`` after the change
itself was stored. Its own migration, created on first use and idempotent, like
``storage.users``.

Partitioned by UTC day (``day``, ``YYYY-MM-DD``) and clustered by a time UUID, newest first:
reading a time range back from now is one slice of each day's partition, and no partition
grows past a day of changes. Each row carries a TTL (``APM_STORAGE_AUDIT_RETENTION_DAYS``,
:data:`DEFAULT_RETENTION_DAYS`), so the log forgets on its own; a day's partition goes once
its last row has expired.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from cassandra.util import datetime_from_uuid1, uuid_from_time

from storage.driver import profile_for
from storage.settings import keyspace_error

__all__ = [
    "DEFAULT_RETENTION_DAYS",
    "AuditRow",
    "AuditStore",
    "day_of",
    "migrate_audit",
    "new_at",
]

DEFAULT_RETENTION_DAYS = 400  # a year and a bit: last year's change is still there to read
_COLS = "day, at, actor, via, address, kind, object_id, action, before, after"


def migrate_audit(session: Any, keyspace: str) -> None:
    """Creates the audit log's table if it is missing (the keyspace must exist)."""
    if (err := keyspace_error(keyspace)) is not None:
        raise ValueError(err)
    session.execute(
        f"CREATE TABLE IF NOT EXISTS {keyspace}.audit_log (day text, at timeuuid, "
        "actor text, via text, address text, kind text, object_id text, action text, "
        "before text, after text, PRIMARY KEY ((day), at)) "
        "WITH CLUSTERING ORDER BY (at DESC)"
    )


def day_of(ts: float) -> date:
    """The UTC day (the partition) of epoch seconds ``ts``."""
    return datetime.fromtimestamp(ts, UTC).date()


@dataclass(frozen=True)
class AuditRow:
    at: uuid.UUID  # a version-1 (time) UUID: when, and unique within the day
    actor: str  # who: a user's name, or what acted (the built-in token, a command)
    via: str  # how: a session, a token (its id and label), the built-in login, a command
    address: str  # the client's address as the dashboard saw it, or the command's host
    kind: str  # query, dashboard, alert_rule, silence, share_link, user, token
    object_id: str
    action: str  # create, update, delete, pause, resume, revoke, set_role, ...
    before: str | None  # JSON (bounded by the writer), None: the object did not exist
    after: str | None  # JSON, None: it does not exist any more

    @property
    def ts(self) -> float:
        """Epoch seconds of ``at``."""
        return datetime_from_uuid1(self.at).replace(tzinfo=UTC).timestamp()

    @property
    def day(self) -> date:
        return day_of(self.ts)


def new_at(ts: float) -> uuid.UUID:
    """A fresh time UUID for ``ts`` (random node and sequence: two rows never share one)."""
    return uuid_from_time(ts)


class AuditStore:
    """The audit log of ``keyspace`` on ``session`` (the table is created if missing); rows
    live ``retention_days``."""

    def __init__(
        self, session: Any, keyspace: str, retention_days: int = DEFAULT_RETENTION_DAYS
    ) -> None:
        if not 1 <= retention_days <= 3650:
            raise ValueError(f"audit retention must be 1 to 3650 days, not {retention_days}")
        migrate_audit(session, keyspace)
        self.session, self.profile = session, profile_for(session)
        self.retention_days = retention_days
        ks, prep = keyspace, session.prepare
        # Not idempotent to the driver: a retried insert is the same row (same key), but a
        # write is never retried blindly here; a failure is the caller's to count.
        self._insert = prep(
            f"INSERT INTO {ks}.audit_log ({_COLS}) VALUES ({', '.join('?' * 10)}) USING TTL ?"
        )
        self._top = prep(f"SELECT {_COLS} FROM {ks}.audit_log WHERE day = ? LIMIT ?")
        self._below = prep(f"SELECT {_COLS} FROM {ks}.audit_log WHERE day = ? AND at < ? LIMIT ?")
        for stmt in (self._top, self._below):
            stmt.is_idempotent = True

    def _run(self, stmt: Any, params: tuple[Any, ...]) -> Any:
        return self.session.execute(stmt, params, execution_profile=self.profile)

    def add(self, row: AuditRow) -> None:
        params = (
            row.day.isoformat(), row.at, row.actor, row.via, row.address, row.kind,
            row.object_id, row.action, row.before, row.after, self.retention_days * 86_400,
        )  # fmt: skip
        self._run(self._insert, params)

    def day(self, day: date, below: uuid.UUID | None, limit: int) -> list[AuditRow]:
        """Up to ``limit`` rows of ``day``, newest first, strictly older than ``below``."""
        if below is None:
            rows = self._run(self._top, (day.isoformat(), limit))
        else:
            rows = self._run(self._below, (day.isoformat(), below, limit))
        return [AuditRow(*r[1:]) for r in rows]
