"""The dashboard in headless Chromium, with the real app over real Cassandra and Kafka."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from apm.model import topic_for
from apm.query import WindowResult
from tests.support.kafka import publish_versions

pytestmark = pytest.mark.e2e

Wait = Callable[..., Any]
_TRACES = """const el = document.querySelector('#c-graph .js-plotly-plot');
return el && el.data ? el.data.map(t => ({name: t.name, y: t.y})) : null;"""


@pytest.fixture
def metric_topic(
    kafka_bootstrap: str, unique_name: Callable[[str], str], own_topics: list[str]
) -> str:
    from apm.kafka import TopicSpec, ensure_topics

    metric = unique_name("dashm")
    own_topics.append(topic_for(metric))
    ensure_topics(kafka_bootstrap, own_topics, TopicSpec(partitions=1))
    return metric


def _text(chrome: Any, element_id: str) -> str:
    found = chrome.find_elements(By.ID, element_id)
    return str(found[0].text) if found else ""


def _pick(chrome: Any, wait: Wait, dropdown_id: str, label: str) -> None:
    chrome.find_element(By.ID, dropdown_id).click()
    # The option list is virtualized (only visible rows exist): search narrows it first.
    wait(lambda d: d.find_elements(By.CSS_SELECTOR, "input.dash-dropdown-search"))[0].send_keys(
        label
    )
    option = wait(
        lambda d: [
            o for o in d.find_elements(By.CSS_SELECTOR, "[role=option]") if o.text.strip() == label
        ]
    )
    option[0].click()
    chrome.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)


def _radio(chrome: Any, group_id: str, label: str) -> None:
    for option in chrome.find_elements(By.CSS_SELECTOR, f"#{group_id} label"):
        if option.text.strip() == label:
            option.click()
            return
    raise AssertionError(f"no option {label!r} in #{group_id}")


def _type(chrome: Any, element_id: str, text: str) -> None:
    field = chrome.find_element(By.ID, element_id)
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(Keys.DELETE)
    field.send_keys(text)


_ROW_STATE = """for (const row of document.querySelectorAll('#q-table tr')) {
  if ((row.id || '').includes(arguments[0])) {
    const badge = row.querySelector('.q-status .badge'), why = row.querySelector('.q-reason');
    return [badge ? badge.innerText : '', badge ? badge.className : '',
            why ? why.innerText : '']; } }
return ['', '', ''];"""


def _row_state(chrome: Any, query_id: str) -> tuple[str, str, str]:
    """(badge text, badge class, reason) of a query's row; one script, so the list's periodic
    re-render cannot stale the elements mid-way."""
    badge, css, reason = chrome.execute_script(_ROW_STATE, query_id)
    return str(badge), str(css), str(reason)


def _row_status(chrome: Any, query_id: str) -> str:
    return _row_state(chrome, query_id)[0]


def _publish_job(repo: Any, component: str, metrics: list[str], reads: list[str]) -> None:
    """A live aggregator job's status row, as a real job publishes it every 5 s."""
    repo.put_status(
        component,
        {"identity": component, "reads": reads, "scope": {"metrics": metrics, "shard": None}},
    )


def _retire_other_jobs(repo: Any, mine: set[str]) -> None:
    """Re-publishes every other aggregator row of this keyspace as an hour old, so that a job
    another test published (the health page's has no scope: every metric) is not live here."""
    from storage.repository import Repository

    past = Repository(repo.session, repo.keyspace, clock=lambda: time.time() - 3600)
    for component, payload in repo.get_status().items():
        if component.startswith("aggregator") and component not in mine:
            past.put_status(component, {k: v for k, v in payload.items() if k != "updated_at"})


def test_create_a_query_through_the_form_then_see_it_in_the_list(
    chrome: Any, login: Any, wait: Wait, metric_topic: str, repo: Any
) -> None:
    login()
    wait(lambda d: d.find_elements(By.ID, "b-create"))
    _type(chrome, "b-servers", "web-*, db-1")
    _pick(chrome, wait, "b-metric", metric_topic)
    _type(chrome, "b-window", "30s")
    _type(chrome, "b-percentiles", "99.9")
    wait(lambda d: f"SELECT {metric_topic} WINDOW 30s" in _text(d, "b-preview"))
    chrome.find_element(By.ID, "b-create").click()
    expected = (
        f"FROM web-*, db-1 SELECT {metric_topic} WINDOW 30s COMPUTE avg, max, percentile(99.9)"
    )
    wait(lambda d: "Created" in _text(d, "b-result"))
    wait(lambda d: expected in _text(d, "q-table"))
    stored = [q for q in repo.list_queries() if q.query.metric == metric_topic]
    assert [q.text for q in stored] == [expected]
    # A live job covers the new metric: the query waits for its first window, and says so.
    job = f"aggregator-form-{uuid.uuid4().hex[:6]}"
    _publish_job(repo, job, [metric_topic], [metric_topic])
    _, css, reason = wait(lambda d: (got := _row_state(d, stored[0].id))[0] == "waiting" and got)
    assert "state-waiting" in css.split()
    assert "first 30s window" in reason and f"{job} reads {metric_topic}" in reason


def test_a_bad_query_shows_the_parsers_error_inline(
    chrome: Any, login: Any, wait: Wait, metric_topic: str
) -> None:
    login()
    wait(lambda d: d.find_elements(By.ID, "t-create"))
    _type(chrome, "t-text", "FROM * SELECT cpu WINDOW 10x COMPUTE avg")
    chrome.find_element(By.ID, "t-create").click()
    error = wait(lambda d: _text(d, "t-error"))
    assert "position 25" in error and "'10x'" in error and error.endswith("^")
    # The builder: no metric yet, so the metric field says what is missing.
    chrome.find_element(By.ID, "b-create").click()
    assert wait(lambda d: _text(d, "b-err-metric")) == (
        "expected a metric name, got the end of the query"
    )
    _pick(chrome, wait, "b-metric", metric_topic)
    _type(chrome, "b-window", "10 parsecs")
    chrome.find_element(By.ID, "b-create").click()
    window_error = wait(lambda d: _text(d, "b-err-window"))
    assert "duration" in window_error and "'10'" not in _text(chrome, "b-err-metric")
    assert _text(chrome, "b-err-servers") == "" and _text(chrome, "b-err-metric") == ""


def test_once_results_are_written_the_chart_has_the_right_points(
    chrome: Any, login: Any, wait: Wait, repo: Any, unique_name: Any
) -> None:
    saved = repo.save_query(f"FROM * SELECT {unique_name('cpu')} WINDOW 10s COMPUTE min, p99")
    start = (time.time() // 10) * 10 - 2000
    missing = {50, 51, 52, 120}
    repo.upsert_results(
        WindowResult(saved.id, start + i * 10, 10, {"min": i, "p99": 2.0 * i}, 5, time.time())
        for i in range(180)
        if i not in missing
    )
    login(path=f"/chart?q={saved.id}")
    traces = wait(lambda d: (t := d.execute_script(_TRACES)) and len(t) == 2 and t)
    for trace in traces:
        points = [y for y in trace["y"] if y is not None]
        assert len(points) == 180 - len(missing)
        assert trace["y"].count(None) == 2  # two runs of missing windows: two gaps
    assert {t["name"].split()[-1] for t in traces} == {"min", "p99"}
    assert "176 rows read" in _text(chrome, "c-status")


_HOVERS = """const el = document.querySelector('#c-graph .js-plotly-plot');
return el && el.data ? el.data.map(t => ({shows: t.customdata, hover: t.hovertemplate})) : null;"""


def test_a_30_day_chart_reads_the_hourly_rollup_and_says_so(
    chrome: Any, login: Any, wait: Wait, repo: Any, unique_name: Any
) -> None:
    saved = repo.save_query(f"FROM * SELECT {unique_name('cpu')} WINDOW 10s COMPUTE avg")
    hour = (time.time() // 3600) * 3600
    # 40 days of the 1 h tier up to the open hour, and that hour's windows: the live edge.
    repo.upsert_tier(
        "1h",
        (
            WindowResult(saved.id, hour - 3600 * i, 3600, {"avg": 1.0}, 360, time.time())
            for i in range(1, 40 * 24)
        ),
    )
    repo.upsert_results(
        WindowResult(saved.id, at, 10, {"avg": 2.0}, 5, time.time())
        for at in range(int(hour), int(time.time()) - 10, 10)
    )
    login(path=f"/chart?q={saved.id}")
    wait(lambda d: d.execute_script(_TRACES))
    _radio(chrome, "c-range", "30d")
    note = wait(lambda d: "1 h rollup" in (t := _text(d, "c-servers")) and t)
    assert note.startswith("showing the 1 h rollup; 10 s windows where it has no rows yet")
    (trace,) = wait(lambda d: (t := d.execute_script(_HOVERS)) and t[0]["shows"] and t)
    assert trace["shows"][0] == "1 h rollup" and "%{customdata}" in trace["hover"]
    assert trace["shows"][-1] == "10 s windows" or time.time() - hour < 20


def test_pause_a_query_from_the_list(chrome: Any, login: Any, wait: Wait, repo: Any) -> None:
    saved = repo.save_query("FROM * SELECT pausable WINDOW 1m COMPUTE max")
    login()
    # Found and clicked in one script: the list re-renders on every refresh tick.
    wait(
        lambda d: d.execute_script(
            "for (const b of document.querySelectorAll('#q-table button')) {"
            "  if (b.id.includes(arguments[0]) && b.id.includes('q-pause')) {"
            "    b.click(); return true; } } return false;",
            saved.id,
        )
    )
    wait(lambda d: _row_status(d, saved.id) == "paused")
    assert repo.get_query(saved.id).paused is True
    resume = wait(
        lambda d: d.find_elements(
            By.XPATH, f"//button[contains(@id, '{saved.id}') and contains(@id, 'q-resume')]"
        )
    )
    assert resume[0].text == "Resume"


_ANNOTATION = """const el = document.querySelector('#c-graph .js-plotly-plot');
const notes = el && el.layout && el.layout.annotations;
return notes && notes.length ? notes[0].text : null;"""


def test_each_query_shows_its_state_and_why(chrome: Any, login: Any, wait: Wait, repo: Any) -> None:
    """The five states on the queries page, each set up through the real Repository: a paused
    query, one whose metric no live job covers, one whose metric went quiet 10 minutes ago, one
    with a result, one just created; then the chart page says why a chart is empty."""
    from storage.repository import Repository

    tag = uuid.uuid4().hex[:8]
    m = {k: f"st.{k}.{tag}" for k in ("paused", "uncovered", "quiet", "done", "new")}
    job, other = f"aggregator-states-{tag}", f"aggregator-other-{tag}"
    covered = [m["paused"], m["quiet"], m["done"], m["new"]]

    def publish() -> None:
        _publish_job(repo, job, covered, [m["quiet"], m["done"], m["new"]])
        _publish_job(repo, other, ["other"], ["other"])

    now = time.time()
    paused = repo.save_query(f"FROM * SELECT {m['paused']} WINDOW 10s COMPUTE avg")
    repo.set_paused(paused.id, True)
    uncovered = repo.save_query(f"FROM * SELECT {m['uncovered']} WINDOW 10s COMPUTE avg")
    # Active for 15 minutes; its metric's last sample is 10 minutes old.
    earlier = Repository(repo.session, repo.keyspace, clock=lambda: now - 900)
    quiet = earlier.save_query(f"FROM * SELECT {m['quiet']} WINDOW 10s COMPUTE avg")
    repo.touch_metrics({m["quiet"]: now - 600})
    done = repo.save_query(f"FROM * SELECT {m['done']} WINDOW 10s COMPUTE avg, max")
    repo.upsert_results(
        [WindowResult(done.id, (now // 10) * 10 - 20, 10, {"avg": 1.5, "max": 3.0}, 4, time.time())]
    )
    repo.touch_metrics({m["done"]: time.time()})
    fresh = repo.save_query(f"FROM * SELECT {m['new']} WINDOW 1m COMPUTE avg")
    _retire_other_jobs(repo, {job, other})
    publish()
    expected = {
        paused.id: "paused",
        uncovered.id: "not-covered",
        quiet.id: "no-data",
        done.id: "evaluated",
        fresh.id: "waiting",
    }
    published = [time.monotonic()]

    def all_shown(d: Any) -> dict[str, tuple[str, str, str]] | None:
        if time.monotonic() - published[0] > 10:  # keep the fake jobs live (30 s)
            publish()
            published[0] = time.monotonic()
        rows = {qid: _row_state(d, qid) for qid in expected}
        return rows if all(rows[q][0] == s for q, s in expected.items()) else None

    login()
    rows = wait(all_shown, timeout=40)
    for qid, state in expected.items():
        assert f"state-{state}" in rows[qid][1].split(), rows[qid]
    if shot := os.environ.get("APM_TEST_STATES_PNG"):
        chrome.save_screenshot(shot)

    reason = {expected[qid]: rows[qid][2] for qid in expected}
    assert reason["paused"] == "paused: resume it to evaluate it again"
    assert reason["not-covered"] == (
        f"no running aggregator covers {m['uncovered']}: "
        f"{other} (metrics other); {job} (metrics "
        f"{', '.join(sorted(covered))})"
    )
    assert f"no sample of {m['quiet']} in the last 5m" in reason["no-data"]
    assert "(10m ago)" in reason["no-data"]
    assert reason["evaluated"].startswith(f"evaluated by {job}; last result written at ")
    assert reason["waiting"] == f"waiting for its first 1m window to close; {job} reads {m['new']}"

    # The chart page: a line per selected query, and the empty chart says why.
    publish()
    login(path=f"/chart?q={quiet.id},{fresh.id}")
    lines = wait(
        lambda d: (
            (
                got := d.execute_script(
                    "return Array.from(document.querySelectorAll('#c-states .c-state')).map(e => ["
                    "e.querySelector('.badge').innerText, e.querySelector('.q-reason').innerText]);"
                )
            )
            and len(got) == 2
            and got
        )
    )
    by_state = dict(lines)
    assert sorted(by_state) == ["no-data", "waiting"]
    assert f"no sample of {m['quiet']} in the last 5m" in by_state["no-data"]
    assert by_state["waiting"] == reason["waiting"]
    note = wait(lambda d: (t := d.execute_script(_ANNOTATION)) and "no-data" in t and t)
    assert note.replace("<br>", " ").startswith(
        f"no-data: no sample of {m['quiet']} in the last 5m"
    )
    if shot:
        chrome.save_screenshot(shot.replace(".png", "-chart.png"))


def test_health_page_shows_ingest_lag_freshness_and_silent_servers(
    chrome: Any, login: Any, wait: Wait, repo: Any
) -> None:
    now = time.time()
    repo.touch_servers({"web-live-1": now, "db-quiet-9": now - 3600})
    repo.put_status(
        "aggregator",
        {
            "batch_duration_s": 1.25,
            "freshness_s": 4.5,
            "consumer_lag": {"apm.metric.cpu": 42},
            "scope": {"metrics": [], "shard": None},
            "reads": ["cpu"],
        },
    )
    login(path="/health")
    wait(lambda d: d.find_elements(By.ID, "h-lag"))
    assert "apm.metric.cpu" in _text(chrome, "h-lag") and "42" in _text(chrome, "h-lag")
    components = _text(chrome, "h-components")
    assert "1.25 s" in components and "4.5 s behind" in components
    assert "every metric" in components and "reads 1: cpu" in components
    assert "db-quiet-9" in _text(chrome, "h-silent-table")
    assert "web-live-1" in _text(chrome, "h-reporting-table")
    rejects = _text(chrome, "h-rejects")
    assert "bad_value" in rejects and "7" in rejects


def test_health_page_lists_the_fleets_agent_versions(
    chrome: Any, login: Any, wait: Wait, kafka_bootstrap: str
) -> None:
    """Agents that sent agent.version in the lookback, from the real topic: each server's
    version, a count per version, the oldest version on top."""
    old, new = (f"agent-{uuid.uuid4().hex[:8]}" for _ in range(2))
    now = time.time()
    publish_versions(kafka_bootstrap, [(old, now, "0.9.1"), (new, now, "1.4.0")])
    login(path="/health")
    # The read is cached 10 s: another test's page load may have read the topic just before.
    wait(lambda d: d.find_elements(By.ID, "h-agents") and new in _text(d, "h-agents"), timeout=30)
    agents = _text(chrome, "h-agents")
    assert f"{old} 0.9.1" in agents and f"{new} 1.4.0" in agents
    assert agents.index(old) < agents.index(new)
    versions = _text(chrome, "h-agent-versions")
    assert "\n0.9.1 " in versions and "\n1.4.0 " in versions  # earlier runs may count too


def test_log_out_then_get_refused(chrome: Any, login: Any, wait: Wait, served: Any) -> None:
    login()
    chrome.find_element(By.ID, "logout").click()
    wait(lambda d: d.find_elements(By.ID, "login-form"))
    chrome.get(served.url + "/chart")
    wait(lambda d: d.find_elements(By.ID, "login-form"))
    status = chrome.execute_script(
        "return fetch('/api/queries', {credentials: 'same-origin'}).then(r => r.status);"
    )
    assert status == 401
    callback = chrome.execute_script(
        "return fetch('/_dash-update-component', {method: 'POST', credentials: 'same-origin',"
        " headers: {'Content-Type': 'application/json'}, body: '{}'}).then(r => r.status);"
    )
    assert callback == 401
