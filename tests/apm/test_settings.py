"""The one settings rule (apm.settings): an explicit argument wins, else the service's own
variable, else the shared one, else the default; for every service that talks to Kafka, and
for Cassandra through the storage settings."""

from __future__ import annotations

import pytest
from pydantic import AliasChoices

from agent.settings import AgentSettings
from aggregator.settings import AggregatorSettings
from apm.kafka_tls import FIELDS as KAFKA_TLS
from apm.settings import KAFKA_BOOTSTRAP, SHARED, env_names, shared
from dashboard.settings import DashboardSettings
from ingest.settings import IngestSettings
from loadgen.settings import LoadgenSettings
from storage.settings import StorageSettings

pytestmark = pytest.mark.unit

KAFKA_CLIENTS = {
    IngestSettings: "APM_INGEST_",
    AggregatorSettings: "APM_AGGREGATOR_",
    DashboardSettings: "APM_DASHBOARD_",
    LoadgenSettings: "APM_LOADGEN_",
}
EVERY_CLASS = (*KAFKA_CLIENTS, StorageSettings, AgentSettings)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    """No APM_* variable of the machine running the tests leaks in."""
    for cls in EVERY_CLASS:
        for name in env_names(cls):
            monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("cls", list(KAFKA_CLIENTS), ids=lambda c: c.__name__)
def test_kafka_bootstrap_argument_then_own_then_shared_then_default(cls, monkeypatch):
    own = KAFKA_CLIENTS[cls] + "KAFKA_BOOTSTRAP"
    assert cls().kafka_bootstrap == KAFKA_BOOTSTRAP == "127.0.0.1:9092"
    monkeypatch.setenv("APM_KAFKA_BOOTSTRAP", "shared:9092")
    assert cls().kafka_bootstrap == "shared:9092"
    monkeypatch.setenv(own, "own:9092")
    assert cls().kafka_bootstrap == "own:9092"
    assert cls(kafka_bootstrap="arg:9092").kafka_bootstrap == "arg:9092"
    assert cls.model_validate({"kafka_bootstrap": "arg:9092"}).kafka_bootstrap == "arg:9092"
    # The service's own variable alone, and an argument over the shared one alone.
    monkeypatch.delenv("APM_KAFKA_BOOTSTRAP")
    assert cls().kafka_bootstrap == "own:9092"
    monkeypatch.delenv(own)
    monkeypatch.setenv("APM_KAFKA_BOOTSTRAP", "shared:9092")
    assert cls(kafka_bootstrap="arg:9092").kafka_bootstrap == "arg:9092"


@pytest.mark.parametrize("cls", list(KAFKA_CLIENTS), ids=lambda c: c.__name__)
def test_another_services_variable_or_an_unprefixed_one_is_not_read(cls, monkeypatch):
    for prefix in KAFKA_CLIENTS.values():
        if prefix != KAFKA_CLIENTS[cls]:
            monkeypatch.setenv(prefix + "KAFKA_BOOTSTRAP", "other:9092")
    monkeypatch.setenv("KAFKA_BOOTSTRAP", "bare:9092")
    assert cls().kafka_bootstrap == KAFKA_BOOTSTRAP


def test_the_loadgen_flag_wins_over_both_variables(monkeypatch):
    import argparse

    from loadgen import cli

    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers())
    monkeypatch.setenv("APM_KAFKA_BOOTSTRAP", "shared:9092")
    monkeypatch.setenv("APM_LOADGEN_KAFKA_BOOTSTRAP", "own:9092")
    assert cli._settings(parser.parse_args(["loadgen"])).kafka_bootstrap == "own:9092"
    args = parser.parse_args(["loadgen", "--kafka-bootstrap", "flag:9092"])
    assert cli._settings(args).kafka_bootstrap == "flag:9092"


def test_other_fields_keep_their_prefix_and_arguments(monkeypatch):
    monkeypatch.setenv("APM_INGEST_PORT", "9000")
    monkeypatch.setenv("APM_PORT", "1")  # not a shared setting: never read
    assert IngestSettings().port == 9000
    assert IngestSettings(port=9001).port == 9001


@pytest.mark.parametrize(
    ("field", "var", "default", "value"),
    [
        ("hosts", "APM_STORAGE_HOSTS", "127.0.0.1", "c1,c2"),
        ("port", "APM_STORAGE_PORT", 9042, 19042),
        ("keyspace", "APM_STORAGE_KEYSPACE", "apm", "apm_prod"),
    ],
)
def test_cassandra_argument_then_storage_variable_then_default(
    field, var, default, value, monkeypatch
):
    assert getattr(StorageSettings(), field) == default
    monkeypatch.setenv(var, str(value))
    assert getattr(StorageSettings(), field) == value
    assert getattr(StorageSettings(**{field: default}), field) == default


def test_the_old_cassandra_variables_are_read_by_nothing(monkeypatch):
    for name in ("APM_CASSANDRA_HOSTS", "APM_CASSANDRA_PORT", "APM_CASSANDRA_KEYSPACE"):
        assert not any(name in env_names(cls) for cls in EVERY_CLASS)
        monkeypatch.setenv(name, "nope")
    assert StorageSettings().hosts == "127.0.0.1"


def test_the_aggregator_store_reads_the_storage_variables(monkeypatch):
    """The aggregator keeps no Cassandra settings of its own: its store is StorageSettings."""
    from storage import repository

    monkeypatch.setenv("APM_STORAGE_HOSTS", "c1,c2")
    seen = []
    monkeypatch.setattr(
        repository.Repository,
        "connect",
        classmethod(lambda cls, settings=None, **kw: seen.append(settings)),
    )
    from aggregator.store import connect_store

    connect_store("ks_1")
    assert seen[0].host_list == ["c1", "c2"] and seen[0].keyspace == "ks_1"
    assert not {f for f in AggregatorSettings.model_fields if "cassandra" in f or "hosts" in f}
    assert not {f for f in DashboardSettings.model_fields if "cassandra" in f or "hosts" in f}


def test_shared_fields_name_their_own_prefix_first():
    """An alias bypasses env_prefix: the helper's prefix must be the class's."""
    for cls in EVERY_CLASS:
        prefix = cls.model_config["env_prefix"]
        for name, info in cls.model_fields.items():
            if isinstance(info.validation_alias, AliasChoices):
                assert info.validation_alias.choices == [
                    f"{prefix}{name}".upper(),
                    f"APM_{name}".upper(),
                ], (cls, name)
                assert name in SHARED


def test_env_names_lists_what_a_class_reads():
    names = env_names(IngestSettings)
    assert {"APM_INGEST_PORT", "APM_INGEST_KAFKA_BOOTSTRAP", "APM_KAFKA_BOOTSTRAP"} <= names
    # Beside its own, the shared Kafka variables: the bootstrap and TLS (apm.kafka_tls).
    shared_kafka = {"APM_KAFKA_BOOTSTRAP"} | {f"APM_KAFKA_{f.upper()}" for f in KAFKA_TLS}
    assert shared_kafka <= names
    assert all(n.startswith("APM_INGEST_") for n in names - shared_kafka)
    assert "APM_STORAGE_HOSTS" in env_names(StorageSettings)


def test_shared_refuses_an_unknown_name():
    with pytest.raises(KeyError, match="not a shared setting"):
        shared("APM_X_", "cassandra_hosts")
