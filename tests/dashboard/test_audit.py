"""The dashboard's side of the audit log (dashboard/audit.py): who a request is, as the login
let it through (a user's session, a user's token with its id and label, the built-in login
and token named as what they are, the address Flask sees), and a row the table refuses
counted on /metrics by kind."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask, g, session

from dashboard.audit import dashboard_log, request_actor
from dashboard.telemetry import DashboardTelemetry
from storage.audit_log import Actor

pytestmark = pytest.mark.unit

BUILT_IN = "tok-built-in-Wp3Xk8Rz5Lq2"
USER_TOKEN = "apm_0123456789abcdef_" + "A" * 43


def _who(path: str, user: str, token: str | None = None, builtin: bool | None = None) -> Actor:
    app = Flask("t")
    app.secret_key = "k" * 32
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with app.test_request_context(path, headers=headers, environ_base={"REMOTE_ADDR": "10.0.0.9"}):
        g.apm_user = user
        if builtin is not None:
            session["builtin"] = builtin
        return request_actor(BUILT_IN, lambda t: "grafana" if t == USER_TOKEN else None)


def test_who_a_request_is() -> None:
    assert _who("/_dash-update-component", "alice", builtin=False) == Actor(
        "alice", "session", "10.0.0.9"
    )
    assert _who("/", "admin", builtin=True).via == "built-in login (admin)"
    assert _who("/api/queries", "token", BUILT_IN) == Actor(
        "APM_DASHBOARD_TOKEN", "built-in token (admin)", "10.0.0.9"
    )
    assert _who("/api/queries", "bob", USER_TOKEN).via == "token 0123456789abcdef (grafana)"
    other = "apm_fedcba9876543210_" + "B" * 43
    assert _who("/api/queries", "bob", other).via == "token fedcba9876543210"
    assert request_actor(BUILT_IN, lambda t: None) == Actor("dashboard", "no request", "-")


def test_a_row_the_table_refuses_is_counted_by_kind() -> None:
    class Down:
        def add(self, row: Any) -> None:
            raise RuntimeError("down")

    telemetry = DashboardTelemetry()
    trail = dashboard_log(lambda: Down(), telemetry, lambda: Actor("a", "b", "c"), lambda: 1e9)
    trail.record("silence", "s1", "delete", {}, None)
    trail.record("silence", "s2", "delete", {}, None)
    count = telemetry.registry.get_sample_value(
        "apm_dashboard_audit_failures_total", {"kind": "silence"}
    )
    assert count == 2


def test_the_apps_users_and_tokens_record_their_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A user the dashboard itself creates (a sign-in through the auth proxy, say) is in the
    audit log as one of apm user's: the app hands its directories its audit log."""
    from apm.audit import NO_AUDIT
    from dashboard import app as app_module
    from dashboard.context import AppContext
    from dashboard.settings import DashboardSettings
    from dashboard.users import UserDirectory
    from tests.dashboard.fakes import FakeResults
    from tests.support.users import MemoryUsers

    directory = UserDirectory(MemoryUsers(), DashboardTelemetry())
    directory.add("alice", "viewer", "long enough password")
    monkeypatch.setattr(app_module, "users_for", lambda repo, telemetry: lambda: directory)
    settings = DashboardSettings(token=BUILT_IN, secret_key="k" * 32)
    built = app_module.create_app(AppContext(settings, FakeResults(), None, None))  # type: ignore[arg-type]
    assert directory.audit is NO_AUDIT  # nothing is built before it is needed
    client = built.server.test_client()
    page = client.get("/login").get_data(as_text=True)
    csrf = page.split('name="csrf_token" value="')[1].split('"')[0]
    form = {"csrf_token": csrf, "user": "alice", "password": "long enough password"}
    assert client.post("/login", data=form).status_code == 302
    assert directory.audit is not NO_AUDIT and hasattr(directory.audit, "record")
