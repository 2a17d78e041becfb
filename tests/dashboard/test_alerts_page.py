"""The alerts page in headless Chromium: the rule builder previews a rule against the last hour
of stored windows, refuses a bad one inline naming the field, and creates a good one, which the
list then shows with its state; Edit loads a stored rule into the builder and saves it back."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from apm.query import WindowResult
from dashboard.alerts_api import rulebook_for

pytestmark = pytest.mark.e2e


def pick(chrome: Any, wait: Any, dropdown: str, text: str) -> None:
    """Opens the dropdown, searches ``text`` and clicks the first option holding it (the
    option list is virtualized: search narrows it first, as tests/dashboard/test_browser.py)."""
    wait(lambda d: d.find_element(By.ID, dropdown)).click()
    wait(lambda d: d.find_elements(By.CSS_SELECTOR, "input.dash-dropdown-search"))[0].send_keys(
        text
    )
    option = wait(
        lambda d: [o for o in d.find_elements(By.CSS_SELECTOR, "[role=option]") if text in o.text]
    )
    option[0].click()
    chrome.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)


def test_rule_builder_preview_refusal_and_create(chrome, login, wait, repo) -> None:
    tag = uuid.uuid4().hex[:8]
    query = repo.save_query(f"FROM web{tag}-* SELECT cpu.util WINDOW 10s COMPUTE avg, max")
    now = time.time()
    start = now // 10 * 10 - 600
    # 50, then 95 from window 41 (over the warning 80), then 75 from window 51: under the
    # warning but over its recovery line 70, so the alert stays firing to the end.
    values = [50.0] * 41 + [95.0] * 10 + [75.0] * 9
    repo.upsert_results(
        WindowResult(query.id, start + 10 * i, 10, {"avg": v, "max": 99.0}, 3, now)
        for i, v in enumerate(values)
    )
    login(path="/alerts")
    name = f"builder {tag}"
    wait(lambda d: d.find_elements(By.ID, "ab-form"))
    chrome.find_element(By.ID, "ab-name").send_keys(name)
    pick(chrome, wait, "ab-query", f"web{tag}")
    pick(chrome, wait, "ab-function", "avg")
    chrome.find_element(By.ID, "ab-warning").send_keys("80")
    chrome.find_element(By.ID, "ab-critical").send_keys("70")  # below the warning: refused
    chrome.find_element(By.ID, "ab-preview").click()
    msg = wait(lambda d: d.find_element(By.ID, "ab-message").text)
    assert msg.startswith("thresholds.warning:")
    critical = chrome.find_element(By.ID, "ab-critical")
    critical.send_keys(Keys.BACKSPACE, Keys.BACKSPACE, "90")
    _retype(chrome, "ab-warning-rec", "85")  # on the firing side of 80: refused as typed
    says(wait, "thresholds.warning_recovery: 85.0 is on the firing side of warning 80.0")
    _retype(chrome, "ab-warning-rec", "70")
    _retype(chrome, "ab-keep", "20")
    pick(chrome, wait, "ab-nodata-policy", "alert:")
    _retype(chrome, "ab-nodata-windows", "5")
    chrome.find_element(By.ID, "ab-labels").send_keys("team=web, tier=front")
    says(wait, "valid:")
    chrome.find_element(By.ID, "ab-preview").click()
    wait(lambda d: d.find_element(By.ID, "ab-graph").is_displayed())
    drawn = wait(
        lambda d: d.execute_script(
            "const g = document.querySelector('#ab-graph .js-plotly-plot');"
            "return g && g.data ? {states: g.data[0].text.map(t => t.split(':')[0]),"
            " dotted: g.layout.shapes.filter(s => s.line.dash === 'dot').map(s => s.y0)} : null;"
        )
    )
    states = drawn["states"]
    # The hour before the stored windows has no samples: no-data after 5 windows (policy
    # alert); 95 above the warning: pending, then firing after for_s (30 s); 75 stays firing
    # (above the recovery line 70, so keep-firing-for never starts).
    assert states[0] == "normal" and states[5] == "nodata"
    assert "pending" in states and states[-1] == "firing" and "recovering" not in states
    assert drawn["dotted"] == [70]
    chrome.find_element(By.ID, "ab-create").click()
    made = wait(
        lambda d: (t := d.find_element(By.ID, "ab-message").text).startswith("created rule ") and t
    )
    wait(lambda d: name in d.find_element(By.ID, "al-body").text, timeout=30)
    stored = rulebook_for(repo)().tables.rules()[made.split()[-1]]
    assert stored["thresholds"] == {
        "warning": 80.0,
        "critical": 90.0,
        "warning_recovery": 70.0,
        "critical_recovery": None,
    }
    assert (stored["for_s"], stored["keep_firing_for_s"]) == (30, 20)
    assert (stored["nodata_policy"], stored["nodata_windows"]) == ("alert", 5)
    assert stored["labels"] == {"team": "web", "tier": "front"}


def says(wait: Any, prefix: str) -> Any:
    """The inline check's text once it starts with ``prefix``."""
    return wait(lambda d: (t := d.find_element(By.ID, "ab-check").text).startswith(prefix) and t)


def _retype(chrome: Any, element_id: str, text: str) -> None:
    box = chrome.find_element(By.ID, element_id)
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(Keys.BACKSPACE, text)


def test_rule_builder_checks_each_field_while_typing(chrome, login, wait, repo) -> None:
    tag = uuid.uuid4().hex[:8]
    repo.save_query(f"FROM live{tag}-* SELECT cpu.util WINDOW 10s COMPUTE avg")
    login(path="/alerts")
    check = wait(lambda d: d.find_element(By.ID, "ab-check"))
    assert check.text.startswith("pick a query, a function and a threshold")  # blank explained
    pick(chrome, wait, "ab-query", f"live{tag}")

    says(wait, "function: must name one of the query's functions")
    pick(chrome, wait, "ab-function", "avg")
    _retype(chrome, "ab-warning", "NaN")
    assert (
        says(wait, "thresholds.warning:") == "thresholds.warning: must be a finite number, got nan"
    )
    _retype(chrome, "ab-warning", "80")
    _retype(chrome, "ab-for", str(2 * 365 * 86_400))  # a `for` of two years
    says(wait, "for_s: must be a whole number of seconds from 0 to 604800")
    _retype(chrome, "ab-for", "30")
    _retype(chrome, "ab-annotation", "{value.__class__}")
    says(wait, "annotation:")
    _retype(chrome, "ab-labels", "team")  # no `=`: no JSON to send, named by the form
    says(wait, "labels: 'team' is not name=value")
    _retype(chrome, "ab-labels", "team=web")
    _retype(chrome, "ab-annotation", "{rule} at {value}")
    says(wait, "name:")  # the one field left
    chrome.find_element(By.ID, "ab-name").send_keys(f"typed {tag}")
    says(wait, "valid:")
    # The other kind: the query's fields give way to the servers' glob and silence.
    pick(chrome, wait, "ab-kind", "server silent")
    wait(lambda d: d.find_element(By.ID, "ab-servers").is_displayed())
    assert not chrome.find_element(By.ID, "ab-warning").is_displayed()
    _retype(chrome, "ab-silent-after", "0")
    says(wait, "silent_after_s: must be at least 1 second")
    _retype(chrome, "ab-silent-after", "120")
    _retype(chrome, "ab-servers", f"live{tag}-*")
    says(wait, "valid:")
    repo.touch_servers({f"live{tag}-1": time.time() - 300})  # silent for 5 min: would fire
    chrome.find_element(By.ID, "ab-preview").click()
    previewed = wait(lambda d: d.find_element(By.ID, "ab-message").text)
    assert previewed.startswith(f"1 of 1 would fire now: live{tag}-1 firing (silent 30")
    chrome.find_element(By.ID, "ab-create").click()
    made = wait(
        lambda d: (t := d.find_element(By.ID, "ab-message").text).startswith("created rule ") and t
    )
    stored = rulebook_for(repo)().tables.rules()[made.split()[-1]]
    assert (stored["kind"], stored["servers"], stored["silent_after_s"]) == (
        "server_silent",
        f"live{tag}-*",
        120,
    )
    assert stored["labels"] == {"team": "web"}


def test_edit_loads_a_rule_into_the_builder_and_saves_it(chrome, login, wait, repo) -> None:
    tag = uuid.uuid4().hex[:8]
    query = repo.save_query(f"FROM edit{tag}-* SELECT cpu.util WINDOW 10s COMPUTE avg, max")
    book = rulebook_for(repo)()
    raw = {"name": f"edit {tag}", "query_id": query.id, "function": "max"}
    rule = book.create({**raw, "thresholds": {"warning": 80}, "labels": {"team": "web"}}, 0)
    login(path="/alerts")
    # The list is redrawn on every tick: the button is looked up afresh on each try.
    wait(lambda d: d.find_element(By.CSS_SELECTOR, f"#al-rule-{rule.id} button").click() or True)
    wait(lambda d: d.find_element(By.ID, "ab-title").text.startswith(f"Edit rule edit {tag}"))
    assert chrome.find_element(By.ID, "ab-warning").get_attribute("value") == "80"
    assert chrome.find_element(By.ID, "ab-labels").get_attribute("value") == "team=web"
    assert chrome.find_element(By.ID, "ab-create").text == "Save"
    says(wait, "valid:")  # the loaded rule, query and function included, checks as valid
    _retype(chrome, "ab-warning", "85.5")
    says(wait, "valid:")
    chrome.find_element(By.ID, "ab-create").click()
    assert wait(lambda d: d.find_element(By.ID, "ab-message").text) == f"saved rule {rule.id}"
    stored = book.tables.rules()
    assert stored[rule.id]["thresholds"]["warning"] == 85.5  # saved in place
    assert (stored[rule.id]["function"], stored[rule.id]["labels"]) == ("max", {"team": "web"})
    assert not [b for i, b in stored.items() if b["name"] == f"edit {tag}" and i != rule.id]
    chrome.find_element(By.ID, "ab-new").click()  # out of edit mode: Create again
    wait(lambda d: d.find_element(By.ID, "ab-create").text == "Create")


def test_silence_form_creates_lists_and_expires(chrome, login, wait) -> None:
    glob = f"maint{uuid.uuid4().hex[:8]}-*"
    login(path="/alerts")
    wait(lambda d: d.find_elements(By.ID, "si-form"))
    chrome.find_element(By.ID, "si-servers").send_keys(glob)
    _retype(chrome, "si-hours", "two")
    chrome.find_element(By.ID, "si-create").click()
    assert wait(lambda d: d.find_element(By.ID, "si-message").text).startswith("for:")
    _retype(chrome, "si-hours", "1")
    pick(chrome, wait, "si-day", "Sun")
    chrome.find_element(By.ID, "si-at").send_keys("02:00")
    chrome.find_element(By.ID, "si-len").send_keys("2")
    chrome.find_element(By.ID, "si-create").click()
    made = wait(
        lambda d: (t := d.find_element(By.ID, "si-message").text).startswith("created") and t
    )
    sid = made.split()[-1]
    # The list is redrawn on every refresh tick, so the row is looked up afresh each time (a
    # row held across a redraw is stale: it failed a run).
    text = wait(lambda d: d.find_element(By.ID, f"si-{sid}").text)
    assert f"servers {glob}: active until" in text
    assert "only Sun 02:00 UTC for 2 h each week" in text
    wait(lambda d: d.find_element(By.CSS_SELECTOR, f"#si-{sid} button").click() or True)
    # The message still says "created ..." until the click's callback answers: wait for it.
    expired = wait(
        lambda d: (t := d.find_element(By.ID, "si-message").text).startswith("expired") and t
    )
    assert expired == f"expired silence {sid}"
    wait(lambda d: not d.find_elements(By.ID, f"si-{sid}"))
