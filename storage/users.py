"""The dashboard's users: one row per user with its role, its password hash (computed and
checked by ``dashboard.users``; this module does not interpret it) and whether it is
disabled. Their own migration, created on first use and idempotent, like ``storage.alerts``.

Adding is a lightweight transaction (``IF NOT EXISTS``), so two ``apm user add`` of one name
do not overwrite each other; a role change or a disable is ``IF EXISTS``, so it never creates
a user without a password.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from storage.codec import epoch, to_ms
from storage.driver import profile_for
from storage.settings import keyspace_error

__all__ = ["StoredUser", "UserStore", "migrate_users"]

_COLS = "name, role, password_hash, disabled, created_at, updated_at"


def migrate_users(session: Any, keyspace: str) -> None:
    """Creates the users' table if it is missing (the keyspace must exist)."""
    if (err := keyspace_error(keyspace)) is not None:
        raise ValueError(err)
    session.execute(
        f"CREATE TABLE IF NOT EXISTS {keyspace}.dashboard_users (name text PRIMARY KEY, "
        "role text, password_hash text, disabled boolean, created_at timestamp, "
        "updated_at timestamp)"
    )


@dataclass(frozen=True)
class StoredUser:
    name: str
    role: str
    password_hash: str
    disabled: bool
    created_at: float
    updated_at: float


class UserStore:
    """The users of ``keyspace`` on ``session`` (the table is created if missing)."""

    def __init__(self, session: Any, keyspace: str) -> None:
        migrate_users(session, keyspace)
        self.session, self.profile = session, profile_for(session)
        ks, prep = keyspace, session.prepare
        self._insert = prep(
            f"INSERT INTO {ks}.dashboard_users ({_COLS}) VALUES (?, ?, ?, false, ?, ?) "
            "IF NOT EXISTS"
        )
        self._set_role = prep(
            f"UPDATE {ks}.dashboard_users SET role = ?, updated_at = ? WHERE name = ? IF EXISTS"
        )
        self._set_disabled = prep(
            f"UPDATE {ks}.dashboard_users SET disabled = ?, updated_at = ? WHERE name = ? IF EXISTS"
        )
        self._get = prep(f"SELECT {_COLS} FROM {ks}.dashboard_users WHERE name = ?")
        self._all = prep(f"SELECT {_COLS} FROM {ks}.dashboard_users")
        for stmt in (self._get, self._all):
            stmt.is_idempotent = True

    def _run(self, stmt: Any, params: tuple[Any, ...]) -> Any:
        return self.session.execute(stmt, params, execution_profile=self.profile)

    @staticmethod
    def _row(row: Any) -> StoredUser:
        return StoredUser(
            row[0],
            row[1] or "",
            row[2] or "",
            bool(row[3]),
            epoch(row[4]) or 0.0,
            epoch(row[5]) or 0.0,
        )

    def add(self, name: str, role: str, password_hash: str, now: float) -> bool:
        """Stores a new user; False when one of that name exists (it is left as it was)."""
        params = (name, role, password_hash, to_ms(now), to_ms(now))
        return bool(self._run(self._insert, params).was_applied)

    def get(self, name: str) -> StoredUser | None:
        rows = list(self._run(self._get, (name,)))
        return self._row(rows[0]) if rows and rows[0][2] else None

    def list(self) -> list[StoredUser]:
        """Every user by name (a full scan: users are few)."""
        return sorted((self._row(r) for r in self._run(self._all, ()) if r[2]), key=_by_name)

    def set_role(self, name: str, role: str, now: float) -> bool:
        """False when there is no such user."""
        return bool(self._run(self._set_role, (role, to_ms(now), name)).was_applied)

    def set_disabled(self, name: str, disabled: bool, now: float) -> bool:
        """False when there is no such user."""
        return bool(self._run(self._set_disabled, (disabled, to_ms(now), name)).was_applied)


def _by_name(user: StoredUser) -> str:
    return user.name
