"""The alerts page in headless Chromium: the rule builder previews a rule against the last hour
of stored windows, refuses a bad one inline naming the field, and creates a good one, which the
list then shows with its state."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from apm.query import WindowResult

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
    repo.upsert_results(
        WindowResult(
            query.id, start + 10 * i, 10, {"avg": 95.0 if i > 40 else 50.0, "max": 99.0}, 3, now
        )
        for i in range(60)
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
    chrome.find_element(By.ID, "ab-preview").click()
    wait(lambda d: d.find_element(By.ID, "ab-graph").is_displayed())
    colors = chrome.execute_script(
        "const g = document.querySelector('#ab-graph .js-plotly-plot');"
        "return g && g.data ? g.data[0].text.map(t => t.split(':')[0]) : null;"
    )
    # 95 above the warning 80 from window 41 on: pending, then firing after for_s (30 s).
    assert "firing" in colors and "pending" in colors and colors[0] == "normal"
    chrome.find_element(By.ID, "ab-create").click()
    assert wait(lambda d: d.find_element(By.ID, "ab-message").text).startswith("created rule ")
    wait(lambda d: name in d.find_element(By.ID, "al-body").text, timeout=30)


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

    def says(prefix: str) -> Any:
        return wait(
            lambda d: (t := d.find_element(By.ID, "ab-check").text).startswith(prefix) and t
        )

    says("function: must name one of the query's functions")
    pick(chrome, wait, "ab-function", "avg")
    _retype(chrome, "ab-warning", "NaN")
    assert says("thresholds.warning:") == "thresholds.warning: must be a finite number, got nan"
    _retype(chrome, "ab-warning", "80")
    _retype(chrome, "ab-for", str(2 * 365 * 86_400))  # a `for` of two years
    says("for_s: must be a whole number of seconds from 0 to 604800")
    _retype(chrome, "ab-for", "30")
    _retype(chrome, "ab-annotation", "{value.__class__}")
    says("annotation:")
    _retype(chrome, "ab-annotation", "{rule} at {value}")
    says("name:")  # the one field left
    chrome.find_element(By.ID, "ab-name").send_keys(f"typed {tag}")
    says("valid:")


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
    row = wait(lambda d: d.find_elements(By.ID, f"si-{sid}"))[0]
    assert f"servers {glob}: active until" in row.text
    assert "only Sun 02:00 UTC for 2 h each week" in row.text
    row.find_element(By.TAG_NAME, "button").click()
    # The message still says "created ..." until the click's callback answers: wait for it.
    expired = wait(
        lambda d: (t := d.find_element(By.ID, "si-message").text).startswith("expired") and t
    )
    assert expired == f"expired silence {sid}"
    wait(lambda d: not d.find_elements(By.ID, f"si-{sid}"))
