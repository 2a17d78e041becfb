"""A viewer in headless Chromium: it signs in with its own password, reads the queries,
dashboards and alerts pages, sees who it is and no control that writes, and a write it forces
through the API from that very page is 403 (tests/dashboard/test_roles.py checks every route
and callback; this is the page as a person sees it). An editor creates a query on its page,
and the audit log shows it with the editor's name."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from dashboard.telemetry import DashboardTelemetry
from dashboard.users import UserDirectory
from storage.users import UserStore

pytestmark = pytest.mark.e2e

PW = "long enough password"


def _signed_in_as(role: str, chrome: Any, login: Any, repo: Any, served: Any) -> Iterator[str]:
    name = f"{role}-{uuid.uuid4().hex[:8]}"
    UserDirectory(UserStore(repo.session, repo.keyspace), DashboardTelemetry()).add(name, role, PW)
    repo.save_query(f"FROM {name}-* SELECT cpu WINDOW 10s COMPUTE avg")
    _sign_out(chrome, served)
    login(user=name, password=PW)
    yield name
    _sign_out(chrome, served)  # the next tests sign in as they do


@pytest.fixture
def as_viewer(chrome: Any, login: Any, repo: Any, served: Any) -> Iterator[str]:
    yield from _signed_in_as("viewer", chrome, login, repo, served)


@pytest.fixture
def as_editor(chrome: Any, login: Any, repo: Any, served: Any) -> Iterator[str]:
    yield from _signed_in_as("editor", chrome, login, repo, served)


def _sign_out(chrome: Any, served: Any) -> None:
    """Whoever is signed in, off this browser. Off the Dash page first: a callback still in
    flight would otherwise bring the session's cookie back with its answer."""
    chrome.get(served.url + "/healthz")
    chrome.delete_all_cookies()


def test_a_viewer_sees_no_control_that_writes(
    as_viewer: str, chrome: Any, wait: Any, served: Any
) -> None:
    assert chrome.find_element(By.ID, "signed-in").text == f"{as_viewer} (viewer)"
    wait(lambda d: d.find_elements(By.ID, "q-table"))
    wait(lambda d: as_viewer in d.find_element(By.ID, "q-table").text)
    if shot := os.environ.get("APM_TEST_VIEWER_PNG"):  # to look at the viewer's page
        chrome.save_screenshot(shot)
    for path, present in (("/", "builder"), ("/dashboards", "l-create"), ("/alerts", "ab-form")):
        chrome.get(served.url + path)
        wait(lambda d, p=present: d.find_elements(By.ID, p))
        writes = chrome.find_elements(By.CSS_SELECTOR, ".writes")
        assert writes, path
        assert not [w for w in writes if w.is_displayed()], path
        assert not chrome.find_element(By.ID, present).is_displayed(), path
    # The page's own session, CSRF header and all: the write is refused anyway.
    status = chrome.execute_async_script(
        """const done = arguments[arguments.length - 1];
        const csrf = document.cookie.split('; ').find(c => c.startsWith('_csrf_token='));
        fetch('/api/queries', {method: 'POST', headers: {'Content-Type': 'application/json',
          'X-CSRFToken': csrf.split('=')[1]},
          body: JSON.stringify({text: 'FROM * SELECT cpu WINDOW 10s COMPUTE avg'})})
          .then(r => r.json().then(b => done([r.status, b.error])));"""
    )
    assert status == [403, "forbidden"]


def test_an_editors_query_is_in_the_audit_log_with_its_name(
    as_editor: str, chrome: Any, wait: Any, api: Any
) -> None:
    from selenium.webdriver.common.keys import Keys

    text = f"FROM {as_editor}-web-* SELECT mem WINDOW 10s COMPUTE max"
    field = wait(lambda d: d.find_elements(By.ID, "t-text"))[0]
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(Keys.DELETE)
    field.send_keys(text)
    chrome.find_element(By.ID, "t-create").click()
    wait(lambda d: f"{as_editor}-web-*" in d.find_element(By.ID, "q-table").text)
    answer = api.get("/api/audit", params={"kind": "query", "user": as_editor})
    assert answer.status_code == 200, answer.text
    (entry,) = answer.json()["entries"]  # the page's query, not the one the fixture stored
    assert (entry["user"], entry["via"], entry["action"]) == (as_editor, "session", "create")
    assert entry["after"]["text"].lower() == text.lower() and entry["before"] is None
    assert entry["address"] == "127.0.0.1"
