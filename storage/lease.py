"""A lease in Cassandra: at most one holder of a name at a time, for ``ttl_s`` seconds after
its last renewal. Taken with a lightweight transaction (``INSERT ... IF NOT EXISTS``), renewed
with one (``UPDATE ... IF holder = me``), both writing the row with a TTL, so a holder killed
with ``kill -9`` loses the lease ``ttl_s`` after its last renewal and another process takes it.

Cassandra's TTL runs on the coordinator's clock: two processes may briefly both believe they
hold it when a renewal is late (a paused process). Its users make that harmless: the alert
evaluator's writes are idempotent (a window's transition and a notice's id are the same
whoever computes them), so an overlap rewrites rows, never adds a transition.
"""

from __future__ import annotations

from typing import Any

from storage.settings import keyspace_error

__all__ = ["Lease", "migrate_leases"]


def migrate_leases(session: Any, keyspace: str) -> None:
    if (err := keyspace_error(keyspace)) is not None:
        raise ValueError(err)
    session.execute(
        f"CREATE TABLE IF NOT EXISTS {keyspace}.leases (name text PRIMARY KEY, holder text)"
    )


class Lease:
    def __init__(self, session: Any, keyspace: str, name: str, holder: str, ttl_s: int) -> None:
        migrate_leases(session, keyspace)
        self.session, self.name, self.holder, self.ttl_s = session, name, holder, int(ttl_s)
        ks, prep = keyspace, session.prepare
        self._take = prep(
            f"INSERT INTO {ks}.leases (name, holder) VALUES (?, ?) IF NOT EXISTS USING TTL ?"
        )
        self._renew = prep(
            f"UPDATE {ks}.leases USING TTL ? SET holder = ? WHERE name = ? IF holder = ?"
        )
        self._release = prep(f"DELETE FROM {ks}.leases WHERE name = ? IF holder = ?")
        self._read = prep(f"SELECT holder FROM {ks}.leases WHERE name = ?")

    def acquire(self) -> bool:
        """Renews the lease if this holder has it, else takes it if free: True if held now."""
        renewed = self.session.execute(
            self._renew, (self.ttl_s, self.holder, self.name, self.holder)
        )
        if renewed.was_applied:
            return True
        taken = self.session.execute(self._take, (self.name, self.holder, self.ttl_s))
        return bool(taken.was_applied)

    def release(self) -> None:
        """Gives the lease up at once (a clean stop), so a standby need not wait out the TTL."""
        self.session.execute(self._release, (self.name, self.holder))

    def current(self) -> str | None:
        """Who holds the lease now (None: nobody)."""
        row = self.session.execute(self._read, (self.name,)).one()
        return None if row is None else row[0]
