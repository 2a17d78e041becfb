"""Alerting on the other pages, in headless Chromium: a rule's stored state changes drawn on
its query's chart with hover text, and the alert receivers' failures and backlog on the health
page (read from the evaluator's /metrics)."""

from __future__ import annotations

import time
import uuid

import pytest
from selenium.webdriver.common.by import By

from alerting.rulebook import Rulebook
from apm.query import WindowResult
from storage.alerts import AlertStore, HistoryRow

pytestmark = pytest.mark.e2e

_EVENTS = """const el = document.querySelector('#c-graph .js-plotly-plot');
if (!el || !el.data) return null;
const t = el.data.find(d => d.name === 'alert events');
return t ? {text: t.text, shapes: (el.layout.shapes || []).length} : null;"""


def test_alert_state_changes_are_drawn_on_the_querys_chart(chrome, login, wait, repo) -> None:
    tag = uuid.uuid4().hex[:8]
    query = repo.save_query(f"FROM mark{tag}-* SELECT cpu.util WINDOW 10s COMPUTE avg")
    now = time.time()
    start = now // 10 * 10 - 300
    repo.upsert_results(
        WindowResult(query.id, start + 10 * i, 10, {"avg": 90.0 if i > 10 else 50.0}, 3, now)
        for i in range(25)
    )
    store = AlertStore(repo.session, repo.keyspace)
    raw = {"name": f"mark {tag}", "query_id": query.id, "function": "avg"}
    rule = Rulebook(repo, store).create({**raw, "thresholds": {"warning": 80}, "for_s": 30}, now)
    store.put_history(
        HistoryRow(rule.id, start + 10 * i, "", state, True, {"value": v, "reason": why})
        for i, state, v, why in (
            (11, "pending", 90.0, "above warning 80"),
            (14, "firing", 90.0, "above warning 80 for 30s"),
        )
    )
    login(path=f"/chart?q={query.id}")
    drawn = wait(lambda d: d.execute_script(_EVENTS), timeout=30)
    assert drawn["shapes"] == 2
    assert drawn["text"][1] == f"mark {tag}: firing<br>value 90<br>above warning 80 for 30s"
    line = wait(lambda d: d.find_element(By.ID, "c-alerts").text)
    assert line.startswith("1 alert rule(s): 2 state change(s) in this range")


def test_health_page_shows_receiver_failures_and_backlog(
    chrome, login, wait, evaluator_metrics
) -> None:
    _, telemetry = evaluator_metrics
    telemetry.failures.labels("webhook").inc(4)
    telemetry.outbox.labels("webhook").set(3)
    login(path="/health")
    row = wait(lambda d: d.find_elements(By.ID, "h-receiver-webhook"), timeout=30)[0]
    cells = [c.text for c in row.find_elements(By.TAG_NAME, "td")]
    assert cells[0] == "webhook" and cells[2] == "4" and cells[4] == "3"
    assert cells[5].startswith("failing: notices wait in the outbox")
