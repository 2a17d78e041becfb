"""The dashboards' tables on the real Cassandra: create, read, list, update, delete, and the
share link's life (one per dashboard; replaced, revoked, or gone with its dashboard)."""

from __future__ import annotations

from typing import Any

import pytest

from storage.dashboards import DashboardStore, migrate_dashboards

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def store(cassandra_session: Any, storage_keyspace: str) -> DashboardStore:
    return DashboardStore(cassandra_session, storage_keyspace)


def test_create_get_list_update_delete(
    store: DashboardStore, cassandra_session: Any, storage_keyspace: str
) -> None:
    made = store.create({"name": "zz board", "panels": []}, 1_700_000_000.5)
    got = store.get(made.id)
    assert got is not None and got.body == {"name": "zz board", "panels": []}
    assert got.created_at == pytest.approx(1_700_000_000.5) and got.share_token is None
    assert made.id in [b.id for b in store.list()]
    assert store.update(made.id, {"name": "zz board", "panels": [{"id": "p1"}]}, 1_700_000_100)
    again = store.get(made.id)
    assert again is not None and again.body["panels"] == [{"id": "p1"}]
    assert again.updated_at == pytest.approx(1_700_000_100)
    assert store.delete(made.id) and store.get(made.id) is None
    # Gone stays gone: an edit after the delete does not bring it back.
    assert not store.update(made.id, {"name": "x"}, 1_700_000_200)
    assert store.get(made.id) is None and not store.delete(made.id)
    migrate_dashboards(cassandra_session, storage_keyspace)  # idempotent: a second run


def test_a_share_link_opens_only_its_dashboard_until_revoked_or_replaced(
    store: DashboardStore,
) -> None:
    a = store.create({"name": "a"}, 1.0)
    b = store.create({"name": "b"}, 1.0)
    assert store.shared("t-" + "x" * 40) is None
    assert store.share(a.id, "token-a1", 2.0)
    opened = store.shared("token-a1")
    assert opened is not None and opened.id == a.id
    # A second share replaces the first link.
    assert store.share(a.id, "token-a2", 3.0)
    assert store.shared("token-a1") is None
    assert store.shared("token-a2") is not None
    assert store.revoke(a.id) and store.shared("token-a2") is None
    assert not store.revoke(a.id)  # nothing left to revoke
    # A deleted dashboard's link dies with it; sharing a missing one stores nothing.
    assert store.share(b.id, "token-b", 4.0)
    assert store.delete(b.id) and store.shared("token-b") is None
    assert not store.share(b.id, "token-b2", 5.0) and store.shared("token-b2") is None
