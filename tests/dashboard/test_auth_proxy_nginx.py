"""Single sign-on behind Debian's nginx, on the real app and the real Cassandra: nginx checks
Basic credentials (``auth_basic``, standing in for a company's SSO) and names the user in
X-WEBAUTH-USER, as docs/security.md's example does; the dashboard trusts only nginx's address.

nginx connects to the dashboard from 127.0.0.40 (``proxy_bind``), the one trusted address;
the test's own direct requests come from 127.0.0.41, so the same header sent directly is an
untrusted one."""

from __future__ import annotations

import base64
import hashlib
import os
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from dashboard.permits import callback_name
from dashboard.roles import CALLBACK_ROLES
from launch.probe import free_port
from tests.dashboard.conftest import TOKEN
from tests.support.nginx import running_nginx

pytestmark = pytest.mark.integration

NGINX_PEER, DIRECT_PEER = "127.0.0.40", "127.0.0.41"
PW = "nginx password 1"
RUN = uuid.uuid4().hex[:8]
VIEWER, EDITOR, BOSS, DISABLED = (f"{who}-{RUN}" for who in ("vera", "eddie", "boss", "dora"))
BAD = f"_bad-{RUN}"  # nginx lets it through; it is no user name of the dashboard


def _ssha(password: str) -> str:
    """An RFC 2307 {SSHA} entry, which nginx's auth_basic_user_file reads."""
    salt = os.urandom(8)
    digest = hashlib.sha1(password.encode() + salt).digest()
    return "{SSHA}" + base64.b64encode(digest + salt).decode()


@dataclass
class Proxied:
    nginx_url: str
    direct_url: str
    app: Any
    users: Any


@pytest.fixture(scope="module")
def proxied(
    repo: Any, kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Proxied]:
    from werkzeug.serving import make_server

    from dashboard.app import build_context, create_app
    from dashboard.settings import DashboardSettings
    from dashboard.telemetry import DashboardTelemetry
    from dashboard.users import UserDirectory
    from storage.users import UserStore

    settings = DashboardSettings(
        port=0,
        token=TOKEN,
        kafka_bootstrap=kafka_bootstrap,
        ingest_metrics_urls="",
        alerting_metrics_url="",
        auth_proxy_enabled=True,
        auth_proxy_trusted=f"{NGINX_PEER}/32",
    )
    app = create_app(build_context(settings, repo=repo))
    server = make_server("127.0.0.1", 0, app.server, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    home = tmp_path_factory.mktemp("sso-nginx")
    htpasswd = home / "htpasswd"
    htpasswd.write_text(
        "".join(f"{who}:{_ssha(PW)}\n" for who in (VIEWER, EDITOR, BOSS, DISABLED, BAD))
    )
    listen = ("127.0.0.1", free_port())
    block = f"""    server {{
        listen {listen[0]}:{listen[1]};
        location / {{
            auth_basic "apm";
            auth_basic_user_file {htpasswd};
            proxy_pass http://127.0.0.1:{server.port};
            proxy_bind {NGINX_PEER};
            proxy_set_header Host $host;
            proxy_set_header X-WEBAUTH-USER $remote_user;
            proxy_set_header Authorization "";
        }}
    }}"""
    users = UserDirectory(UserStore(repo.session, repo.keyspace), DashboardTelemetry())
    try:
        with running_nginx(home, listen, block):
            yield Proxied(
                f"http://{listen[0]}:{listen[1]}", f"http://127.0.0.1:{server.port}", app, users
            )
    finally:
        server.shutdown()
        thread.join(5)


def _through_nginx(p: Proxied, who: str, password: str = PW) -> httpx.Client:
    return httpx.Client(base_url=p.nginx_url, auth=(who, password), timeout=30)


def _direct(p: Proxied) -> httpx.Client:
    transport = httpx.HTTPTransport(local_address=DIRECT_PEER)
    return httpx.Client(base_url=p.direct_url, timeout=30, transport=transport)


def _open(client: httpx.Client) -> None:
    """Opens the page as a browser does: the session and its CSRF cookie come back."""
    page = client.get("/")
    assert page.status_code == 200, page.text
    client.headers["X-CSRFToken"] = client.cookies["_csrf_token"]


def test_nginx_signs_a_new_user_in_as_a_viewer_whose_writes_are_403(proxied: Proxied) -> None:
    from dashboard.users import NO_PASSWORD

    with _through_nginx(proxied, VIEWER) as client:
        _open(client)
        assert client.get("/api/queries").status_code == 200
        assert client.get("/_dash-layout").json()["props"]["className"] == "role-viewer"
        assert client.get("/api/v1/labels").status_code == 200  # the Prometheus API too
        refused = client.post(
            "/api/queries", json={"text": "FROM * SELECT cpu WINDOW 10s COMPUTE avg"}
        )
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"] == "forbidden"
        assert "the viewer role may not do this" in refused.json()["detail"]
        # A Dash callback that writes, forged from the page, meets the same table.
        writes = [
            output
            for output, cb in proxied.app.callback_map.items()
            if CALLBACK_ROLES[callback_name(cb["callback"])] != "viewer"
        ]
        assert writes
        for output in writes:
            forged = client.post(
                "/_dash-update-component",
                json={"output": output, "outputs": [], "inputs": [], "changedPropIds": []},
            )
            assert forged.status_code == 403, (output, forged.text)
    stored = proxied.users.store.get(VIEWER)
    assert (stored.role, stored.password_hash) == ("viewer", NO_PASSWORD)


def test_an_editor_writes_after_an_admin_raises_its_role(proxied: Proxied) -> None:
    with _through_nginx(proxied, EDITOR) as client:
        _open(client)  # signed up as a viewer
        proxied.users.set_role(EDITOR, "editor")  # what `apm user set-role` does
        query = {"text": "FROM * SELECT mem WINDOW 10s COMPUTE max"}
        deadline = time.monotonic() + 15  # the app re-reads a role within a few seconds
        while (made := client.post("/api/queries", json=query)).status_code == 403:
            assert time.monotonic() < deadline, made.text
            time.sleep(0.5)
        assert made.status_code == 201, made.text
        assert client.delete(f"/api/queries/{made.json()['id']}").status_code == 204


def test_a_header_the_client_sends_itself_is_replaced_by_nginx(proxied: Proxied) -> None:
    proxied.users.add(BOSS, "admin", "a long admin password")
    with _through_nginx(proxied, VIEWER) as client:
        client.headers["X-WEBAUTH-USER"] = BOSS
        _open(client)
        refused = client.post("/api/queries", json={"text": "x"})
        assert refused.status_code == 403 and "viewer role" in refused.json()["detail"]


def test_the_same_header_sent_directly_is_ignored(proxied: Proxied) -> None:
    ignored = _refused(proxied, "untrusted_proxy_header")
    with _direct(proxied) as client:
        client.headers["X-WEBAUTH-USER"] = VIEWER
        page = client.get("/", follow_redirects=False)
        assert page.status_code == 302 and page.headers["location"].startswith("/login")
        answer = client.get("/api/queries")
        assert answer.status_code == 401 and answer.json()["error"] == "unauthorized"
        client.headers["X-Forwarded-For"] = NGINX_PEER  # claims to come through nginx
        assert client.get("/api/queries").status_code == 401
    assert _refused(proxied, "untrusted_proxy_header") == ignored + 3


def _refused(p: Proxied, reason: str) -> float:
    """The dashboard's own count, read from its /metrics."""
    with _direct(p) as client:
        text = client.get("/metrics").text
    for line in text.splitlines():
        if line.startswith(f'apm_dashboard_refused_total{{reason="{reason}"}}'):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_a_bad_name_from_nginx_is_a_clear_400(proxied: Proxied) -> None:
    with _through_nginx(proxied, BAD) as client:
        answer = client.get("/api/queries")
    assert answer.status_code == 400
    assert answer.json()["at"] == "header:X-WEBAUTH-USER"
    assert f"bad user name '{BAD}'" in answer.json()["detail"]


def test_a_disabled_user_is_refused_and_nginx_refuses_a_wrong_password(proxied: Proxied) -> None:
    with _through_nginx(proxied, DISABLED) as client:
        _open(client)
        proxied.users.set_disabled(DISABLED, True)
        deadline = time.monotonic() + 15
        while (answer := client.get("/api/queries")).status_code == 200:
            assert time.monotonic() < deadline, "the disable never reached the proxy's user"
            time.sleep(0.5)
        assert answer.status_code == 403 and "is disabled" in answer.json()["detail"]
    with _through_nginx(proxied, VIEWER, "wrong password") as client:
        assert client.get("/api/queries").status_code == 401  # nginx's own answer
