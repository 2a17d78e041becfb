"""The evaluator against the real Cassandra: windows read through storage, state, history and
outbox written to the alert tables, evaluated cycle by cycle at moments the test chooses."""

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
        rule = Rulebook(repo, tables).create(make_rule_body(query.id, **over), BASE)
        settings = AlertingSettings(settle_s=0, lateness_s=600, renotify_s=10_000)
        return query.id, rule, Evaluator(repo, tables, settings, ("webhook", "email"))

    return make


def changes(tables, rule_id, end=BASE + 3600):
    return [
        (r.window_start - BASE, r.state) for r in tables.history(rule_id, BASE, end) if r.changed
    ]


def outbox(tables, rule_id, receiver="webhook"):
    return sorted(
        (r.body["status"], r.id.split(":", 1)[1])
        for r in tables.pending(receiver)
        if r.body["labels"]["apm_rule_id"] == rule_id
    )


def test_pending_firing_resolved_cycle_by_cycle(setup, write_windows, tables):
    qid, rule, ev = setup()
    for i, value in enumerate([50, 85, 85, 85, 50]):
        write_windows(qid, BASE + 10 * i, [value])
        report = ev.run_once(BASE + 10 * i + 10)  # window i has just completed
        assert report.lag_s == 0
    assert changes(tables, rule.id) == [(10, "pending"), (20, "firing"), (40, "normal")]
    assert outbox(tables, rule.id) == [
        ("firing", f"{BASE + 20}:firing"),
        ("resolved", f"{BASE + 20}:resolved"),
    ]
    # Another cycle with nothing new rewrites nothing and sends nothing.
    assert ev.run_once(BASE + 55).history_rows == 0
    assert len(outbox(tables, rule.id)) == 2


def test_a_catch_up_sends_what_it_passed_over(setup, write_windows, tables):
    qid, rule, ev = setup()
    write_windows(qid, BASE, [50, 85, 85, 85, 50])
    ev.run_once(BASE + 50)
    assert changes(tables, rule.id) == [(10, "pending"), (20, "firing"), (40, "normal")]
    assert [s for s, _ in outbox(tables, rule.id)] == ["firing", "resolved"]


def test_deleting_a_firing_rule_resolves_it_and_forgets_it(setup, write_windows, tables):
    qid, rule, ev = setup()
    write_windows(qid, BASE, [85, 85])
    ev.run_once(BASE + 20)
    assert [s for s, _ in outbox(tables, rule.id)] == ["firing"]
    Rulebook(ev.results, tables).delete(rule.id)
    ev.run_once(BASE + 25)
    fired_at = int(BASE + 10)
    assert outbox(tables, rule.id) == [
        ("firing", f"{fired_at}:firing"),
        ("resolved", f"{fired_at}:resolved"),
    ]
    assert not any(r == rule.id for r, _ in ev._current)  # the evaluator's memory
    assert not any(r == rule.id for r, _ in tables.current())  # and the table
    ev.run_once(BASE + 30)  # nothing left to resolve: sent once
    assert len(outbox(tables, rule.id)) == 2


def test_a_rule_is_sent_only_to_the_receivers_it_names(setup, write_windows, tables):
    qid, rule, ev = setup(receivers=["email"])
    write_windows(qid, BASE, [85, 85, 50])
    ev.run_once(BASE + 30)
    assert [s for s, _ in outbox(tables, rule.id, "email")] == ["firing", "resolved"]
    assert outbox(tables, rule.id, "webhook") == []


def test_a_deleted_rule_resolves_only_where_it_fired(setup, write_windows, tables):
    qid, rule, ev = setup(receivers=["email"])
    write_windows(qid, BASE, [85, 85])
    ev.run_once(BASE + 20)
    Rulebook(ev.results, tables).delete(rule.id)
    ev.run_once(BASE + 25)
    assert [s for s, _ in outbox(tables, rule.id, "email")] == ["firing", "resolved"]
    assert outbox(tables, rule.id, "webhook") == []


def test_late_data_turns_a_fired_window_back(setup, write_windows, tables):
    qid, rule, ev = setup()
    write_windows(qid, BASE, [85, 85])
    ev.run_once(BASE + 20)
    assert changes(tables, rule.id) == [(0, "pending"), (10, "firing")]
    # Late samples refine window 1 under the threshold: the refold gives no firing at all,
    # the history row of window 1 is rewritten, and the alert's resolution is sent.
    write_windows(qid, BASE + 10, [60], version=1)
    ev.run_once(BASE + 21)
    assert changes(tables, rule.id) == [(0, "pending"), (10, "normal")]
    assert [s for s, _ in outbox(tables, rule.id)] == ["firing", "resolved"]


def test_no_data_alerts_after_n_windows(setup, write_windows, tables):
    qid, rule, ev = setup(nodata_windows=2, nodata_policy="alert")
    write_windows(qid, BASE, [50])
    ev.run_once(BASE + 40)  # windows 1-3 have no samples
    assert changes(tables, rule.id) == [(20, "nodata")]
    assert [s for s, _ in outbox(tables, rule.id)] == ["firing"]
    (body,) = [
        r.body for r in tables.pending("webhook") if r.body["labels"]["apm_rule_id"] == rule.id
    ]
    assert body["labels"]["severity"] == "nodata"


def test_silenced_alert_is_recorded_not_sent_and_listed(setup, write_windows, tables, repo):
    qid, rule, ev = setup(for_s=0)
    book = Rulebook(repo, tables)
    silence = book.silence({"starts_at": BASE, "ends_at": BASE + 3600, "rule_id": rule.id}, BASE)
    write_windows(qid, BASE, [85])
    report = ev.run_once(BASE + 10)
    assert report.suppressed == 1
    assert changes(tables, rule.id) == [(0, "firing")]
    assert outbox(tables, rule.id) == []
    listed = {s["id"]: s for s in book.silences()}[silence.id]
    assert listed["suppressed"] == [{"rule_id": rule.id, "server": "", "fired_at": BASE}]
    # The silence lifted, the still firing alert is sent.
    book.unsilence(silence.id)
    ev.run_once(BASE + 11)
    assert [s for s, _ in outbox(tables, rule.id)] == ["firing"]


def test_a_deleted_query_is_an_error_state(setup, write_windows, tables, repo):
    qid, rule, ev = setup()
    write_windows(qid, BASE, [50])
    ev.run_once(BASE + 10)
    repo.delete_query(qid)
    ev.run_once(BASE + 20)
    latest = {r["id"]: r for r in Rulebook(repo, tables).rules()}[rule.id]["alert"]
    assert latest["state"] == "error" and "does not exist" in latest["reason"]


def test_bad_rules_store_nothing(repo, tables, make_rule_body):
    book = Rulebook(repo, tables)
    before = tables.rules()
    query = repo.save_query(QUERY)
    for raw, at in [
        (make_rule_body("no-such-query"), "query_id"),
        (make_rule_body(query.id, function="p99"), "function"),
        (make_rule_body(query.id, thresholds={"warning": float("nan")}), "thresholds.warning"),
        (make_rule_body(query.id, for_s=3 * 365 * 86_400), "for_s"),
        (make_rule_body(query.id, annotation="{open('/etc/passwd')}"), "annotation"),
        (make_rule_body(query.id, receivers=["pagerduty"]), "receivers"),
    ]:
        with pytest.raises(RuleError) as info:
            book.create(raw, BASE)
        assert info.value.at == at
    assert tables.rules() == before
