"""The auth proxy's single sign-on (dashboard/auth_proxy.py) on a bare Flask app with the login
and role hooks, over the in-memory users' store: who the header signs in, with which role,
its session and CSRF token, and what an untrusted address, a bad value or a disabled user
gets."""

from __future__ import annotations

import base64
import logging
from typing import Any

import pytest
from flask import Flask
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dashboard.auth import CSRF_COOKIE, install_auth
from dashboard.auth_proxy import LOG_EVERY_S, AuthProxy
from dashboard.permits import install_permits
from dashboard.settings import DashboardSettings
from dashboard.telemetry import DashboardTelemetry
from dashboard.users import NO_PASSWORD, UserDirectory, name_error
from tests.support.users import MemoryUsers

pytestmark = pytest.mark.unit

TOKEN = "tok-Wp3Xk8Rz5Lq2Nv7Hc4Tb9Md6"
PROXY, STRANGER = "10.0.0.5", "10.0.0.99"
HEADER = "X-WEBAUTH-USER"


class Bench:
    def __init__(self, **overrides: Any) -> None:
        self.store = MemoryUsers()
        self.telemetry = DashboardTelemetry()
        self.users = UserDirectory(self.store, self.telemetry, cache_s=0)
        settings = DashboardSettings(
            **{
                "token": TOKEN,
                "auth_proxy_enabled": True,
                "auth_proxy_trusted": "10.0.0.0/29, fd00::/64",
                **overrides,
            }
        )
        self.app = Flask("t")
        install_auth(self.app, settings, self.telemetry, users=lambda: self.users)
        self.app.add_url_rule("/", "home", lambda: "home")
        self.app.add_url_rule("/api/x", "api_x", lambda: {"ok": True})
        # Its endpoint is the queries API's, so that the roles table needs an editor for it.
        self.app.add_url_rule(
            "/api/queries", "api.create_query", lambda: ({"made": True}, 201), methods=["POST"]
        )
        install_permits(self.app, self.telemetry, lambda: {})

    def client(self, peer: str = PROXY, user: str | None = None) -> Any:
        client = self.app.test_client()
        client.environ_base["REMOTE_ADDR"] = peer
        if user is not None:
            client.environ_base["HTTP_X_WEBAUTH_USER"] = user
        return client

    def refused(self, reason: str) -> float:
        return self.telemetry.refused.labels(reason)._value.get()


def _csrf(client: Any) -> str:
    cookie = client.get_cookie(CSRF_COOKIE)
    assert cookie is not None, "no CSRF cookie was set"
    return str(cookie.value)


def test_a_name_never_seen_becomes_a_viewer_without_a_password() -> None:
    bench = Bench()
    client = bench.client(user="alice@example.com")
    assert client.get("/").get_data(as_text=True) == "home"
    stored = bench.store.users["alice@example.com"]
    assert (stored.role, stored.password_hash, stored.disabled) == ("viewer", NO_PASSWORD, False)
    assert bench.users.verify("alice@example.com", NO_PASSWORD) is None  # no password signs in
    assert bench.telemetry.logins.labels("proxy_sign_up")._value.get() == 1
    # A viewer reads, and its write is refused by the roles table, CSRF token or not.
    assert client.get("/api/x").json == {"ok": True}
    refused = client.post("/api/queries", headers={"X-CSRFToken": _csrf(client)})
    assert refused.status_code == 403
    assert refused.json["error"] == "forbidden"
    assert "the viewer role may not do this: it needs editor" in refused.json["detail"]


def test_the_stored_role_applies_and_a_raise_reaches_the_next_request() -> None:
    bench = Bench()
    client = bench.client(user="bob")
    client.get("/")
    assert client.post("/api/queries", headers={"X-CSRFToken": _csrf(client)}).status_code == 403
    bench.users.set_role("bob", "editor")
    made = client.post("/api/queries", headers={"X-CSRFToken": _csrf(client)})
    assert made.status_code == 201, made.json


def test_a_write_through_the_proxy_still_needs_the_csrf_token() -> None:
    bench = Bench(auth_proxy_default_role="editor")
    client = bench.client(user="carol")
    # A cross-site form carries the proxy's header but never the session's token.
    first = client.post("/api/queries")
    assert first.status_code == 403 and "CSRF" in first.json["detail"]
    assert client.post("/api/queries", headers={"X-CSRFToken": "forged"}).status_code == 403
    assert client.post("/api/queries", headers={"X-CSRFToken": _csrf(client)}).status_code == 201


def test_the_session_is_kept_while_the_proxy_names_the_same_user() -> None:
    bench = Bench(auth_proxy_default_role="editor")
    client = bench.client(user="dave")
    client.get("/")
    token = _csrf(client)
    client.get("/api/x")
    assert _csrf(client) == token  # the same session: a Dash page's token stays good
    assert bench.telemetry.logins.labels("proxy")._value.get() == 1
    # The proxy now names someone else: that user's own session, a new token.
    client.environ_base["HTTP_X_WEBAUTH_USER"] = "erin"
    assert client.post("/api/queries", headers={"X-CSRFToken": token}).status_code == 403
    assert _csrf(client) != token
    assert client.post("/api/queries", headers={"X-CSRFToken": _csrf(client)}).status_code == 201


def test_a_proxy_session_without_the_proxy_is_refused() -> None:
    bench = Bench()
    client = bench.client(user="frank")
    assert client.get("/").status_code == 200
    # The proxy stops naming the user (signed out of the SSO): the session ends with it.
    del client.environ_base["HTTP_X_WEBAUTH_USER"]
    assert client.get("/").status_code == 302
    assert client.get("/api/x").status_code == 401
    # The same cookie with the header, sent from an address that is not the proxy.
    client.environ_base["HTTP_X_WEBAUTH_USER"] = "frank"
    client.environ_base["REMOTE_ADDR"] = STRANGER
    assert client.get("/api/x").status_code == 401


def test_the_header_from_an_untrusted_address_is_ignored_counted_and_logged_now_and_then(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bench = Bench()
    caplog.set_level(logging.WARNING, logger="dashboard.auth_proxy")
    for peer in (STRANGER, "10.0.0.8", "fd00:0:0:1::5", "127.0.0.1"):
        client = bench.client(peer, user="mallory")
        assert client.get("/").status_code == 302  # to the login page, as without the header
        assert client.get("/api/x").status_code == 401
    assert "mallory" not in bench.store.users
    assert bench.refused("untrusted_proxy_header") == 8
    warnings = [r.getMessage() for r in caplog.records if r.name == "dashboard.auth_proxy"]
    assert len(warnings) == 1 and "ignored the X-WEBAUTH-USER header of 1 request(s)" in warnings[0]
    assert bench.client("fd00::9", user="grace").get("/").status_code == 200  # IPv6 proxy


def test_ignored_headers_are_logged_once_a_minute_with_their_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [1000.0]
    proxy = AuthProxy(
        DashboardSettings(token=TOKEN, auth_proxy_enabled=True, auth_proxy_trusted="10.0.0.5"),
        None,
        DashboardTelemetry(),
        clock=lambda: now[0],
    )
    caplog.set_level(logging.WARNING, logger="dashboard.auth_proxy")
    headers = _Headers({HEADER: "x"})
    for _ in range(5):
        assert proxy.identify(headers, STRANGER) is None
    now[0] += LOG_EVERY_S
    assert proxy.identify(headers, STRANGER) is None
    lines = [r.getMessage() for r in caplog.records if r.name == "dashboard.auth_proxy"]
    counts = [line.split(" header of ")[1].split(" ")[0] for line in lines]
    assert counts == ["1", "5"]


class _Headers:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, name: str) -> str | None:
        return self.values.get(name)


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("-alice", "bad user name '-alice'"),
        ("alice smith", "bad user name"),
        ("alice/../admin", "bad user name"),
        ("a" * 65, "at most 64"),
        ("a" * 10_000, "is 10000 characters"),
    ],
)
def test_a_bad_value_is_a_400_naming_the_header(value: str, match: str) -> None:
    bench = Bench()
    answer = bench.client(user=value).get("/api/x")
    assert answer.status_code == 400
    assert answer.json["error"] == "bad_request" and answer.json["at"] == f"header:{HEADER}"
    assert match in answer.json["detail"] and HEADER in answer.json["detail"]
    assert bench.store.users == {}


def test_the_header_sent_twice_is_a_400() -> None:
    bench = Bench()
    answer = bench.client().get("/api/x", headers=[(HEADER, "alice"), (HEADER, "admin")])
    assert answer.status_code == 400  # WSGI joins them: "alice, admin" is no user name
    assert "bad user name 'alice, admin'" in answer.json["detail"]


def test_a_disabled_user_is_a_403_and_no_sign_up_refuses_a_stranger() -> None:
    bench = Bench(auth_proxy_auto_sign_up=False)
    bench.users.add("heidi", "editor", "long enough password")
    bench.users.set_disabled("heidi", True)
    answer = bench.client(user="heidi").get("/")
    assert answer.status_code == 403 and answer.json["error"] == "forbidden"
    assert "'heidi' is disabled" in answer.json["detail"]
    stranger = bench.client(user="ivan").get("/api/x")
    assert stranger.status_code == 403 and "auto sign-up is off" in stranger.json["detail"]
    assert "ivan" not in bench.store.users
    bench.users.set_disabled("heidi", False)
    assert bench.client(user="heidi").get("/").status_code == 200  # with its password's role


def test_an_authorization_header_beside_the_proxys_is_not_read() -> None:
    # nginx's auth_basic passes the browser's Basic credentials on unless told otherwise.
    bench = Bench()
    basic = "Basic " + base64.b64encode(b"judy:nginx-password").decode()
    client = bench.client(user="judy")
    for _ in range(10):  # more than the login bucket: nothing is taken from it
        assert client.get("/api/x", headers={"Authorization": basic}).status_code == 200


def test_a_spoofed_forwarded_for_does_not_make_a_stranger_the_proxy() -> None:
    bench = Bench(proxy_hops=1)
    client = bench.client(STRANGER, user="mallory")
    client.environ_base["HTTP_X_FORWARDED_FOR"] = PROXY
    assert client.get("/api/x").status_code == 401
    trusted = bench.client(PROXY, user="ken")
    trusted.environ_base["HTTP_X_FORWARDED_FOR"] = "198.51.100.7"  # the browser behind it
    assert trusted.get("/api/x").status_code == 200


def test_an_unreadable_user_store_is_a_503() -> None:
    bench = Bench()
    bench.store.down = True
    answer = bench.client(user="leo").get("/api/x")
    assert answer.status_code == 503 and answer.json["error"] == "storage_unavailable"


def test_without_the_mode_the_header_means_nothing() -> None:
    bench = Bench(auth_proxy_enabled=False)
    assert bench.client(user="alice").get("/api/x").status_code == 401
    assert bench.store.users == {}


_NAME_CHARS = st.characters(min_codepoint=33, max_codepoint=126)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        st.text(_NAME_CHARS, min_size=1, max_size=80),
        st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,70}", fullmatch=True),
    )
)
def test_any_header_value_is_a_user_or_a_clear_400(value: str) -> None:
    bench = Bench()
    answer = bench.client(user=value).get("/api/x")
    if name_error(value) is None:
        assert answer.status_code == 200
        assert list(bench.store.users) == [value]
    else:
        assert answer.status_code == 400, value
        assert HEADER in answer.json["detail"]
        assert bench.store.users == {}
