"""Users of ``apm user`` against the real app and the real Cassandra: each signs in through the
login page with its role, a viewer's writes are 403 in the one error shape while an editor's
go through, a disabled user's open session ends, the Prometheus API takes a user's Basic
credentials, and ``apm user`` itself (exit codes, a password from stdin)."""

from __future__ import annotations

import io
import re
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from dashboard.telemetry import DashboardTelemetry
from dashboard.users import UserDirectory
from storage.users import UserStore

pytestmark = pytest.mark.integration

PW = "long enough password"


def _client(served: Any) -> httpx.Client:
    # From an address of its own: the login throttle's bucket of 127.0.0.1 is the browser
    # tests' (tests/dashboard/conftest.py).
    transport = httpx.HTTPTransport(local_address="127.0.0.38")
    return httpx.Client(base_url=served.url, timeout=30, transport=transport)


@pytest.fixture(scope="module")
def users(repo: Any) -> UserDirectory:
    """The same table the served app reads (its own directory, its own cache)."""
    return UserDirectory(UserStore(repo.session, repo.keyspace), DashboardTelemetry())


@pytest.fixture
def name() -> str:
    return f"u-{uuid.uuid4().hex[:10]}"


@contextmanager
def _signed_in(served: Any, user: str, password: str = PW) -> Iterator[httpx.Client]:
    with _client(served) as client:
        page = client.get("/login").text
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
        signed = client.post(
            "/login", data={"csrf_token": csrf, "user": user, "password": password}
        )
        assert signed.status_code == 302, signed.text
        client.headers["X-CSRFToken"] = client.cookies["_csrf_token"]
        yield client


def test_a_viewer_reads_everything_and_every_write_is_403(
    served: Any, users: UserDirectory, name: str, api: Any
) -> None:
    users.add(name, "viewer", PW)
    made = api.post("/api/queries", json={"text": "FROM * SELECT cpu WINDOW 10s COMPUTE avg"})
    qid = made.json()["id"]
    with _signed_in(served, name) as client:
        assert client.get("/api/queries").status_code == 200
        assert client.get("/api/dashboards").status_code == 200
        assert client.get("/api/alerts").status_code == 200
        for method, path in (
            ("POST", "/api/queries"),
            ("PATCH", f"/api/queries/{qid}"),
            ("DELETE", f"/api/queries/{qid}"),
            ("POST", "/api/dashboards"),
            ("POST", "/api/alerts/silences"),
        ):
            refused = client.request(method, path, json={"text": "x", "paused": True})
            assert refused.status_code == 403, (method, path, refused.text)
            assert refused.json()["error"] == "forbidden"
            assert "the viewer role may not" in refused.json()["detail"]
        assert api.get(f"/api/queries/{qid}").json()["paused"] is False  # nothing changed
    api.delete(f"/api/queries/{qid}")


def test_an_editor_writes_and_is_named_on_its_pages(
    served: Any, users: UserDirectory, name: str
) -> None:
    users.add(name, "editor", PW)
    with _signed_in(served, name) as client:
        made = client.post(
            "/api/queries", json={"text": "FROM * SELECT mem WINDOW 10s COMPUTE max"}
        )
        assert made.status_code == 201, made.text
        assert client.delete(f"/api/queries/{made.json()['id']}").status_code == 204
        layout = client.get("/_dash-layout").json()
        assert layout["props"]["className"] == "role-editor"


def test_a_role_change_and_a_disable_reach_an_open_session(
    served: Any, users: UserDirectory, name: str
) -> None:
    users.add(name, "editor", PW)
    with _signed_in(served, name) as client:
        users.set_role(name, "viewer")
        # The app re-reads a session's role within its directory's few seconds of cache.
        deadline = time.monotonic() + 15
        while client.post("/api/dashboards", json={}).status_code != 403:
            assert time.monotonic() < deadline, "the role change never reached the session"
            time.sleep(0.5)
        users.set_disabled(name, True)
        while client.get("/api/queries").status_code != 401:
            assert time.monotonic() < deadline, "the disable never reached the session"
            time.sleep(0.5)
    with _client(served) as client:
        page = client.get("/login").text
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
        refused = client.post("/login", data={"csrf_token": csrf, "user": name, "password": PW})
        assert refused.status_code == 401 and "Wrong user, password or token" in refused.text


def test_the_prometheus_api_takes_a_users_basic_credentials(
    served: Any, users: UserDirectory, name: str
) -> None:
    users.add(name, "viewer", PW)
    with _client(served) as client:
        ok = client.get("/api/v1/labels", auth=(name, PW))
        assert ok.status_code == 200, ok.text
        wrong = client.get("/api/v1/labels", auth=(name, PW + "!"))
        assert wrong.status_code == 401
        # Remembered (no scrypt per request), yet a disable reaches it within seconds.
        users.set_disabled(name, True)
        deadline = time.monotonic() + 15
        while client.get("/api/v1/labels", auth=(name, PW)).status_code != 401:
            assert time.monotonic() < deadline, "the disable never reached Basic auth"
            time.sleep(0.5)


def test_apm_user_adds_lists_changes_and_disables(
    repo: Any, stack: Any, name: str, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from apm.cli import main

    monkeypatch.setenv("APM_STORAGE_HOSTS", stack.host)
    monkeypatch.setenv("APM_STORAGE_PORT", str(stack.cassandra_port))
    monkeypatch.setenv("APM_STORAGE_KEYSPACE", repo.keyspace)
    monkeypatch.setattr("sys.stdin", io.StringIO(PW + "\n"))
    assert main(["user", "add", name, "--role", "editor", "--stdin"]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO(PW + "\n"))
    assert main(["user", "add", name, "--role", "viewer", "--stdin"]) == 1  # exists
    assert f"user {name!r} exists" in capsys.readouterr().err
    assert main(["user", "set-role", name, "admin"]) == 0
    assert main(["user", "disable", name]) == 0
    capsys.readouterr()
    assert main(["user", "list"]) == 0
    listed = capsys.readouterr().out
    assert f'"name": "{name}"' in listed
    row = listed[listed.index(name) :]
    assert '"role": "admin"' in row and '"disabled": true' in row
    assert main(["user", "set-role", "nobody-" + name, "viewer"]) == 1
    # Bad input is refused before any connection, with the reason.
    assert main(["user", "set-role", name, "root"]) == 2
    assert "unknown role 'root'" in capsys.readouterr().err
    assert main(["user", "disable", "bad name"]) == 2
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    assert main(["user", "add", "other-" + name, "--role", "viewer", "--stdin"]) == 2
    assert "at least 8" in capsys.readouterr().err
