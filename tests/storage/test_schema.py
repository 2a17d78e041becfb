"""Migration against the real Cassandra: the contract's tables, idempotence, retention."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration


def _table(session, keyspace: str, table: str):
    return session.execute(
        "SELECT compaction, default_time_to_live FROM system_schema.tables "
        "WHERE keyspace_name = %s AND table_name = %s",
        (keyspace, table),
    ).one()


def _columns(session, keyspace: str, table: str) -> dict[str, tuple[str, str, str]]:
    rows = session.execute(
        "SELECT column_name, type, kind, clustering_order FROM system_schema.columns "
        "WHERE keyspace_name = %s AND table_name = %s",
        (keyspace, table),
    )
    return {r.column_name: (r.type, r.kind, r.clustering_order) for r in rows}


def test_migrate_creates_the_contract_schema_once(cassandra_session, fresh_keyspace):
    from storage.schema import TABLES, migrate, missing_tables

    keyspace = fresh_keyspace()
    assert missing_tables(cassandra_session, keyspace) == list(TABLES)
    changes = migrate(cassandra_session, keyspace, retention_days=7)
    assert len(changes) == 1 + len(TABLES)
    assert migrate(cassandra_session, keyspace, retention_days=7) == []  # idempotent
    assert missing_tables(cassandra_session, keyspace) == []

    results = _columns(cassandra_session, keyspace, "results")
    assert results["query_id"][1] == "partition_key"
    assert results["bucket"][:2] == ("int", "partition_key")
    assert results["window_start"] == ("timestamp", "clustering", "desc")
    assert results["vals"][0] == "frozen<map<text, double>>"
    assert results["samples"][0] == "bigint" and results["updated_at"][0] == "timestamp"
    options = _table(cassandra_session, keyspace, "results")
    assert options.compaction["class"].endswith("TimeWindowCompactionStrategy")
    assert options.default_time_to_live == 7 * 86_400

    queries = _columns(cassandra_session, keyspace, "queries")
    assert queries["id"][1] == "partition_key"
    assert queries["servers"][0] == "list<text>" and queries["functions"][0] == "list<text>"
    assert queries["paused"][0] == "boolean" and queries["window_seconds"][0] == "int"
    assert set(_columns(cassandra_session, keyspace, "servers")) == {"server", "last_seen"}
    assert set(_columns(cassandra_session, keyspace, "status")) == {
        "component",
        "payload",
        "updated_at",
    }


def test_migrate_aligns_the_ttl_with_a_new_retention(cassandra_session, fresh_keyspace):
    from storage.schema import migrate
    from storage.server_tables import SERVER_TABLES

    keyspace = fresh_keyspace()
    migrate(cassandra_session, keyspace, retention_days=30)
    changes = migrate(cassandra_session, keyspace, retention_days=2)
    assert changes and all(c.startswith("ttl") for c in changes)
    assert _table(cassandra_session, keyspace, "results").default_time_to_live == 2 * 86_400
    assert _table(cassandra_session, keyspace, "servers").default_time_to_live == 2 * 86_400
    # The bucket index outlives the rows it points to.
    assert _table(cassandra_session, keyspace, "result_buckets").default_time_to_live == 3 * 86_400
    for table, index in SERVER_TABLES.items():  # the per-server tables follow the retention too
        options = _table(cassandra_session, keyspace, table)
        assert options.default_time_to_live == (3 if index else 2) * 86_400, table
        if not index:
            assert options.compaction["class"].endswith("TimeWindowCompactionStrategy"), table
    assert migrate(cassandra_session, keyspace, retention_days=2) == []


@pytest.mark.parametrize("keyspace, retention", [("1bad", 30), ("bad-name", 30), ("ok", 0)])
def test_migrate_rejects_bad_arguments_before_touching_cassandra(
    cassandra_session, keyspace, retention
):
    from storage.schema import migrate

    with pytest.raises(ValueError):
        migrate(cassandra_session, keyspace, retention_days=retention)


def test_repository_refuses_an_unmigrated_keyspace(cassandra_session, fresh_keyspace):
    from storage.repository import Repository

    with pytest.raises(LookupError, match="apm storage migrate"):
        Repository(cassandra_session, fresh_keyspace())


def test_connect_creates_the_schema_and_owns_its_cluster(stack, cassandra_session, fresh_keyspace):
    from storage.repository import Repository
    from storage.schema import missing_tables
    from storage.settings import StorageSettings

    settings = StorageSettings(
        hosts=stack.host, port=stack.cassandra_port, keyspace=fresh_keyspace(), retention_days=3
    )
    with Repository.connect(settings) as repo:
        saved = repo.save_query("FROM * SELECT cpu WINDOW 1m COMPUTE avg")
        assert repo.get_query(saved.id) == saved
    assert missing_tables(cassandra_session, settings.keyspace) == []
    assert repo.session.is_shutdown
    assert (
        _table(cassandra_session, settings.keyspace, "results").default_time_to_live == 3 * 86_400
    )


def test_migrate_adds_active_since_to_a_queries_table_from_before_it(
    cassandra_session, fresh_keyspace
):
    from storage.repository import Repository
    from storage.schema import migrate, missing_tables

    ks = fresh_keyspace()
    migrate(cassandra_session, ks, 7)
    cassandra_session.execute(f"ALTER TABLE {ks}.queries DROP active_since")  # an old table
    assert missing_tables(cassandra_session, ks) == ["queries.active_since"]
    with pytest.raises(LookupError, match=r"queries\.active_since"):
        Repository(cassandra_session, ks)
    assert migrate(cassandra_session, ks, 7) == [f"column {ks}.queries.active_since"]
    assert missing_tables(cassandra_session, ks) == []
    assert migrate(cassandra_session, ks, 7) == []
    saved = Repository(cassandra_session, ks).save_query("FROM * SELECT cpu WINDOW 1m COMPUTE avg")
    assert saved.active_from == saved.created_at.timestamp()  # type: ignore[union-attr]
