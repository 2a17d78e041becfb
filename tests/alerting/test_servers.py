"""A rule on a ``BY server`` query (alerting/servers.py): one alert per server, each judged on
its own series, with the ``server`` label in its notices and its own resolution; the windows
read once per window for every server; a server that stops reporting; the query's kind edited.
Unit tests over the in-memory store and tables (tests/support/evaluator.py), and one through
Cassandra's real tables."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from alerting.evaluator import Evaluator
from alerting.servers import gone_after
from alerting.settings import AlertingSettings
from apm.query import WindowResult
from tests.alerting.conftest import BASE
from tests.support.evaluator import MemResults, MemTables

BY_SERVER = "FROM web-* SELECT cpu.util WINDOW 10s COMPUTE avg BY server"
PLAIN = "FROM web-* SELECT cpu.util WINDOW 10s COMPUTE avg"


def _windows(
    store: Any, query_id: str, server: str, start: float, values: Sequence[float | None]
) -> None:
    """Consecutive 10 s windows of one server from ``start`` (None: no row)."""
    store.upsert_results(
        WindowResult(query_id, start + 10 * i, 10, {"avg": v}, 5, BASE, server)
        for i, v in enumerate(values)
        if v is not None
    )


@pytest.fixture
def mem(make_rule_body) -> Callable[..., tuple[MemResults, MemTables, Evaluator]]:
    def make(text: str = BY_SERVER, **rule: Any) -> tuple[MemResults, MemTables, Evaluator]:
        results, tables = MemResults(), MemTables()
        results.save_query(text, "q1", active_from=BASE)
        tables.rule_bodies["r1"] = make_rule_body("q1", created_at=BASE, **rule)
        settings = AlertingSettings(settle_s=0, lateness_s=600, renotify_s=10_000)
        return results, tables, Evaluator(results, tables, settings, ("webhook",))

    return make


def _states(tables: MemTables) -> dict[str, str]:
    return {i: row["latest"]["state"] for (r, i), row in sorted(tables.rows.items()) if r == "r1"}


def _sent(tables: MemTables) -> list[tuple[str, str | None, str]]:
    """(status, server label, severity label) of each notice, in outbox id order."""
    return [
        (b["status"], b["labels"].get("server"), b["labels"]["severity"])
        for _, b in sorted(tables.outbox.items())
    ]


def _changes_all(tables: MemTables) -> list[tuple[str, float, str]]:
    """Every history row of r1 (a refold rewrites the rows from the refined window on)."""
    return sorted((i, t - BASE, h.state) for (r, t, i), h in tables.history.items() if r == "r1")


def _changes(tables: MemTables) -> list[tuple[str, float, str]]:
    return sorted(
        (i, t - BASE, h.state) for (r, t, i), h in tables.history.items() if h.changed and r == "r1"
    )


@pytest.mark.unit
def test_each_server_is_judged_on_its_own_series(mem) -> None:
    results, tables, ev = mem()
    _windows(results, "q1", "web-1", BASE, [85, 85, 85])
    _windows(results, "q1", "web-2", BASE, [50, 50, 50])
    for i in range(3):
        ev.run_once(BASE + 10 * i + 10)
    # No alert over the whole selection (a BY server query has no such series): one per server.
    assert _states(tables) == {"web-1": "firing", "web-2": "normal"}
    assert _changes(tables) == [("web-1", 0, "pending"), ("web-1", 10, "firing")]
    assert _sent(tables) == [("firing", "web-1", "warning")]
    (body,) = tables.outbox.values()
    assert body["labels"]["alertname"] == "cpu high" and body["labels"]["apm_rule_id"] == "r1"


@pytest.mark.unit
def test_two_rules_on_one_query_judge_each_server_by_their_own_thresholds(
    mem, make_rule_body
) -> None:
    results, tables, ev = mem()
    warm = make_rule_body("q1", name="cpu warm", thresholds={"warning": 60}, created_at=BASE)
    tables.rule_bodies["r2"] = warm
    _windows(results, "q1", "web-1", BASE, [85] * 3)
    _windows(results, "q1", "web-2", BASE, [70] * 3)
    for i in range(3):
        ev.run_once(BASE + 10 * i + 10)
    states = {k: row["latest"]["state"] for k, row in tables.rows.items() if k[1]}
    assert {k: v for k, v in states.items() if k[0] != "apm-meta-freshness"} == {
        ("r1", "web-1"): "firing",
        ("r1", "web-2"): "normal",
        ("r2", "web-1"): "firing",
        ("r2", "web-2"): "firing",
    }
    assert len(tables.outbox) == 3  # one firing notice per (rule, server) alert


@pytest.mark.unit
def test_one_server_resolves_while_another_keeps_firing(mem) -> None:
    results, tables, ev = mem()
    _windows(results, "q1", "web-1", BASE, [85, 85, 85, 50])
    _windows(results, "q1", "web-2", BASE, [85, 85, 85, 85])
    for i in range(4):
        ev.run_once(BASE + 10 * i + 10)
    assert _states(tables) == {"web-1": "normal", "web-2": "firing"}
    assert sorted(_sent(tables)) == [
        ("firing", "web-1", "warning"),
        ("firing", "web-2", "warning"),
        ("resolved", "web-1", "warning"),
    ]
    resolved = [b for b in tables.outbox.values() if b["status"] == "resolved"]
    assert resolved[0]["endsAt"] == BASE + 40  # the end of the window that resolved it


@pytest.mark.unit
def test_a_silence_on_a_server_glob_holds_back_only_that_servers_alert(mem) -> None:
    results, tables, ev = mem()
    tables.silence_bodies["s1"] = {
        "rule_id": "r1",
        "server_glob": "web-1",
        "starts_at": BASE,
        "ends_at": BASE + 3600,
    }
    _windows(results, "q1", "web-1", BASE, [85] * 3)
    _windows(results, "q1", "web-2", BASE, [85] * 3)
    for i in range(3):
        ev.run_once(BASE + 10 * i + 10)
    assert _states(tables) == {"web-1": "firing", "web-2": "firing"}
    assert _sent(tables) == [("firing", "web-2", "warning")]
    assert [x["server"] for x in tables.suppressed["s1"]] == ["web-1"]


def _reads_per_cycle(mem, servers: int) -> list[int]:
    results, _, ev = mem()
    for n in range(servers):
        _windows(results, "q1", f"web-{n}", BASE, [90 if n % 100 == 0 else 10] * 30)
    out = []
    for i in range(3, 30):
        results.reads.clear()
        ev.run_once(BASE + 10 * i)
        assert results.reads["read_server_results"] == 0 and results.reads["read_results"] == 0
        out.append(results.reads["read_window_servers"])
    return out


@pytest.mark.unit
def test_a_cycle_reads_by_window_whatever_the_number_of_servers(mem) -> None:
    few, many = _reads_per_cycle(mem, 3), _reads_per_cycle(mem, 100)
    assert few == many  # per window, every server in one read: never one read per server
    assert many[0] == 3  # the first cycle: every window
    # Then the new window and a share of the open ones (each again once per recheck period).
    every = sum(range(5, 31))  # the reads if every open window were read every cycle
    assert sum(many[1:]) < every / 4


@pytest.mark.unit
def test_late_data_in_an_open_window_is_folded_when_it_is_read_again(mem) -> None:
    results, tables, ev = mem()
    _windows(results, "q1", "web-1", BASE, [85, 85, 85] + [50] * 20)
    for i in range(4):
        ev.run_once(BASE + 10 * i + 10)
    assert _states(tables) == {"web-1": "normal"}  # fired, then resolved at window 3
    _windows(results, "q1", "web-1", BASE + 30, [85])  # late: window 3 refined (newer version)
    results.upsert_results([WindowResult("q1", BASE + 30, 10, {"avg": 85}, 5, BASE + 1, "web-1")])
    at_window_3 = []
    for k in range(13):  # 13 cycles of 5 s: more than server_recheck_s (60 s)
        ev.run_once(BASE + 40 + 5 * k)
        at_window_3.append(tables.history[("r1", BASE + 30, "web-1")].state)
    # Not seen at once (window 3 is not read again every cycle), folded within the period:
    # window 3 is firing again, the alert resolves at window 4 instead.
    assert at_window_3[0] == "normal" and at_window_3[-1] == "firing"
    assert tables.history[("r1", BASE + 40, "web-1")].state == "normal"
    assert _states(tables) == {"web-1": "normal"}


@pytest.mark.unit
def test_a_server_that_appears_later_starts_at_its_first_window(mem) -> None:
    results, tables, ev = mem(nodata_windows=1, nodata_policy="alert")
    _windows(results, "q1", "web-1", BASE, [50] * 6)
    _windows(results, "q1", "web-2", BASE + 40, [50, 50])
    for i in range(6):
        ev.run_once(BASE + 10 * i + 10)
    # web-2's windows before it existed are not "no data".
    assert _states(tables) == {"web-1": "normal", "web-2": "normal"}
    assert tables.rows[("r1", "web-2")]["start"] == BASE + 40  # its first window
    assert _sent(tables) == []


@pytest.mark.unit
def test_a_silent_server_follows_the_nodata_policy_then_is_gone(mem) -> None:
    results, tables, ev = mem(nodata_windows=3, nodata_policy="alert")
    _windows(results, "q1", "web-1", BASE, [85] * 3)  # fires, then says nothing
    _windows(results, "q1", "web-2", BASE, [50] * 500)
    for i in range(6):
        ev.run_once(BASE + 10 * i + 10)
    assert _states(tables) == {"web-1": "nodata", "web-2": "normal"}
    assert _sent(tables)[-1] == ("firing", "web-1", "nodata")
    ev.run_once(BASE + 30 + gone_after(600))  # an hour after its last window
    row = tables.rows[("r1", "web-1")]
    assert row["gone"] and row["latest"]["state"] == "normal"
    assert "taken as gone" in row["latest"]["reason"]
    resolved = [s for s in _sent(tables) if s[0] == "resolved"]
    assert resolved == [("resolved", "web-1", "warning"), ("resolved", "web-1", "nodata")]
    assert _changes(tables)[-1][0::2] == ("web-1", "normal")
    # Gone: no longer evaluated; back with a newer window, a new alert starts.
    before = len(tables.outbox)
    ev.run_once(BASE + 40 + gone_after(600))
    assert len(tables.outbox) == before and tables.rows[("r1", "web-1")]["gone"]
    back = BASE + 40 + gone_after(600)
    _windows(results, "q1", "web-1", back, [85, 85])
    ev.run_once(back + 20)
    assert not tables.rows[("r1", "web-1")].get("gone")
    assert _states(tables)["web-1"] == "firing"


@pytest.mark.unit
def test_a_query_edited_out_of_by_server_ends_the_servers_alerts(mem) -> None:
    results, tables, ev = mem()
    _windows(results, "q1", "web-1", BASE, [85] * 3)
    for i in range(3):
        ev.run_once(BASE + 10 * i + 10)
    results.save_query(PLAIN, "q1", active_from=BASE)  # as Repository.update_query does
    _windows(results, "q1", "", BASE + 30, [85, 85, 85])
    for i in range(3, 6):
        ev.run_once(BASE + 10 * i + 10)
    assert _states(tables) == {"": "firing", "web-1": "normal"}
    assert tables.rows[("r1", "web-1")]["gone"]
    assert sorted(_sent(tables), key=lambda s: (s[0], s[1] or "")) == [
        ("firing", None, "warning"),
        ("firing", "web-1", "warning"),
        ("resolved", "web-1", "warning"),
    ]


@pytest.mark.unit
def test_a_deleted_rule_resolves_each_servers_alert_and_drops_its_rows(mem) -> None:
    results, tables, ev = mem()
    _windows(results, "q1", "web-1", BASE, [85] * 3)
    _windows(results, "q1", "web-2", BASE, [50] * 3)
    for i in range(3):
        ev.run_once(BASE + 10 * i + 10)
    del tables.rule_bodies["r1"]
    ev.run_once(BASE + 40)
    assert _states(tables) == {}
    assert _sent(tables) == [("firing", "web-1", "warning"), ("resolved", "web-1", "warning")]


@pytest.mark.unit
def test_a_deleted_query_puts_each_server_in_error(mem) -> None:
    results, tables, ev = mem()
    _windows(results, "q1", "web-1", BASE, [85] * 2)
    _windows(results, "q1", "web-2", BASE, [50] * 2)
    for i in range(2):
        ev.run_once(BASE + 10 * i + 10)
    del results.queries["q1"]
    ev.run_once(BASE + 30)
    assert _states(tables) == {"web-1": "error", "web-2": "error"}
    assert ("r1", "") not in tables.rows


@pytest.mark.integration
def test_per_server_alerts_through_cassandra(repo, tables, make_rule_body) -> None:
    """Per-server results written and read by the real Repository, alert rows, history and
    outbox in the real alert tables, across a restart of the evaluator."""
    from alerting.rulebook import Rulebook

    query = repo.save_query(BY_SERVER)
    rule = Rulebook(repo, tables).create(make_rule_body(query.id), BASE)
    _windows(repo, query.id, "web-1", BASE, [85, 85, 85, 50])
    _windows(repo, query.id, "web-2", BASE, [50, 50, 50, 50])
    settings = AlertingSettings(settle_s=0, lateness_s=600, renotify_s=10_000)
    for i in range(4):
        if i in (0, 2):  # a start, then a restart from the rows written (as after a kill -9)
            ev = Evaluator(repo, tables, settings, ("webhook",))
        ev.run_once(BASE + 10 * i + 10)
    current = {i: row for (r, i), row in tables.current().items() if r == rule.id}
    assert {i: row["latest"]["state"] for i, row in current.items()} == {
        "web-1": "normal",
        "web-2": "normal",
    }
    changed = [
        (h.instance, h.window_start - BASE, h.state)
        for h in tables.history(rule.id, BASE, BASE + 3600)
        if h.changed
    ]
    assert sorted(changed) == [
        ("web-1", 0, "pending"),
        ("web-1", 10, "firing"),
        ("web-1", 30, "normal"),
    ]
    sent = sorted(
        (r.body["status"], r.body["labels"].get("server"))
        for r in tables.pending("webhook")
        if r.body["labels"]["apm_rule_id"] == rule.id
    )
    assert sent == [("firing", "web-1"), ("resolved", "web-1")]
