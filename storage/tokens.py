"""The dashboard's API tokens: one row per token with its user, role, label, expiry,
revocation and last use, and the SHA-256 digest of its secret (computed and checked by
``dashboard.api_tokens``; the token itself is never stored). Their own migration, created on
first use and idempotent, like ``storage.users``.

A token is revoked, never deleted, so that its row still says who made what with it; a
revocation is ``IF EXISTS`` (it never creates a row), adding is ``IF NOT EXISTS``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from storage.codec import epoch, to_ms
from storage.driver import profile_for
from storage.settings import keyspace_error

__all__ = ["StoredToken", "TokenStore", "migrate_tokens"]

_COLS = "id, digest, user_name, role, label, created_at, expires_at, revoked_at, last_used_at"


def migrate_tokens(session: Any, keyspace: str) -> None:
    """Creates the tokens' table if it is missing (the keyspace must exist)."""
    if (err := keyspace_error(keyspace)) is not None:
        raise ValueError(err)
    session.execute(
        f"CREATE TABLE IF NOT EXISTS {keyspace}.dashboard_tokens (id text PRIMARY KEY, "
        "digest text, user_name text, role text, label text, created_at timestamp, "
        "expires_at timestamp, revoked_at timestamp, last_used_at timestamp)"
    )


@dataclass(frozen=True)
class StoredToken:
    id: str
    digest: str
    user: str
    role: str
    label: str
    created_at: float
    expires_at: float | None  # None: never
    revoked_at: float | None
    last_used_at: float | None


class TokenStore:
    """The tokens of ``keyspace`` on ``session`` (the table is created if missing)."""

    def __init__(self, session: Any, keyspace: str) -> None:
        migrate_tokens(session, keyspace)
        self.session, self.profile = session, profile_for(session)
        ks, prep = keyspace, session.prepare
        self._insert = prep(
            f"INSERT INTO {ks}.dashboard_tokens ({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, null, null) "
            "IF NOT EXISTS"
        )
        self._revoke = prep(
            f"UPDATE {ks}.dashboard_tokens SET revoked_at = ? WHERE id = ? IF EXISTS"
        )
        # Not a transaction: a last use is a hint, and the row exists (it was just read).
        self._touch = prep(f"UPDATE {ks}.dashboard_tokens SET last_used_at = ? WHERE id = ?")
        self._get = prep(f"SELECT {_COLS} FROM {ks}.dashboard_tokens WHERE id = ?")
        self._all = prep(f"SELECT {_COLS} FROM {ks}.dashboard_tokens")
        for stmt in (self._get, self._all, self._touch):
            stmt.is_idempotent = True

    def _run(self, stmt: Any, params: tuple[Any, ...]) -> Any:
        return self.session.execute(stmt, params, execution_profile=self.profile)

    @staticmethod
    def _row(row: Any) -> StoredToken:
        return StoredToken(
            row[0], row[1], row[2] or "", row[3] or "", row[4] or "", epoch(row[5]) or 0.0,
            epoch(row[6]), epoch(row[7]), epoch(row[8]),
        )  # fmt: skip

    def add(self, token: StoredToken) -> bool:
        """Stores a new token; False when its id is taken (nothing is written)."""
        expires = None if token.expires_at is None else to_ms(token.expires_at)
        params = (token.id, token.digest, token.user, token.role, token.label)
        return bool(
            self._run(self._insert, (*params, to_ms(token.created_at), expires)).was_applied
        )

    def get(self, token_id: str) -> StoredToken | None:
        rows = list(self._run(self._get, (token_id,)))
        return self._row(rows[0]) if rows and rows[0][1] else None

    def list(self) -> list[StoredToken]:
        """Every token, oldest first (a full scan: tokens are few)."""
        rows = (self._row(r) for r in self._run(self._all, ()) if r[1])
        return sorted(rows, key=lambda t: (t.created_at, t.id))

    def revoke(self, token_id: str, now: float) -> bool:
        """False when there is no such token."""
        return bool(self._run(self._revoke, (to_ms(now), token_id)).was_applied)

    def touch(self, token_id: str, now: float) -> None:
        self._run(self._touch, (to_ms(now), token_id))
