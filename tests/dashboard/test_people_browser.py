"""The users page in headless Chromium, on the real Cassandra: an admin sees the users and
their API tokens, raises a user's role, disables it and revokes its token, each change in the
tables the login reads; a viewer's /users page says it is for admins and offers no link to it
(tests/dashboard/test_roles.py sends its callbacks as every role: 403 below admin)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from dashboard.api_tokens import TokenDirectory
from dashboard.telemetry import DashboardTelemetry
from dashboard.users import UserDirectory
from storage.tokens import TokenStore
from storage.users import UserStore

pytestmark = pytest.mark.e2e

PW = "long enough password"


@pytest.fixture
def people(repo: Any) -> tuple[UserDirectory, TokenDirectory]:
    telemetry = DashboardTelemetry()
    users = UserDirectory(UserStore(repo.session, repo.keyspace), telemetry, cache_s=0)
    return users, TokenDirectory(TokenStore(repo.session, repo.keyspace), users, telemetry)


@pytest.fixture
def signed_out(chrome: Any, served: Any) -> Iterator[None]:
    _sign_out(chrome, served)
    yield
    _sign_out(chrome, served)  # the next tests sign in as they do


def _sign_out(chrome: Any, served: Any) -> None:
    chrome.get(served.url + "/healthz")  # off the Dash page: no callback brings a cookie back
    chrome.delete_all_cookies()


def _type(chrome: Any, element_id: str, text: str) -> None:
    # Selected and typed over, as a person does: clear() bypasses React's change event, and
    # Dash would keep the old value.
    field = chrome.find_element(By.ID, element_id)
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(Keys.DELETE)
    field.send_keys(text)


def _message(chrome: Any, wait: Callable[..., Any], contains: str) -> str:
    return str(
        wait(
            lambda d: (
                contains in d.find_element(By.ID, "pe-message").text
                and d.find_element(By.ID, "pe-message").text
            )
        )
    )


def test_an_admin_changes_a_role_disables_a_user_and_revokes_its_token(
    signed_out: None,
    chrome: Any,
    login: Any,
    wait: Callable[..., Any],
    people: tuple[UserDirectory, TokenDirectory],
) -> None:
    users, tokens = people
    name = f"pe-{uuid.uuid4().hex[:8]}"
    users.add(name, "viewer", PW)
    _, token = tokens.create(name, None, 3600.0, "browser test")
    login(path="/users")  # the built-in login: an admin
    wait(lambda d: d.find_elements(By.ID, f"pe-user-{name}"))
    assert "viewer" in chrome.find_element(By.ID, f"pe-user-{name}").text
    assert "active" in chrome.find_element(By.ID, f"pe-token-{token.id}").text
    assert chrome.find_element(By.ID, "nav-users").is_displayed()

    _type(chrome, "pe-user", name)
    chrome.find_element(By.CSS_SELECTOR, "#pe-role input[value='editor']").click()
    chrome.find_element(By.ID, "pe-set-role").click()
    _message(chrome, wait, f"{name} is now editor")
    wait(lambda d: "editor" in d.find_element(By.ID, f"pe-user-{name}").text)
    assert users.role(name) == "editor"

    chrome.find_element(By.ID, "pe-disable").click()
    _message(chrome, wait, f"{name} is disabled")
    wait(lambda d: "disabled" in d.find_element(By.ID, f"pe-user-{name}").text)
    assert users.state(name) == (None, True)

    _type(chrome, "pe-token", token.id)
    chrome.find_element(By.ID, "pe-revoke").click()
    _message(chrome, wait, f"token {token.id} revoked")
    wait(lambda d: "revoked" in d.find_element(By.ID, f"pe-token-{token.id}").text)
    assert [t.revoked_at is not None for t in tokens.list() if t.id == token.id] == [True]

    # Bad input is answered where it was typed, and nothing changes.
    _type(chrome, "pe-token", "zz")
    chrome.find_element(By.ID, "pe-revoke").click()
    _message(chrome, wait, "bad token id 'zz'")
    _type(chrome, "pe-user", f"nobody-{name}")
    chrome.find_element(By.ID, "pe-enable").click()
    _message(chrome, wait, f"no user 'nobody-{name}'")
    _type(chrome, "pe-user", "ops")  # the admin signed in: no locking oneself out here
    chrome.find_element(By.ID, "pe-disable").click()
    _message(chrome, wait, "you cannot change your own user here")


def test_a_viewers_users_page_is_for_admins_only(
    signed_out: None,
    chrome: Any,
    login: Any,
    wait: Callable[..., Any],
    served: Any,
    people: tuple[UserDirectory, TokenDirectory],
) -> None:
    name = f"pv-{uuid.uuid4().hex[:8]}"
    people[0].add(name, "viewer", PW)
    login(user=name, password=PW, path="/users")
    wait(lambda d: d.find_elements(By.ID, "pe-admins-only"))
    assert not chrome.find_elements(By.ID, "nav-users")
    assert not chrome.find_elements(By.ID, "pe-users")
    # The page's own session and CSRF header: the listing callback is refused anyway.
    status = chrome.execute_async_script(
        """const done = arguments[arguments.length - 1];
        const csrf = document.cookie.split('; ').find(c => c.startsWith('_csrf_token='));
        fetch('/_dash-update-component', {method: 'POST', headers: {'Content-Type':
          'application/json', 'X-CSRFToken': csrf.split('=')[1]},
          body: JSON.stringify({output: 'pe-body.children', outputs: {id: 'pe-body',
            property: 'children'}, inputs: [], changedPropIds: []})})
          .then(r => r.json().then(b => done([r.status, b.error])));"""
    )
    assert status == [403, "forbidden"]
