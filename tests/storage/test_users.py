"""The users' table on the real Cassandra, and the in-memory stand-in the unit tests use
(tests/support/users.py) held to the same contract: add refuses an existing name, a change of
a missing user is False (and creates nothing), list is by name, disabled is kept."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from storage.users import UserStore, migrate_users
from tests.support.users import MemoryUsers


@pytest.fixture(params=["cassandra", "memory"])
def store(request: pytest.FixtureRequest, store_on: Callable[..., Any]) -> Any:
    return store_on(request.param, UserStore, MemoryUsers)


def test_the_users_contract(store: Any) -> None:
    prefix = f"u{uuid.uuid4().hex[:8]}"
    a, b = f"{prefix}-b", f"{prefix}-a"
    assert store.add(a, "viewer", "scrypt:hash-a", 1_700_000_000.5)
    assert not store.add(a, "admin", "scrypt:other", 1_700_000_001)  # kept as it was
    got = store.get(a)
    assert got is not None and (got.role, got.password_hash, got.disabled) == (
        "viewer",
        "scrypt:hash-a",
        False,
    )
    assert got.created_at == pytest.approx(1_700_000_000.5)
    assert store.add(b, "editor", "scrypt:hash-b", 1_700_000_000)
    names = [u.name for u in store.list()]
    assert names.index(b) < names.index(a)  # by name: "...-a" < "...-b"
    assert store.set_role(a, "admin", 1_700_000_100)
    assert store.set_disabled(a, True, 1_700_000_200)
    again = store.get(a)
    assert again is not None and again.role == "admin" and again.disabled
    assert again.updated_at == pytest.approx(1_700_000_200)
    assert store.set_disabled(a, False, 1_700_000_300) and not store.get(a).disabled
    ghost = f"ghost{uuid.uuid4().hex[:8]}"
    assert not store.set_role(ghost, "admin", 1) and not store.set_disabled(ghost, True, 1)
    assert store.get(ghost) is None and ghost not in [u.name for u in store.list()]


@pytest.mark.integration
def test_the_migration_is_idempotent_and_checks_the_keyspace(
    cassandra_session: Any, storage_keyspace: str
) -> None:
    migrate_users(cassandra_session, storage_keyspace)
    migrate_users(cassandra_session, storage_keyspace)
    with pytest.raises(ValueError):
        migrate_users(cassandra_session, "bad-keyspace;")
