"""The dashboard in headless Chromium, with the real app over real Cassandra and Kafka."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from apm.model import topic_for
from apm.query import WindowResult

pytestmark = pytest.mark.e2e

Wait = Callable[..., Any]
_TRACES = """const el = document.querySelector('#c-graph .js-plotly-plot');
return el && el.data ? el.data.map(t => ({name: t.name, y: t.y})) : null;"""


@pytest.fixture
def metric_topic(kafka_bootstrap: str, unique_name: Callable[[str], str]) -> Any:
    from kafka.admin import KafkaAdminClient, NewTopic

    metric = unique_name("dashm")
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    admin.create_topics([NewTopic(topic_for(metric), num_partitions=1, replication_factor=1)])
    yield metric
    admin.delete_topics([topic_for(metric)])  # ours: created just above
    admin.close()


def _text(chrome: Any, element_id: str) -> str:
    found = chrome.find_elements(By.ID, element_id)
    return str(found[0].text) if found else ""


def _pick(chrome: Any, wait: Wait, dropdown_id: str, label: str) -> None:
    chrome.find_element(By.ID, dropdown_id).click()
    # The option list is virtualized (only visible rows exist): search narrows it first.
    wait(lambda d: d.find_elements(By.CSS_SELECTOR, "input.dash-dropdown-search"))[0].send_keys(
        label)
    option = wait(lambda d: [o for o in d.find_elements(By.CSS_SELECTOR, "[role=option]")
                             if o.text.strip() == label])
    option[0].click()
    chrome.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)


def _type(chrome: Any, element_id: str, text: str) -> None:
    field = chrome.find_element(By.ID, element_id)
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(Keys.DELETE)
    field.send_keys(text)


def _row_status(chrome: Any, query_id: str) -> str:
    # One script, so the list's periodic re-render cannot stale the elements mid-way.
    return str(chrome.execute_script(
        "for (const row of document.querySelectorAll('#q-table tr')) {"
        "  if ((row.id || '').includes(arguments[0])) {"
        "    return row.querySelector('.q-status').innerText; } }"
        "return '';", query_id))


def test_create_a_query_through_the_form_then_see_it_in_the_list(
        chrome: Any, login: Any, wait: Wait, metric_topic: str, repo: Any) -> None:
    login()
    wait(lambda d: d.find_elements(By.ID, "b-create"))
    _type(chrome, "b-servers", "web-*, db-1")
    _pick(chrome, wait, "b-metric", metric_topic)
    _type(chrome, "b-window", "30s")
    _type(chrome, "b-percentiles", "99.9")
    wait(lambda d: f"SELECT {metric_topic} WINDOW 30s" in _text(d, "b-preview"))
    chrome.find_element(By.ID, "b-create").click()
    expected = f"FROM web-*, db-1 SELECT {metric_topic} WINDOW 30s COMPUTE avg, max, " \
               "percentile(99.9)"
    wait(lambda d: "Created" in _text(d, "b-result"))
    wait(lambda d: expected in _text(d, "q-table"))
    stored = [q for q in repo.list_queries() if q.query.metric == metric_topic]
    assert [q.text for q in stored] == [expected]
    assert _row_status(chrome, stored[0].id) == "waiting"


def test_a_bad_query_shows_the_parsers_error_inline(chrome: Any, login: Any, wait: Wait,
                                                    metric_topic: str) -> None:
    login()
    wait(lambda d: d.find_elements(By.ID, "t-create"))
    _type(chrome, "t-text", "FROM * SELECT cpu WINDOW 10x COMPUTE avg")
    chrome.find_element(By.ID, "t-create").click()
    error = wait(lambda d: _text(d, "t-error"))
    assert "position 25" in error and "'10x'" in error and error.endswith("^")
    # The builder: no metric yet, so the metric field says what is missing.
    chrome.find_element(By.ID, "b-create").click()
    assert wait(lambda d: _text(d, "b-err-metric")) == (
        "expected a metric name, got the end of the query")
    _pick(chrome, wait, "b-metric", metric_topic)
    _type(chrome, "b-window", "10 parsecs")
    chrome.find_element(By.ID, "b-create").click()
    window_error = wait(lambda d: _text(d, "b-err-window"))
    assert "duration" in window_error and "'10'" not in _text(chrome, "b-err-metric")
    assert _text(chrome, "b-err-servers") == "" and _text(chrome, "b-err-metric") == ""


def test_once_results_are_written_the_chart_has_the_right_points(
        chrome: Any, login: Any, wait: Wait, repo: Any, unique_name: Any) -> None:
    saved = repo.save_query(f"FROM * SELECT {unique_name('cpu')} WINDOW 10s COMPUTE min, p99")
    start = (time.time() // 10) * 10 - 2000
    missing = {50, 51, 52, 120}
    repo.upsert_results(WindowResult(saved.id, start + i * 10, 10, {"min": i, "p99": 2.0 * i}, 5,
                                     time.time()) for i in range(180) if i not in missing)
    login(path=f"/chart?q={saved.id}")
    traces = wait(lambda d: (t := d.execute_script(_TRACES)) and len(t) == 2 and t)
    for trace in traces:
        points = [y for y in trace["y"] if y is not None]
        assert len(points) == 180 - len(missing)
        assert trace["y"].count(None) == 2  # two runs of missing windows: two gaps
    assert {t["name"].split()[-1] for t in traces} == {"min", "p99"}
    assert "176 windows read" in _text(chrome, "c-status")


def test_pause_a_query_from_the_list(chrome: Any, login: Any, wait: Wait, repo: Any) -> None:
    saved = repo.save_query("FROM * SELECT pausable WINDOW 1m COMPUTE max")
    login()
    # Found and clicked in one script: the list re-renders on every refresh tick.
    wait(lambda d: d.execute_script(
        "for (const b of document.querySelectorAll('#q-table button')) {"
        "  if (b.id.includes(arguments[0]) && b.id.includes('q-pause')) {"
        "    b.click(); return true; } } return false;", saved.id))
    wait(lambda d: _row_status(d, saved.id) == "paused")
    assert repo.get_query(saved.id).paused is True
    resume = wait(lambda d: d.find_elements(By.XPATH, f"//button[contains(@id, '{saved.id}') "
                                                      "and contains(@id, 'q-resume')]"))
    assert resume[0].text == "Resume"


def test_health_page_shows_ingest_lag_freshness_and_silent_servers(
        chrome: Any, login: Any, wait: Wait, repo: Any) -> None:
    now = time.time()
    repo.touch_servers({"web-live-1": now, "db-quiet-9": now - 3600})
    repo.put_status("aggregator", {"batch_duration_s": 1.25, "freshness_s": 4.5,
                                   "consumer_lag": {"apm.metric.cpu": 42}})
    login(path="/health")
    wait(lambda d: d.find_elements(By.ID, "h-lag"))
    assert "apm.metric.cpu" in _text(chrome, "h-lag") and "42" in _text(chrome, "h-lag")
    components = _text(chrome, "h-components")
    assert "1.25 s" in components and "4.5 s behind" in components
    assert "db-quiet-9" in _text(chrome, "h-silent-table")
    assert "web-live-1" in _text(chrome, "h-reporting-table")
    rejects = _text(chrome, "h-rejects")
    assert "bad_value" in rejects and "7" in rejects


def test_log_out_then_get_refused(chrome: Any, login: Any, wait: Wait, served: Any) -> None:
    login()
    chrome.find_element(By.ID, "logout").click()
    wait(lambda d: d.find_elements(By.ID, "login-form"))
    chrome.get(served.url + "/chart")
    wait(lambda d: d.find_elements(By.ID, "login-form"))
    status = chrome.execute_script(
        "return fetch('/api/queries', {credentials: 'same-origin'}).then(r => r.status);")
    assert status == 401
    callback = chrome.execute_script(
        "return fetch('/_dash-update-component', {method: 'POST', credentials: 'same-origin',"
        " headers: {'Content-Type': 'application/json'}, body: '{}'}).then(r => r.status);")
    assert callback == 401
