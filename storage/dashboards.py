"""The saved dashboards' tables: ``dashboards`` (one row per dashboard, its panels as JSON text
written and read by ``dashboard.boards``; this module does not interpret them) and
``dashboard_shares`` (share token -> dashboard). Their own migration, created on first use
and idempotent, like ``storage.alerts``: the results schema and the processes that only read
results are untouched by them.

A dashboard has at most one share link. Its token is in both tables: the share row finds the
dashboard from a link, the dashboard's own ``share_token`` confirms it, so that a share row
left behind by a revocation that failed half-way does not open the dashboard again.
"""

from __future__ import annotations

import calendar
import json
import uuid
from dataclasses import dataclass
from typing import Any

from storage.driver import profile_for
from storage.settings import keyspace_error

__all__ = ["DASHBOARD_TABLES", "DashboardStore", "StoredBoard", "migrate_dashboards"]

DASHBOARD_TABLES = ("dashboards", "dashboard_shares")
_COLS = "id, body, share_token, created_at, updated_at"


def migrate_dashboards(session: Any, keyspace: str) -> None:
    """Creates the dashboards' tables that are missing (the keyspace must exist)."""
    if (err := keyspace_error(keyspace)) is not None:
        raise ValueError(err)
    session.execute(
        f"CREATE TABLE IF NOT EXISTS {keyspace}.dashboards (id text PRIMARY KEY, body text, "
        "share_token text, created_at timestamp, updated_at timestamp)"
    )
    session.execute(
        f"CREATE TABLE IF NOT EXISTS {keyspace}.dashboard_shares "
        "(link text PRIMARY KEY, dashboard_id text, created_at timestamp)"
    )


@dataclass(frozen=True)
class StoredBoard:
    id: str
    body: dict[str, Any]
    share_token: str | None
    created_at: float
    updated_at: float


def _ms(ts: float) -> int:
    return round(ts * 1000)


def _epoch(value: Any) -> float:
    # The driver gives naive UTC datetimes for timestamps.
    if value is None:
        return 0.0
    return calendar.timegm(value.utctimetuple()) + value.microsecond / 1e6


class DashboardStore:
    """The dashboards of ``keyspace`` on ``session`` (the tables are created if missing)."""

    def __init__(self, session: Any, keyspace: str) -> None:
        migrate_dashboards(session, keyspace)
        self.session, self.profile = session, profile_for(session)
        ks, prep = keyspace, session.prepare
        self._insert = prep(
            f"INSERT INTO {ks}.dashboards (id, body, created_at, updated_at) "
            "VALUES (?, ?, ?, ?) IF NOT EXISTS"
        )
        # LWTs: an edit or a share of a dashboard deleted meanwhile does not bring it back.
        self._update = prep(
            f"UPDATE {ks}.dashboards SET body = ?, updated_at = ? WHERE id = ? IF EXISTS"
        )
        self._set_token = prep(f"UPDATE {ks}.dashboards SET share_token = ? WHERE id = ? IF EXISTS")
        self._delete = prep(f"DELETE FROM {ks}.dashboards WHERE id = ? IF EXISTS")
        self._get = prep(f"SELECT {_COLS} FROM {ks}.dashboards WHERE id = ?")
        self._all = prep(f"SELECT {_COLS} FROM {ks}.dashboards")
        self._put_share = prep(
            f"INSERT INTO {ks}.dashboard_shares (link, dashboard_id, created_at) VALUES (?, ?, ?)"
        )
        self._get_share = prep(f"SELECT dashboard_id FROM {ks}.dashboard_shares WHERE link = ?")
        self._del_share = prep(f"DELETE FROM {ks}.dashboard_shares WHERE link = ?")
        for stmt in (self._get, self._all, self._put_share, self._get_share, self._del_share):
            stmt.is_idempotent = True

    def _run(self, stmt: Any, params: tuple[Any, ...]) -> Any:
        return self.session.execute(stmt, params, execution_profile=self.profile)

    @staticmethod
    def _row(row: Any) -> StoredBoard:
        return StoredBoard(row[0], json.loads(row[1]), row[2], _epoch(row[3]), _epoch(row[4]))

    def create(self, body: dict[str, Any], now: float) -> StoredBoard:
        board_id = str(uuid.uuid4())
        self._run(self._insert, (board_id, json.dumps(body), _ms(now), _ms(now)))
        return StoredBoard(board_id, body, None, now, now)

    def get(self, board_id: str) -> StoredBoard | None:
        rows = list(self._run(self._get, (board_id,)))
        # A half-written row (a share set on a dashboard being deleted) has no body.
        return self._row(rows[0]) if rows and rows[0][1] is not None else None

    def list(self) -> list[StoredBoard]:
        """Every dashboard, by name then id (a full scan: dashboards are few)."""
        boards = [self._row(r) for r in self._run(self._all, ()) if r[1] is not None]
        return sorted(boards, key=lambda b: (str(b.body.get("name", "")).lower(), b.id))

    def update(self, board_id: str, body: dict[str, Any], now: float) -> bool:
        """Replaces a dashboard's body (panels in their new order); False if there is none."""
        return bool(self._run(self._update, (json.dumps(body), _ms(now), board_id)).was_applied)

    def delete(self, board_id: str) -> bool:
        found = self.get(board_id)
        if found is None:
            return False
        if found.share_token:
            self._run(self._del_share, (found.share_token,))
        return bool(self._run(self._delete, (board_id,)).was_applied)

    def share(self, board_id: str, token: str, now: float) -> bool:
        """Makes ``token`` the dashboard's one share link (an earlier link stops working);
        False if there is no such dashboard."""
        found = self.get(board_id)
        if found is None:
            return False
        self._run(self._put_share, (token, board_id, _ms(now)))
        if not self._run(self._set_token, (token, board_id)).was_applied:
            self._run(self._del_share, (token,))
            return False
        if found.share_token and found.share_token != token:
            self._run(self._del_share, (found.share_token,))
        return True

    def revoke(self, board_id: str) -> bool:
        """Ends the dashboard's share link; False if it had none (or there is no dashboard)."""
        found = self.get(board_id)
        if found is None or not found.share_token:
            return False
        # The dashboard's own token first: once it is gone, the link is refused even if
        # deleting the share row then fails.
        self._run(self._set_token, (None, board_id))
        self._run(self._del_share, (found.share_token,))
        return True

    def shared(self, token: str) -> StoredBoard | None:
        """The dashboard ``token`` opens, or None (unknown, revoked or replaced)."""
        rows = list(self._run(self._get_share, (token,)))
        if not rows:
            return None
        found = self.get(rows[0][0])
        return found if found is not None and found.share_token == token else None
