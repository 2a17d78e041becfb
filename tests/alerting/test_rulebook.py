"""Editing a rule (``Rulebook.update``, real Cassandra) and what the evaluator makes of the edit:
the alert keeps its state and goes on under the changed rule from the next window it evaluates
(docs/alerting.md, "Editing a rule")."""

from __future__ import annotations

import pytest

from alerting.evaluator import Evaluator
from alerting.rulebook import Rulebook
from alerting.rules import RuleError
from alerting.settings import AlertingSettings
from tests.alerting.conftest import BASE

pytestmark = pytest.mark.integration

QUERY = "FROM web-* SELECT cpu.util WINDOW 10s COMPUTE avg, max"


@pytest.fixture
def setup(repo, tables, make_rule_body):
    def make(**over):
        query = repo.save_query(QUERY)
        book = Rulebook(repo, tables)
        rule = book.create(make_rule_body(query.id, **over), BASE)
        settings = AlertingSettings(settle_s=0, lateness_s=600, renotify_s=10_000)
        return query.id, rule, book, Evaluator(repo, tables, settings, ("webhook",))

    return make


def changes(tables, rule_id):
    return [(r.window_start - BASE, r.state) for r in tables.history(rule_id, BASE, BASE + 3600)]


def sent(tables, rule_id):
    return sorted(
        (r.body["status"], r.body["labels"].get("team", ""))
        for r in tables.pending("webhook")
        if r.body["labels"]["apm_rule_id"] == rule_id
    )


def test_update_stores_the_new_rule_and_keeps_its_creation(setup, make_rule_body, tables):
    qid, rule, book, _ = setup()
    edited = book.update(rule.id, make_rule_body(qid, thresholds={"warning": 95}), BASE + 60)
    assert edited is not None and edited.id == rule.id
    body = tables.rules()[rule.id]
    assert body["thresholds"]["warning"] == 95
    assert (body["created_at"], body["updated_at"]) == (BASE, BASE + 60)


def test_update_refuses_as_create_does_and_stores_nothing(setup, make_rule_body, tables, repo):
    qid, rule, book, _ = setup()
    other = repo.save_query("FROM db-* SELECT cpu.util WINDOW 10s COMPUTE avg").id
    before = tables.rules()[rule.id]
    for over, at in [
        ({"thresholds": {"warning": float("nan")}}, "thresholds.warning"),
        ({"query_id": "gone"}, "query_id"),
        # Valid for create, but what the rule watches: fixed for its life.
        ({"query_id": other}, "query_id"),
        ({"function": "max"}, "function"),
        ({"kind": "server_silent", "silent_after_s": 60}, "kind"),
    ]:
        with pytest.raises(RuleError) as info:
            book.update(rule.id, {**make_rule_body(qid), **over}, BASE + 60)
        assert info.value.at == at
    assert tables.rules()[rule.id] == before


def test_update_of_an_unknown_rule_is_none_and_creates_nothing(setup, make_rule_body, tables):
    qid, _, book, _ = setup()
    assert book.update("no-such-rule", make_rule_body(qid), BASE) is None
    book.delete(rule_id := book.create(make_rule_body(qid), BASE).id)
    assert book.update(rule_id, make_rule_body(qid), BASE) is None  # deleted: not brought back
    # The store's own check, for an edit racing a delete (the rulebook read the rule first).
    assert tables.update_rule(rule_id, make_rule_body(qid), BASE) is False
    assert "no-such-rule" not in tables.rules() and rule_id not in tables.rules()


def test_a_pending_alert_keeps_its_breach_under_a_shorter_for(setup, make_rule_body, write_windows):
    """Pending since window 0 under `for` 30 s; the edit to `for` 20 s counts the breach from
    window 0 (kept), so window 10 fires: 20 s crossed. Started afresh at the edit (as a new
    rule), it would still be pending; unedited, too."""
    qid, rule, book, ev = setup(for_s=30)
    write_windows(qid, BASE, [85, 85])
    ev.run_once(BASE + 10)
    assert changes(ev.tables, rule.id) == [(0, "pending")]
    book.update(rule.id, make_rule_body(qid, for_s=20), BASE + 15)
    ev.run_once(BASE + 20)
    assert changes(ev.tables, rule.id) == [(0, "pending"), (10, "firing")]
    assert ev.tables.current()[(rule.id, "")]["latest"]["since"] == BASE


def test_a_raised_threshold_resolves_a_firing_alert_at_the_next_window(
    setup, make_rule_body, write_windows
):
    """The evaluator after the edit is a new one (as after a restart or a failover): the state
    it goes on from is the durable row's, what was notified included."""
    qid, rule, book, ev = setup()
    write_windows(qid, BASE, [85, 85, 85])
    ev.run_once(BASE + 20)
    assert changes(ev.tables, rule.id) == [(0, "pending"), (10, "firing")]
    book.update(rule.id, make_rule_body(qid, thresholds={"warning": 90}), BASE + 25)
    ev = Evaluator(ev.results, ev.tables, ev.settings, ev.receivers)
    ev.run_once(BASE + 30)
    # The windows evaluated before the edit keep their states; the next one is judged by 90.
    assert changes(ev.tables, rule.id) == [(0, "pending"), (10, "firing"), (20, "normal")]
    assert sent(ev.tables, rule.id) == [("firing", ""), ("resolved", "")]


def test_new_labels_on_a_firing_alert_resolve_the_old_identity(
    setup, make_rule_body, write_windows
):
    """Labels are the alert's identity for receivers (Alertmanager dedups by them): the alert
    stays firing, its old labels are resolved and the new ones sent, as for a severity change."""
    qid, rule, book, ev = setup()
    write_windows(qid, BASE, [85, 85, 85])
    ev.run_once(BASE + 20)
    book.update(rule.id, make_rule_body(qid, labels={"team": "web"}), BASE + 25)
    ev.run_once(BASE + 30)
    assert changes(ev.tables, rule.id) == [(0, "pending"), (10, "firing")]
    assert sent(ev.tables, rule.id) == [("firing", ""), ("firing", "web"), ("resolved", "")]
