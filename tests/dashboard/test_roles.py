"""Who may do what (dashboard/roles.py's table, enforced by dashboard/permits.py), on the real
app over in-memory stores: every state-changing route and Dash callback is declared, and
every role below the one declared is refused with a 403 in the one error shape, for each
role and each route or callback (all of them, not a sample: the space is small)."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from flask import Response, g, request

from dashboard.permits import DASH_CALLBACK_ENDPOINT, callback_name, needed_role
from dashboard.roles import (
    ADMIN,
    CALLBACK_ROLES,
    EDITOR,
    READ_ROLES,
    ROLES,
    ROUTE_ROLES,
    VIEWER,
    allows,
    parse_role,
)
from dashboard.telemetry import DashboardTelemetry
from dashboard.users import UserDirectory
from tests.dashboard.fakes import FakeResults
from tests.support.users import MemoryUsers

pytestmark = pytest.mark.unit

TOKEN = "tok-Wp3Xk8Rz5Lq2Nv7Hc4Tb9Md6"
PW = "correct horse"
REACHED = 299  # the stand-in handler's status: the request got past every check
_SAFE = {"GET", "HEAD", "OPTIONS"}


@pytest.fixture(scope="module")
def app() -> Any:
    from dashboard import app as app_module
    from dashboard.context import AppContext
    from dashboard.settings import DashboardSettings

    directory = UserDirectory(MemoryUsers(), DashboardTelemetry())
    for role in ROLES:
        directory.add(f"the-{role}", role, PW)
    mp = pytest.MonkeyPatch()
    mp.setattr(app_module, "users_for", lambda repo, telemetry: lambda: directory)
    settings = DashboardSettings(token=TOKEN, login_client_burst=100, secret_key="k" * 32)
    built = app_module.create_app(AppContext(settings, FakeResults(), None, None))  # type: ignore[arg-type]
    mp.undo()

    @built.server.before_request
    def reached() -> Response | None:
        # Registered after the login and role hooks: a signed-in request that gets here would
        # reach its handler (the login page and the layout are let through to theirs).
        if g.get("apm_role") is None or request.method in _SAFE:
            return None
        return Response(status=REACHED)

    return built


def _writes(app: Any) -> list[tuple[str, str, str]]:
    """(method, path, endpoint) of every state-changing route, its parameters filled in."""
    out = []
    for rule in app.server.url_map.iter_rules():
        for method in sorted(set(rule.methods or ()) - _SAFE):
            out.append((method, re.sub(r"<[^>]+>", "nope", rule.rule), rule.endpoint))
    return out


def test_every_state_changing_route_and_callback_declares_its_role(app: Any) -> None:
    endpoints = {endpoint for _, _, endpoint in _writes(app)}
    assert endpoints - set(ROUTE_ROLES) == set(), "declare these routes in dashboard/roles.py"
    assert set(ROUTE_ROLES) - endpoints == set(), "these declared routes no longer exist"
    names = [callback_name(cb["callback"]) for cb in app.callback_map.values()]
    assert len(names) == len(set(names)), "two callbacks share a name: rename one"
    assert set(names) - set(CALLBACK_ROLES) == set(), "declare these callbacks"
    assert set(CALLBACK_ROLES) - set(names) == set(), "these declared callbacks are gone"
    routes = {rule.endpoint for rule in app.server.url_map.iter_rules()}
    assert set(READ_ROLES) - routes == set(), "these declared reads no longer exist"


# The roles, stated a second time on purpose: the table must say the same. Only these
# non-GET routes and callbacks read (every other one changes something: editor or above).
READ_ROUTES = {"login", "logout", "alerts_api.preview_rule", DASH_CALLBACK_ENDPOINT}
WRITING_CALLBACKS = {
    f"dashboard.pages.{name}"
    for name in (
        "query_builder.create",
        "queries.create_from_text",
        "queries.act",
        "alert_builder.act",
        "alert_silences.act",
        "board_list.act",
        "board_edit.edit",
    )
}


# The users page manages users and tokens: admins only, its listing included.
ADMIN_CALLBACKS = {"dashboard.pages.people.show", "dashboard.pages.people.act"}


def test_the_table_gives_viewers_reads_only() -> None:
    for endpoint, role in ROUTE_ROLES.items():
        reads = endpoint in READ_ROUTES or endpoint.startswith("promapi.")
        assert (role == VIEWER) == reads, endpoint
        assert role != ADMIN, endpoint  # no route is admin-only yet
    for name, role in CALLBACK_ROLES.items():
        assert (role == EDITOR) == (name in WRITING_CALLBACKS), name
        assert (role == ADMIN) == (name in ADMIN_CALLBACKS), name
    # Every read is a viewer's, but who changed what: the audit log is for admins.
    assert READ_ROLES == {"audit_api.read": ADMIN}


def test_roles_order_and_parse() -> None:
    assert [r for r in ROLES if allows(r, EDITOR)] == [EDITOR, ADMIN]
    assert allows(VIEWER, VIEWER) and not allows(VIEWER, EDITOR) and allows(ADMIN, VIEWER)
    assert not allows("root", VIEWER) and not allows(ADMIN, "root")
    assert parse_role("editor") == EDITOR
    with pytest.raises(ValueError, match="one of viewer, editor, admin"):
        parse_role("Admin")


def test_an_undeclared_write_needs_admin_and_a_read_needs_viewer() -> None:
    assert needed_role("POST", "some.new_route", None, {}) == ADMIN
    assert needed_role("GET", "some.new_route", None, {}) == VIEWER
    assert needed_role("GET", "audit_api.read", None, {}) == ADMIN
    assert needed_role("DELETE", "api.delete_query", None, {}) == EDITOR
    for body in (None, [], {"output": 3}, {"output": "no-such.children"}):
        assert needed_role("POST", DASH_CALLBACK_ENDPOINT, body, {}) == ADMIN


def _client(app: Any, role: str) -> tuple[Any, str]:
    client = app.server.test_client()
    page = client.get("/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    signed = client.post("/login", data={"csrf_token": csrf, "user": f"the-{role}", "password": PW})
    assert signed.status_code == 302, signed.get_data(as_text=True)
    return client, client.get_cookie("_csrf_token").value


def _refused(response: Any, role: str) -> bool:
    if response.status_code != 403:
        return False
    body = response.get_json()
    assert body["error"] == "forbidden" and f"the {role} role may not" in body["detail"]
    assert set(body) == {"error", "detail", "at"}
    return True


@pytest.mark.parametrize("role", ROLES)
def test_every_route_refuses_every_role_below_it(app: Any, role: str) -> None:
    client, csrf = _client(app, role)
    for method, path, endpoint in _writes(app):
        if endpoint in ("login", "logout") or path.startswith("/api/v1/"):
            continue  # the public login, and the Prometheus API (reads) checks its own
        need = ROUTE_ROLES[endpoint] if endpoint != DASH_CALLBACK_ENDPOINT else None
        if need is None:
            continue  # below, per callback
        response = client.open(path, method=method, headers={"X-CSRFToken": csrf}, json={})
        assert _refused(response, role) != allows(role, need), (method, path, role)
        if allows(role, need):
            assert response.status_code == REACHED, (method, path, response.status_code)


@pytest.mark.parametrize("role", ROLES)
def test_every_read_above_viewer_refuses_every_role_below_it(app: Any, role: str) -> None:
    client, _ = _client(app, role)
    for rule in app.server.url_map.iter_rules():
        need = READ_ROLES.get(rule.endpoint)
        if need is None:
            continue
        response = client.get(re.sub(r"<[^>]+>", "nope", rule.rule))
        assert _refused(response, role) != allows(role, need), (rule.rule, role)


@pytest.mark.parametrize("role", ROLES)
def test_every_dash_callback_refuses_every_role_below_it(app: Any, role: str) -> None:
    client, csrf = _client(app, role)
    for output, cb in app.callback_map.items():
        need = CALLBACK_ROLES[callback_name(cb["callback"])]
        response = client.post(
            "/_dash-update-component",
            headers={"X-CSRFToken": csrf},
            json={"output": output, "outputs": [], "inputs": [], "changedPropIds": []},
        )
        assert _refused(response, role) != allows(role, need), (output, role)
        if allows(role, need):
            assert response.status_code == REACHED


def test_the_token_and_the_built_in_login_are_admin(app: Any) -> None:
    client = app.server.test_client()
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    assert client.delete("/api/queries/nope", headers=bearer).status_code == REACHED


def test_a_page_knows_its_role_and_who_is_signed_in(app: Any) -> None:
    from dashboard.pages.common import navbar

    for role in ROLES:
        client, _ = _client(app, role)
        assert client.get("/_dash-layout").get_json()["props"]["className"] == f"role-{role}"
    with app.server.test_request_context("/"):
        g.apm_user, g.apm_role = "the-viewer", VIEWER
        assert "the-viewer (viewer)" in str(navbar("queries"))


def test_an_empty_queries_list_offers_building_only_to_who_may(app: Any) -> None:
    from dashboard.pages.common import may_write

    for role, may in ((VIEWER, False), (EDITOR, True), (ADMIN, True)):
        with app.server.test_request_context("/"):
            g.apm_user, g.apm_role = "someone", role
            assert may_write() is may


def test_a_callback_body_past_its_bound_is_refused_before_it_is_read(app: Any) -> None:
    client, csrf = _client(app, ADMIN)
    bound = 2 * 1024 * 1024  # DashboardSettings.callback_max_body_bytes
    headers = {"X-CSRFToken": csrf, "Content-Type": "application/json"}
    big = b'{"output": "' + b"x" * bound + b'"}'
    response = client.post(DASH_CALLBACK_ENDPOINT, data=big, headers=headers)
    assert response.status_code == 413
    body = response.get_json()
    assert body["error"] == "too_large" and str(bound) in body["detail"]
    # Chunked (no Content-Length; the server ends the stream): refused, nothing read.
    from werkzeug.test import EnvironBuilder

    environ = EnvironBuilder(
        path=DASH_CALLBACK_ENDPOINT, method="POST", headers=headers, data=b""
    ).get_environ()
    stream = io.BytesIO(big)
    environ.pop("CONTENT_LENGTH", None)
    environ.update({"wsgi.input": stream, "wsgi.input_terminated": True})
    environ["HTTP_TRANSFER_ENCODING"] = "chunked"
    unsized = client.open(environ)
    assert unsized.status_code == 411 and unsized.get_json()["error"] == "length_required"
    assert stream.tell() == 0
