"""The agent pushing to the real ingest over HTTPS, on the real Kafka, with a CA made by the
test (tests.support.certs): the agent's own wiring (agent.runner from its settings) verifies
the ingest against ``tls_ca``; a wrong CA logs the host and the reason, counts the failure and
keeps the whole spool until the CA is fixed, in the settings or in the file; an ingest that
requires client certificates takes the agent's and refuses a missing or foreign one."""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.exposition import render
from agent.runner import Agent
from apm.model import topic_for
from tests.support.certs import make_ca
from tests.support.https_ingest import StartIngest, https_ingests
from tests.support.kafka import read_samples

pytestmark = pytest.mark.integration


@pytest.fixture
def https_ingest(tmp_path: Path, kafka_bootstrap: str) -> Iterator[StartIngest]:
    with https_ingests(tmp_path, kafka_bootstrap) as start:
        yield start


@pytest.fixture
def metric(unique_name: Callable[[str], str], own_topics: list[str]) -> str:
    name = unique_name("tlsag").replace("-", "_") + ".m"
    own_topics.append(topic_for(name))
    return name


def _agent(make_settings: Callable[..., Any], **tls: Any) -> Agent:
    return Agent(make_settings(**tls), statsd=False)


def _spool(agent: Agent, metric: str, count: int, start: int = 0) -> None:
    now = int(time.time())
    for i in range(start, start + count):
        snapshot = {"server": "web-1", "ts": now - 30 + i, "metrics": {metric: float(i)}}
        agent.spool.append(json.dumps(snapshot).encode())


def _drain(agent: Agent) -> None:
    deadline = time.monotonic() + 60
    while agent.pusher.push_once() is not None:
        assert time.monotonic() < deadline, "the spool did not drain"


def _values(kafka_bootstrap: str, metric: str) -> list[float]:
    return sorted(v for _t, _s, _ts, v in read_samples(kafka_bootstrap, [topic_for(metric)]))


def _refused_once(agent: Agent, caplog: pytest.LogCaptureFixture, depth: int) -> str:
    """One push that fails in TLS: logged, counted, the spool untouched. Returns the log."""
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="agent.push"):
        delay = agent.pusher.push_once()
    assert delay is not None and delay > 0.5  # the configuration schedule, not 10 ms
    assert agent.spool.depth == depth and agent.stats.pushed == 0
    assert agent.stats.rejected == 0
    return caplog.text


@pytest.mark.parametrize("fix", ["settings", "ca_file"])
def test_a_wrong_ca_keeps_the_spool_and_everything_arrives_once_it_is_fixed(
    tmp_path, https_ingest, make_settings, metric, kafka_bootstrap, caplog, fix: str
) -> None:
    ca, other = make_ca(tmp_path / "ca"), make_ca(tmp_path / "other", name="other")
    url, key = https_ingest(ca)
    trusted = tmp_path / "trusted.pem"
    shutil.copy(other.cert, trusted)
    agent = _agent(make_settings, ingest_url=url, api_key=key, tls_ca=trusted)
    _spool(agent, metric, 5)
    for attempt in (1, 2):
        text = _refused_once(agent, caplog, 5)
        assert agent.stats.tls_errors == attempt
    netloc = url.split("/")[2]
    assert f"TLS: the certificate of {netloc} is not trusted" in text
    assert "unable to get local issuer certificate" in text
    assert "The spool keeps all 5 snapshots" in text
    assert "apm_agent_push_tls_errors_total 2.0" in render(agent.stats, agent.spool)
    assert _values(kafka_bootstrap, metric) == []  # nothing got through
    _spool(agent, metric, 2, start=5)  # collection goes on meanwhile
    if fix == "settings":  # the config corrected, the agent restarted on the same spool
        agent.spool.close()
        agent = _agent(make_settings, ingest_url=url, api_key=key, tls_ca=ca.cert)
    else:  # the CA file replaced in place: the next connection uses it, no restart
        shutil.copy(ca.cert, trusted)
    _drain(agent)
    assert agent.spool.depth == 0 and agent.stats.pushed == 7
    assert _values(kafka_bootstrap, metric) == [float(i) for i in range(7)]


def test_a_client_certificate_is_presented_to_an_ingest_that_requires_one(
    tmp_path, https_ingest, make_settings, metric, kafka_bootstrap, caplog
) -> None:
    ca, clients = make_ca(tmp_path / "ca"), make_ca(tmp_path / "clients", name="clients")
    foreign = make_ca(tmp_path / "foreign", name="foreign")
    url, key = https_ingest(ca, client_ca=clients.cert)
    base = {"ingest_url": url, "api_key": key, "tls_ca": ca.cert}

    without = _agent(make_settings, **base)
    _spool(without, metric, 3)
    # Under TLS 1.3 the refusal comes after the client's handshake: a reset or an EOF on a
    # fresh connection, told apart from an outage (agent.tls.TlsRefused).
    assert "check tls_cert and tls_key" in _refused_once(without, caplog, 3)
    assert without.stats.tls_errors == 1
    without.spool.close()

    cert, private = foreign.issue("agent", cn="web-1")
    stranger = _agent(make_settings, **base, tls_cert=cert, tls_key=private)
    assert "check tls_cert and tls_key" in _refused_once(stranger, caplog, 3)
    assert stranger.stats.tls_errors == 1
    stranger.spool.close()
    assert _values(kafka_bootstrap, metric) == []

    cert, private = clients.issue("agent", cn="web-1")
    accepted = _agent(make_settings, **base, tls_cert=cert, tls_key=private)
    _drain(accepted)
    assert accepted.stats.pushed == 3 and accepted.stats.tls_errors == 0
    assert _values(kafka_bootstrap, metric) == [0.0, 1.0, 2.0]


def test_a_client_certificate_stands_in_for_the_api_key_when_the_ingest_says_so(
    tmp_path, https_ingest, make_settings, metric, kafka_bootstrap, caplog
) -> None:
    """APM_INGEST_TLS_CLIENT_AUTH=instead_of_key: an agent with a certificate from the
    clients' CA and no api_key is let in; one that sends a wrong key beside its certificate
    is still refused (401, a push blocked), and a foreign certificate at the handshake."""
    ca, clients = make_ca(tmp_path / "ca"), make_ca(tmp_path / "clients", name="clients")
    foreign = make_ca(tmp_path / "foreign", name="foreign")
    url, key = https_ingest(ca, client_ca=clients.cert, client_auth="instead_of_key")
    base = {"ingest_url": url, "tls_ca": ca.cert}

    cert, private = foreign.issue("agent", cn="web-1")
    stranger = _agent(make_settings, **base, tls_cert=cert, tls_key=private)
    _spool(stranger, metric, 3)
    assert "check tls_cert and tls_key" in _refused_once(stranger, caplog, 3)
    stranger.spool.close()

    cert, private = clients.issue("agent", cn="web-1")
    # The agents share one spool (make_settings' directory): the same 3 snapshots each time.
    wrong = _agent(make_settings, **base, api_key=key + "x", tls_cert=cert, tls_key=private)
    assert wrong.pusher.push_once() is not None
    assert wrong.spool.depth == 3 and wrong.stats.pushed == 0
    assert wrong.stats.blocked_status == 401
    wrong.spool.close()
    assert _values(kafka_bootstrap, metric) == []

    keyless = _agent(make_settings, **base, tls_cert=cert, tls_key=private)
    _drain(keyless)
    assert keyless.stats.pushed == 3 and keyless.stats.tls_errors == 0
    assert _values(kafka_bootstrap, metric) == [0.0, 1.0, 2.0]


def test_tls_server_name_checks_the_certificate_against_another_name(
    tmp_path, https_ingest, make_settings, metric, kafka_bootstrap, caplog
) -> None:
    ca = make_ca(tmp_path / "ca")
    url, key = https_ingest(ca, cn="ingest.example.internal")  # reached here as localhost
    agent = _agent(make_settings, ingest_url=url, api_key=key, tls_ca=ca.cert)
    _spool(agent, metric, 2)
    assert "Hostname mismatch" in _refused_once(agent, caplog, 2)
    agent.spool.close()
    agent = _agent(
        make_settings,
        ingest_url=url,
        api_key=key,
        tls_ca=ca.cert,
        tls_server_name="ingest.example.internal",
    )
    _drain(agent)
    assert _values(kafka_bootstrap, metric) == [0.0, 1.0]
