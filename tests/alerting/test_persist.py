"""Which alert rows a cycle writes (alerting/persist.py): a change in substance at once, a
value-only change once per refresh period at the row's own phase; and, against Cassandra, a
restart from rows so written goes on exactly as an uninterrupted run."""

from __future__ import annotations

from typing import Any

import pytest

from alerting.evaluator import Evaluator
from alerting.persist import StateWrites
from alerting.rulebook import Rulebook
from alerting.settings import AlertingSettings
from tests.alerting.conftest import BASE


def _row(state: str = "firing", value: float = 85.0, **notified: Any) -> dict[str, Any]:
    latest = {"state": state, "severity": "warning", "since": 10.0, "fired_at": 20.0}
    return {"latest": {**latest, "value": value}, "notified": notified or None}


def _keys(rows: list[tuple[str, str, dict[str, Any]]]) -> list[str]:
    return [r for r, _, _ in rows]


@pytest.mark.unit
def test_a_new_row_and_a_change_in_substance_are_written_at_once() -> None:
    writes = StateWrites(60.0, phase=lambda key: 0.5)
    assert _keys(writes.select({}, [("a", "", _row())], set(), 100.0)) == ["a"]
    before = {("a", ""): _row(), ("b", ""): _row(), ("c", ""): _row()}
    now = [("a", "", _row("normal")), ("b", "", _row(key="k")), ("c", "", _row(value=86))]
    assert _keys(writes.select(before, now, set(), 101.0)) == ["a", "b"]
    assert _keys(writes.select(before, now[2:], {("c", "")}, 102.0)) == ["c"]  # history rows


@pytest.mark.unit
def test_a_value_only_change_is_written_once_per_period_at_its_phase() -> None:
    writes = StateWrites(60.0, phase=lambda key: 0.5)  # periods start at 30 s past each minute
    before = {("a", ""): _row()}
    due = [
        t
        for t in range(600, 720, 10)
        if writes.select(before, [("a", "", _row(value=t))], set(), float(t))
    ]
    assert due == [630, 690]  # read from Cassandra at 600: counts as written in that period


@pytest.mark.unit
def test_rows_written_together_come_due_apart() -> None:
    writes = StateWrites(60.0)
    before = {(f"r{i}", ""): _row() for i in range(1000)}
    rows = [(r, i, _row(value=1)) for r, i in before]
    assert writes.select(before, rows, set(), 600.0) == []  # as read from Cassandra
    per_cycle = [len(writes.select(before, rows, set(), 600.0 + 10 * k)) for k in range(1, 7)]
    assert sum(per_cycle) == 1000  # each row once in the six cycles of the next period
    assert max(per_cycle) < 300


@pytest.mark.unit
def test_refresh_zero_and_a_forgotten_state_write_as_before() -> None:
    before = {("a", ""): _row()}
    every = StateWrites(0.0)
    assert all(every.select(before, [("a", "", _row(value=t))], set(), t) for t in (1.0, 2.0))
    writes = StateWrites(60.0, phase=lambda key: 0.0)
    assert writes.select({}, [("a", "", _row())], set(), 1.0)
    writes.forget()  # after a failed cycle the rows are read again: due at the next boundary
    assert not writes.select(before, [("a", "", _row(value=2))], set(), 2.0)
    assert writes.select(before, [("a", "", _row(value=3))], set(), 60.0)


@pytest.mark.integration
def test_a_restart_from_rows_written_in_substance_only_continues_the_run(
    cassandra_session, own_keyspace, make_rule_body
):
    from storage.alerts import AlertStore
    from storage.repository import Repository

    repo = Repository(cassandra_session, own_keyspace, clock=lambda: BASE)
    tables = AlertStore(cassandra_session, own_keyspace)
    query = repo.save_query("FROM web-* SELECT cpu.util WINDOW 10s COMPUTE avg")
    rule = Rulebook(repo, tables).create(make_rule_body(query.id), BASE)
    settings = AlertingSettings(settle_s=0, lateness_s=600, renotify_s=10_000)

    def evaluator() -> Evaluator:
        ev = Evaluator(repo, tables, settings, ("webhook",))
        ev.writes = StateWrites(3600.0, phase=lambda key: 0.5)  # no period boundary here
        return ev

    def window(i: int, value: float) -> None:
        from apm.query import WindowResult

        repo.upsert_results([WindowResult(query.id, BASE + 10 * i, 10, {"avg": value}, 5, BASE)])

    ev = evaluator()
    # Pending at window 1, firing at 2 (since the breach), at 3 firing since 20, then 90.
    for i, value in enumerate([50, 85, 85, 88, 90]):
        window(i, value)
        report = ev.run_once(BASE + 10 * i + 10)
    assert report.state_rows == 0  # the rule's row (and the meta-alert's) only moved on
    row = tables.current()[(rule.id, "")]
    assert (row["latest"]["state"], row["evaluated_through"]) == ("firing", BASE + 30)
    window(5, 50)
    evaluator().run_once(BASE + 60)  # a restart: refolds windows 4-5 from the row of window 3
    history = tables.history(rule.id, BASE, BASE + 3600)
    assert [(h.window_start - BASE, h.state) for h in history if h.changed] == [
        (10, "pending"),
        (20, "firing"),
        (50, "normal"),
    ]
    sent = sorted((r.body["status"], r.id.split(":", 1)[1]) for r in tables.pending("webhook"))
    assert sent == [("firing", f"{BASE + 20}:firing"), ("resolved", f"{BASE + 20}:resolved")]
