"""Login, logout, bearer tokens and CSRF on a bare Flask app (the auth logic alone)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from flask import Flask
from werkzeug.security import generate_password_hash

from dashboard.auth import CSRF_COOKIE, SessionRegistry, check_credentials, install_auth
from dashboard.settings import DashboardSettings
from dashboard.telemetry import DashboardTelemetry

pytestmark = pytest.mark.unit

HASH = generate_password_hash("s3cret")


@pytest.fixture
def make_client() -> Any:
    def make(**overrides: Any) -> Any:
        settings = DashboardSettings(
            **{"user": "ops", "password_hash": HASH, "token": "tok", **overrides}
        )
        app = Flask("t")
        install_auth(app, settings, DashboardTelemetry())
        app.add_url_rule("/", "home", lambda: "home")
        app.add_url_rule("/api/x", "api_x", lambda: {"ok": True}, methods=["GET", "POST"])
        app.add_url_rule("/_dash-update-component", "cb", lambda: "{}", methods=["POST"])
        return app.test_client()

    return make


def _login(client: Any, user: str = "ops", password: str = "s3cret", next_: str = "/") -> Any:
    page = client.get("/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    return client.post(
        "/login", data={"csrf_token": csrf, "user": user, "password": password, "next": next_}
    )


def test_pages_redirect_to_login_and_callbacks_are_refused(make_client: Any) -> None:
    client = make_client()
    response = client.get("/")
    assert response.status_code == 302 and response.headers["Location"].startswith("/login")
    assert client.post("/_dash-update-component").status_code == 401
    assert client.get("/api/x").status_code == 401


def test_login_then_logout_then_refused(make_client: Any) -> None:
    client = make_client()
    response = _login(client)
    assert response.status_code == 302
    csrf = client.get_cookie(CSRF_COOKIE).value
    assert client.get("/").get_data(as_text=True) == "home"
    assert client.post("/_dash-update-component", headers={"X-CSRFToken": csrf}).status_code == 200
    assert client.post("/logout", data={"csrf_token": csrf}).status_code == 302
    assert client.get("/").status_code == 302
    assert client.post("/_dash-update-component", headers={"X-CSRFToken": csrf}).status_code == 401


def test_a_cookie_replayed_after_logout_is_refused(make_client: Any) -> None:
    client = make_client()
    _login(client)
    stolen = client.get_cookie("apm_dashboard_session").value
    csrf = client.get_cookie(CSRF_COOKIE).value
    client.post("/logout", data={"csrf_token": csrf})
    client.set_cookie("apm_dashboard_session", stolen)
    assert client.get("/").status_code == 302


def test_state_changes_need_the_csrf_header(make_client: Any) -> None:
    client = make_client()
    _login(client)
    assert client.post("/_dash-update-component").status_code == 403
    assert (
        client.post("/_dash-update-component", headers={"X-CSRFToken": "forged"}).status_code == 403
    )
    assert client.post("/api/x").status_code == 403
    assert client.get("/api/x").status_code == 200
    assert client.post("/logout", data={"csrf_token": "forged"}).status_code == 403


def test_login_form_needs_its_csrf_token_and_right_credentials(make_client: Any) -> None:
    client = make_client()
    no_token = client.post("/login", data={"user": "ops", "password": "s3cret"})
    assert no_token.status_code == 400
    assert _login(client, password="wrong").status_code == 401
    assert _login(client, user="root").status_code == 401
    assert _login(make_client(), user="", password="tok").status_code == 302


def test_bearer_token_for_the_api_only(make_client: Any) -> None:
    client = make_client()
    ok = {"Authorization": "Bearer tok"}
    assert client.post("/api/x", headers=ok).status_code == 200
    assert client.get("/api/x", headers={"Authorization": "Bearer bad"}).status_code == 401
    assert client.get("/", headers=ok).status_code == 302  # pages want a login
    no_token = make_client(token="")
    assert no_token.get("/api/x", headers=ok).status_code == 401


def test_next_is_only_followed_within_the_site(make_client: Any) -> None:
    assert _login(make_client(), next_="//evil.example/").headers["Location"] == "/"
    assert _login(make_client(), next_="/chart?q=1").headers["Location"] == "/chart?q=1"


def test_no_credentials_configured_refuses_to_start() -> None:
    with pytest.raises(ValueError, match="refusing"):
        install_auth(
            Flask("t"), DashboardSettings(password_hash="", token=""), DashboardTelemetry()
        )


def test_credentials_and_sessions() -> None:
    s = DashboardSettings(user="ops", password_hash=HASH, token="")
    assert check_credentials(s, "ops", "s3cret")
    assert not check_credentials(s, "ops", "")
    assert not check_credentials(DashboardSettings(password_hash="garbage"), "admin", "x")
    now = [0.0]
    registry = SessionRegistry(10, clock=lambda: now[0])
    sid = registry.open()
    assert registry.valid(sid) and not registry.valid("other") and not registry.valid(None)
    now[0] = 11
    assert not registry.valid(sid)
