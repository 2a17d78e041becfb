"""Presence alerts: the ``server_silent`` rule kind per server, and the built-in freshness
meta-alert on the aggregator's status and on the evaluator's own lag."""

from __future__ import annotations

import pytest

from alerting.evaluator import Evaluator
from alerting.machine import AlertState
from alerting.presence import META_RULE_ID, presence_state
from alerting.rulebook import Rulebook
from alerting.settings import AlertingSettings

NOW = 1_763_000_000.0


@pytest.mark.unit
def test_presence_state_keeps_its_identity_while_firing():
    first = presence_state(AlertState(), 100, 90, 60, "no sample from web-1")
    again = presence_state(first, 105, 95, 60, "no sample from web-1")
    assert (first.state, again.state, again.fired_at) == ("firing", "firing", 100)
    assert presence_state(again, 110, 1, 60, "x").state == "normal"


@pytest.fixture
def world(cassandra_session, own_keyspace):
    from storage.alerts import AlertStore
    from storage.repository import Repository

    repo = Repository(cassandra_session, own_keyspace, clock=lambda: NOW)
    tables = AlertStore(cassandra_session, own_keyspace)
    ev = Evaluator(repo, tables, AlertingSettings(freshness_bound_s=60), ("webhook",))
    return repo, tables, ev


def sent(tables, rule_id):
    return sorted(
        (r.body["status"], r.body["labels"].get("server"))
        for r in tables.pending("webhook")
        if r.body["labels"]["apm_rule_id"] == rule_id
    )


@pytest.mark.integration
def test_server_silent_alerts_per_server(world):
    repo, tables, ev = world
    book = Rulebook(repo, tables)
    raw = {"name": "web silent", "kind": "server_silent", "servers": "web-*", "silent_after_s": 60}
    rule = book.create(raw, NOW)
    repo.touch_servers(
        {"web-1": NOW - 10, "web-2": NOW - 120, "db-1": NOW - 120, "web-3": NOW - 7200}
    )
    ev.run_once(NOW)
    (listed,) = [r for r in book.rules() if r["id"] == rule.id]
    states = {k: v["state"] for k, v in listed["instances"].items()}
    # web-3 has been gone for two hours: taken as decommissioned; db-1 is not a web server.
    assert states == {"web-1": "normal", "web-2": "firing"}
    assert sent(tables, rule.id) == [("firing", "web-2")]
    repo.touch_servers({"web-2": NOW + 4})
    ev.run_once(NOW + 5)
    assert sent(tables, rule.id) == [("firing", "web-2"), ("resolved", "web-2")]
    history = [(r.instance, r.state) for r in tables.history(rule.id, NOW - 10, NOW + 10)]
    assert history == [("web-2", "firing"), ("web-2", "normal")]  # changes only


@pytest.mark.integration
def test_meta_alert_on_a_stale_aggregator(world):
    repo, tables, ev = world
    repo.put_status("aggregator", {"lag_total": 0})  # updated_at = NOW
    ev.run_once(NOW + 30)
    assert sent(tables, META_RULE_ID) == []
    ev.run_once(NOW + 90)  # no status for 90 s, the bound is 60
    assert sent(tables, META_RULE_ID) == [("firing", "aggregator")]
    (meta,) = [r for r in Rulebook(repo, tables).rules() if r["id"] == META_RULE_ID]
    assert meta["instances"]["aggregator"]["state"] == "firing"
    assert meta["instances"]["evaluator"]["state"] == "normal"
