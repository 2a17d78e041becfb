"""The API tokens' table on the real Cassandra, and the in-memory stand-in the unit tests use
(tests/support/tokens.py) held to the same contract: add refuses a taken id, a revocation of
a missing token is False (and creates nothing), list is oldest first, last use is kept."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

import pytest

from storage.tokens import StoredToken, TokenStore, migrate_tokens
from tests.support.tokens import MemoryTokens


@pytest.fixture(params=["cassandra", "memory"])
def store(request: pytest.FixtureRequest, store_on: Callable[..., Any]) -> Any:
    return store_on(request.param, TokenStore, MemoryTokens)


def _token(created: float, expires: float | None) -> StoredToken:
    return StoredToken(
        secrets.token_hex(8), "ab" * 32, "alice", "viewer", "grafana", created, expires, None, None
    )


def test_the_tokens_contract(store: Any) -> None:
    first, second = _token(1_700_000_000.5, 1_700_086_400.0), _token(1_700_000_001, None)
    assert store.add(first) and store.add(second)
    assert not store.add(StoredToken(first.id, "cd" * 32, "eve", "admin", "", 1, None, None, None))
    got = store.get(first.id)
    assert got is not None and got.digest == "ab" * 32 and got.user == "alice"
    assert (got.role, got.label, got.revoked_at, got.last_used_at) == (
        "viewer",
        "grafana",
        None,
        None,
    )
    assert got.created_at == pytest.approx(1_700_000_000.5)
    assert got.expires_at == pytest.approx(1_700_086_400.0)
    assert store.get(second.id).expires_at is None
    ids = [t.id for t in store.list()]
    assert ids.index(first.id) < ids.index(second.id)
    store.touch(first.id, 1_700_000_050)
    assert store.revoke(first.id, 1_700_000_100)
    again = store.get(first.id)
    assert again.revoked_at == pytest.approx(1_700_000_100)
    assert again.last_used_at == pytest.approx(1_700_000_050)
    ghost = secrets.token_hex(8)
    assert not store.revoke(ghost, 1) and store.get(ghost) is None


@pytest.mark.integration
def test_the_migration_is_idempotent_and_checks_the_keyspace(
    cassandra_session: Any, storage_keyspace: str
) -> None:
    migrate_tokens(cassandra_session, storage_keyspace)
    migrate_tokens(cassandra_session, storage_keyspace)
    with pytest.raises(ValueError):
        migrate_tokens(cassandra_session, "bad-keyspace;")
