"""The audit log's table on the real Cassandra, and the in-memory stand-in the unit tests use
(tests/support/audit.py) held to the same contract: a day's rows newest first, a slice
strictly below a time UUID, days apart; and on Cassandra, every row carries the retention as
its TTL."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from storage.audit import AuditRow, AuditStore, day_of, migrate_audit, new_at
from tests.support.audit import MemoryAudit


@pytest.fixture(params=["cassandra", "memory"])
def store(request: pytest.FixtureRequest, store_on: Callable[..., Any]) -> Any:
    return store_on(request.param, lambda s, ks: AuditStore(s, ks, 7), lambda: MemoryAudit(7))


def _row(ts: float, object_id: str, actor: str = "alice") -> AuditRow:
    return AuditRow(
        new_at(ts), actor, "session", "10.0.0.7", "query", object_id, "update",
        '{"text": "old"}', '{"text": "new"}',
    )  # fmt: skip


def test_the_audit_contract(store: Any) -> None:
    # A day of our own, far from any other test's (ids are unique too).
    base = 1_500_000_000.0 + uuid.uuid4().int % 10_000 * 86_400
    tag = uuid.uuid4().hex[:8]
    rows = [_row(base + i, f"{tag}-{i}") for i in range(5)]
    yesterday = _row(base - 86_400, f"{tag}-y")
    for row in (*rows, yesterday):
        store.add(row)
    day = day_of(base)
    assert day_of(base + 4) == day != day_of(base - 86_400)
    got = store.day(day, None, 100)
    assert [r.object_id for r in got] == [f"{tag}-{i}" for i in (4, 3, 2, 1, 0)]
    assert got[0] == rows[4] and got[0].ts == pytest.approx(base + 4, abs=0.001)
    assert [r.object_id for r in store.day(day, rows[3].at, 2)] == [f"{tag}-2", f"{tag}-1"]
    assert store.day(day, rows[0].at, 10) == []
    assert [r.object_id for r in store.day(day - timedelta(days=1), None, 10)] == [f"{tag}-y"]
    assert store.day(day + timedelta(days=1), None, 10) == []
    assert store.retention_days == 7


@pytest.mark.integration
def test_each_row_lives_the_retention(cassandra_session: Any, storage_keyspace: str) -> None:
    store = AuditStore(cassandra_session, storage_keyspace, retention_days=3)
    row = _row(1_400_000_000.0 + uuid.uuid4().int % 10_000, uuid.uuid4().hex)
    store.add(row)
    ttl = cassandra_session.execute(
        f"SELECT TTL(actor) FROM {storage_keyspace}.audit_log WHERE day = %s AND at = %s",
        (row.day.isoformat(), row.at),
    ).one()[0]
    assert 3 * 86_400 - 60 < ttl <= 3 * 86_400


@pytest.mark.integration
def test_the_migration_is_idempotent_and_checks_its_input(
    cassandra_session: Any, storage_keyspace: str
) -> None:
    migrate_audit(cassandra_session, storage_keyspace)
    migrate_audit(cassandra_session, storage_keyspace)
    with pytest.raises(ValueError):
        migrate_audit(cassandra_session, "bad-keyspace;")
    for days in (0, 3651):
        with pytest.raises(ValueError, match="1 to 3650 days"):
            AuditStore(cassandra_session, storage_keyspace, days)
