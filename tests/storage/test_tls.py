"""Cassandra client TLS: StorageSettings' refusals, and (integration) the Repository writing
and reading over TLS on a node that ``apm stack``'s code started with
client_encryption_options, a client trusting another CA refused at the handshake."""

from __future__ import annotations

import ssl
import uuid
from pathlib import Path

import pytest
from cassandra.cluster import NoHostAvailable
from pydantic import ValidationError

from storage.repository import Repository
from storage.settings import StorageSettings
from tests.support.certs import make_ca


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    ca = make_ca(tmp_path_factory.mktemp("storage-tls"))
    cert, key = ca.issue("client")
    return {"ca": ca.cert, "cert": cert, "key": key}


@pytest.mark.unit
def test_plain_by_default_and_a_context_that_checks_the_chain_and_name(files):
    assert StorageSettings(_env_file=None).ssl_context() is None
    context = StorageSettings(tls=True, tls_ca=files["ca"]).ssl_context()
    assert context is not None and context.check_hostname
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert not StorageSettings(tls=True, tls_check_hostname=False).ssl_context().check_hostname


@pytest.mark.unit
@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"tls_ca": "ca"}, "APM_STORAGE_TLS_CA given but APM_STORAGE_TLS is off"),
        ({"tls": True, "tls_key": "key"}, "APM_STORAGE_TLS_CERT and APM_STORAGE_TLS_KEY go"),
        ({"tls": True, "tls_ca": "key"}, "APM_STORAGE_TLS_CA: .*not a PEM certificate"),
        ({"tls": True, "tls_ca": "missing"}, "APM_STORAGE_TLS_CA: .*missing: no such file"),
    ],
)
def test_bad_settings_are_refused_naming_the_variable(files, tmp_path, given, says):
    paths = {**files, "missing": tmp_path / "missing"}
    values = {k: paths[v] if isinstance(v, str) else v for k, v in given.items()}
    with pytest.raises(ValidationError, match=says):
        StorageSettings(**values)


@pytest.mark.unit
def test_the_environment_is_read(files, monkeypatch):
    monkeypatch.setenv("APM_STORAGE_TLS", "true")
    monkeypatch.setenv("APM_STORAGE_TLS_CA", str(files["ca"]))
    assert StorageSettings().tls_ca == files["ca"]
    assert StorageSettings(tls_check_hostname=False).ssl_context().check_hostname is False


@pytest.mark.integration
def test_repository_over_tls_and_another_ca_is_refused(tls_stack):
    engines = tls_stack.settings
    keyspace = f"tls_test_{uuid.uuid4().hex[:10]}"
    settings = StorageSettings(
        hosts=engines.host,
        port=engines.cassandra_port,
        keyspace=keyspace,
        tls=True,
        tls_ca=tls_stack.ca.cert,
        connect_timeout_s=10,
    )
    with Repository.connect(settings) as repo:
        try:
            saved = repo.save_query("FROM * SELECT cpu WINDOW 10s COMPUTE max")
            assert repo.get_query(saved.id) == saved
            host = repo.session.cluster.metadata.all_hosts()[0]
            assert repo.session.cluster.ssl_context is not None and host.is_up
        finally:
            repo.session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")

    wrong = settings.model_copy(update={"tls_ca": tls_stack.other_ca.cert})
    with pytest.raises(NoHostAvailable, match="certificate verify failed"):
        Repository.connect(wrong)
    plain = settings.model_copy(update={"tls": False, "tls_ca": None, "connect_timeout_s": 3})
    with pytest.raises(NoHostAvailable):
        Repository.connect(plain)


@pytest.mark.unit
def test_the_executors_java_writer_gets_the_same_tls(files):
    from aggregator.server_writes import ServerWrites

    assert StorageSettings().jvm_tls_conf() == {}
    settings = StorageSettings(
        tls=True, tls_ca=files["ca"], tls_cert=files["cert"], tls_key=files["key"]
    )
    conf = ServerWrites(settings, "apm").conf()
    assert {k: v for k, v in conf.items() if k.startswith("tls")} == {
        "tls": "true",
        "tls_check_hostname": "true",
        "tls_ca": str(files["ca"]),
        "tls_cert": str(files["cert"]),
        "tls_key": str(files["key"]),
    }
    unchecked = StorageSettings(tls=True, tls_check_hostname=False).jvm_tls_conf()
    assert unchecked == {"tls": "true", "tls_check_hostname": "false"}
