"""Login, logout, bearer tokens and CSRF on a bare Flask app (the auth logic alone)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from flask import Flask
from werkzeug.security import generate_password_hash

from dashboard import signin
from dashboard.auth import CSRF_COOKIE, install_auth
from dashboard.sessions import SignedSessions
from dashboard.settings import MIN_TOKEN_BITS, DashboardSettings, token_bits
from dashboard.signin import check_credentials
from dashboard.telemetry import DashboardTelemetry
from dashboard.throttle import LoginThrottle

pytestmark = pytest.mark.unit

HASH = generate_password_hash("s3cret")
TOKEN = "tok-Wp3Xk8Rz5Lq2Nv7Hc4Tb9Md6"


@pytest.fixture
def make_client() -> Any:
    def make(clock: Any = None, throttle: Any = None, **overrides: Any) -> Any:
        settings = DashboardSettings(
            **{"user": "ops", "password_hash": HASH, "token": TOKEN, **overrides}
        )
        app = Flask("t")
        extra = {"clock": clock} if clock else {}
        install_auth(app, settings, DashboardTelemetry(), throttle=throttle, **extra)
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
    assert _login(make_client(), user="", password=TOKEN).status_code == 302


def test_bearer_token_for_the_api_only(make_client: Any) -> None:
    client = make_client()
    ok = {"Authorization": f"Bearer {TOKEN}"}
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
    sessions = SignedSessions(10, clock=lambda: now[0])
    session: dict[str, Any] = {}
    sessions.open(session, "ops")
    assert sessions.valid(session) and not sessions.valid({}) and not sessions.valid({"sid": 1})
    assert not sessions.valid({**session, "exp": True})
    now[0] = 11
    assert not sessions.valid(session)


SECRET = "shared-secret-key-0123456789"
SESSION_COOKIE = "apm_dashboard_session"


def test_a_session_made_by_one_replica_is_accepted_by_another(make_client: Any) -> None:
    # Two replicas behind one load balancer (deploy/k8s runs 2): same key, no shared memory.
    a, b = make_client(secret_key=SECRET), make_client(secret_key=SECRET)
    assert _login(a).status_code == 302
    b.set_cookie(SESSION_COOKIE, a.get_cookie(SESSION_COOKIE).value)
    assert b.get("/").get_data(as_text=True) == "home"
    csrf = a.get_cookie(CSRF_COOKIE).value
    assert b.post("/api/x", headers={"X-CSRFToken": csrf}).status_code == 200
    # A replica with another key refuses it.
    other = make_client(secret_key="another-secret-key-0123456789")
    other.set_cookie(SESSION_COOKIE, a.get_cookie(SESSION_COOKIE).value)
    assert other.get("/").status_code == 302


def test_a_tampered_session_cookie_is_refused(make_client: Any) -> None:
    a, b = make_client(secret_key=SECRET), make_client(secret_key=SECRET)
    _login(a)
    cookie = a.get_cookie(SESSION_COOKIE).value
    payload, _, signature = cookie.rpartition(".")
    # The first character carries six bits of the MAC; the last one of unpadded base64 also
    # carries padding bits that decoders ignore, so changing it could leave the MAC as it was.
    flipped = ("A" if signature[0] != "A" else "B") + signature[1:]
    for forged in (f"{payload}.{flipped}", "x" + cookie, cookie[:-3]):
        b.set_cookie(SESSION_COOKIE, forged)
        assert b.get("/").status_code == 302, forged
        assert b.get("/api/x").status_code == 401


def test_a_session_expires_on_every_replica(make_client: Any) -> None:
    now = [1_000_000.0]
    a = make_client(secret_key=SECRET, clock=lambda: now[0], session_hours=1)
    b = make_client(secret_key=SECRET, clock=lambda: now[0], session_hours=1)
    _login(a)
    b.set_cookie(SESSION_COOKIE, a.get_cookie(SESSION_COOKIE).value)
    now[0] += 3599
    assert b.get("/").status_code == 200
    now[0] += 2
    assert b.get("/").status_code == 302
    assert a.get("/").status_code == 302


def test_a_short_secret_key_is_refused(make_client: Any) -> None:
    with pytest.raises(ValueError, match="at least 16"):
        make_client(secret_key="short")


@pytest.mark.parametrize(
    "target",
    [
        "//evil.example/",
        "/\t/evil.example",
        "/\\t/evil.example".replace("\\t", "\t\t"),
        "/\n/evil.example",
        "/\r\n/evil.example",
        "\t//evil.example",
        " //evil.example",
        "/\\evil.example",
        "\\\\evil.example",
        "/%09/evil.example",
        "/%2F/evil.example",
        "/%252F%252Fevil.example",
        "/%5Cevil.example",
        "https://evil.example/",
        "javascript:alert(1)",
        "evil.example",
        "/\x00/evil.example",
        "/\u2028/evil.example",
        "/" + "a" * 5000,
    ],
)
def test_next_never_leaves_the_site(make_client: Any, target: str) -> None:
    assert _login(make_client(), next_=target).headers["Location"] == "/"


def test_next_from_the_login_url_with_an_encoded_tab_stays_on_the_site(make_client: Any) -> None:
    # The reported case: /login?next=/%09/evil.example, a browser drops the tab: //evil.example
    client = make_client()
    page = client.get("/login?next=/%09/evil.example").get_data(as_text=True)
    next_ = re.search(r'name="next" value="([^"]*)"', page).group(1)  # type: ignore[union-attr]
    assert next_ == "/"
    assert _login(client, next_=next_).headers["Location"] == "/"


def test_next_keeps_same_site_paths(make_client: Any) -> None:
    for target in ("/chart?q=1,2&range=1h", "/health", "/chart?q=a%2Cb"):
        assert _login(make_client(), next_=target).headers["Location"] == target


def _throttle(now: list[float], **kw: Any) -> LoginThrottle:
    args = {
        "client_burst": 3,
        "client_per_minute": 6,
        "global_burst": 5,
        "global_per_second": 1,
        **kw,
    }
    return LoginThrottle(**args, clock=lambda: now[0])


def test_login_attempts_are_throttled_per_client_before_the_hash_runs(
    make_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    checks: list[str] = []
    real = signin.check_credentials
    monkeypatch.setattr(
        signin, "check_credentials", lambda s, u, p: checks.append(p) or real(s, u, p)
    )
    now = [0.0]
    client = make_client(throttle=_throttle(now, global_burst=100))
    for _ in range(3):
        assert _login(client, password="wrong").status_code == 401
    refused = _login(client, password="s3cret")
    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == "10"  # 6 a minute: one token every 10 s
    assert len(checks) == 3  # the hash never ran for the refused attempt
    now[0] += 10
    assert _login(client, password="s3cret").status_code == 302
    # Another client is not held up by this one.
    client.environ_base["REMOTE_ADDR"] = "10.0.0.9"
    assert _login(client, password="wrong").status_code == 401


def test_login_attempts_are_throttled_globally(make_client: Any) -> None:
    now = [0.0]
    client = make_client(throttle=_throttle(now))
    for i in range(5):
        client.environ_base["REMOTE_ADDR"] = f"10.0.0.{i}"
        assert _login(client, password="wrong").status_code == 401
    client.environ_base["REMOTE_ADDR"] = "10.0.0.99"
    refused = _login(client, password="s3cret")
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "1"
    now[0] += 1
    assert _login(client, password="s3cret").status_code == 302


def test_the_throttle_forgets_idle_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    from dashboard import throttle

    monkeypatch.setattr(throttle, "MAX_CLIENTS", 3)
    now = [0.0]
    t = _throttle(now, global_burst=1000, global_per_second=1000)
    for i in range(10):
        assert t.check(f"c{i}") == (0, None)
    assert len(t._clients) <= 3


def test_behind_a_trusted_proxy_each_forwarded_client_has_its_own_bucket(
    make_client: Any,
) -> None:
    now = [0.0]
    client = make_client(throttle=_throttle(now, global_burst=100), proxy_hops=1)
    client.environ_base["HTTP_X_FORWARDED_FOR"] = "198.51.100.1"
    for _ in range(3):
        assert _login(client, password="wrong").status_code == 401
    assert _login(client, password="wrong").status_code == 429
    client.environ_base["HTTP_X_FORWARDED_FOR"] = "198.51.100.2"
    assert _login(client, password="wrong").status_code == 401


def test_bearer_guesses_are_throttled_per_client_and_a_right_token_spends_nothing(
    make_client: Any,
) -> None:
    now = [0.0]
    client = make_client(throttle=_throttle(now, global_burst=100))
    ok = {"Authorization": f"Bearer {TOKEN}"}
    for _ in range(20):  # the right token never takes from the bucket
        assert client.get("/api/x", headers=ok).status_code == 200
    for i in range(3):
        wrong = client.get("/api/x", headers={"Authorization": f"Bearer guess{i}"})
        assert wrong.status_code == 401
    refused = client.get("/api/x", headers=ok)  # even the right token: no oracle while refused
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "10"
    assert refused.get_json()["error"] == "too_many_requests"
    assert client.get("/", headers=ok).status_code == 302  # pages still want a login
    now[0] += 10
    assert client.get("/api/x", headers=ok).status_code == 200
    client.environ_base["REMOTE_ADDR"] = "10.0.0.9"  # another client is not held up
    assert client.get("/api/x", headers={"Authorization": "Bearer x"}).status_code == 401


def test_bearer_guesses_share_the_login_bucket(make_client: Any) -> None:
    now = [0.0]
    client = make_client(throttle=_throttle(now, global_burst=100))
    for i in range(3):
        assert client.get("/api/x", headers={"Authorization": f"Bearer g{i}"}).status_code == 401
    assert _login(client).status_code == 429


@pytest.mark.parametrize(
    "weak", ["tok", "test-token-0123456789", "a" * 200, "ab" * 64, "0123456789abcdef" * 2]
)
def test_a_weak_operator_token_is_refused_at_start(weak: str) -> None:
    with pytest.raises(ValueError, match=r"APM_DASHBOARD_TOKEN is too weak.*128"):
        DashboardSettings(token=weak)


def test_generated_tokens_pass_the_strength_check(tmp_path: Any) -> None:
    import secrets
    import uuid

    from launch.processes import dashboard_token

    DashboardSettings(token=dashboard_token(tmp_path))  # what `make run` generates
    for _ in range(20):
        DashboardSettings(token=secrets.token_urlsafe(24))
        DashboardSettings(token=uuid.uuid4().hex)
    # The estimate alone over many draws (a settings object costs a read of the environment).
    assert min(token_bits(secrets.token_urlsafe(24)) for _ in range(5000)) >= MIN_TOKEN_BITS
    assert min(token_bits(uuid.uuid4().hex) for _ in range(5000)) >= MIN_TOKEN_BITS
    assert token_bits(TOKEN) >= MIN_TOKEN_BITS


def test_a_weak_token_in_the_environment_stops_the_dashboard(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("APM_DASHBOARD_TOKEN", "letmein")
    with pytest.raises(ValueError, match="too weak"):
        DashboardSettings()


def test_cookies_over_plain_http_are_not_secure(make_client: Any) -> None:
    # make run serves HTTP on loopback: a Secure cookie would never come back to it.
    # (Over HTTPS they are Secure: tests/dashboard/test_tls.py.)
    signed_in = _login(make_client())
    cookies = [c.lower() for c in signed_in.headers.getlist("Set-Cookie")]
    assert len(cookies) == 2 and all("httponly" in c or "_csrf_token" in c for c in cookies)
    assert not any("secure" in c for c in cookies), cookies
