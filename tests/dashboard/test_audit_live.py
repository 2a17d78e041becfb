"""The audit log through the real app on the real Cassandra: the changes an editor makes
(queries, dashboards, share links, alert rules, silences) are recorded with its name, the
way it signed in and its address; only admins read ``GET /api/audit`` (viewer and editor
403 in the one error shape), filtered and paged with a cursor; a write the storage refuses
leaves no row, and a row the log cannot take leaves the write made and is counted."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from cassandra.cluster import NoHostAvailable

from dashboard.telemetry import DashboardTelemetry
from dashboard.users import UserDirectory
from storage.users import UserStore

pytestmark = pytest.mark.integration

TOKEN = "tok-audit-Wp3Xk8Rz5Lq2Nv7Hc4Tb9"
PW = "long enough password"
QUERY = "FROM web-* SELECT cpu WINDOW 1m COMPUTE avg"


class _Failing:
    """The repository, but its query writes fail as an unreachable Cassandra does."""

    def __init__(self, repo: Any) -> None:
        self._repo = repo

    def __getattr__(self, name: str) -> Any:
        return getattr(self._repo, name)

    def save_query(self, text: str) -> Any:
        raise NoHostAvailable("down (test)", {})

    def delete_query(self, query_id: str) -> bool:
        raise NoHostAvailable("down (test)", {})


def _app(repo: Any, **settings: Any) -> Any:
    from dashboard.app import create_app
    from dashboard.context import AppContext
    from dashboard.settings import DashboardSettings

    s = DashboardSettings(token=TOKEN, login_client_burst=100, secret_key="k" * 32, **settings)
    return create_app(AppContext(s, repo, None, None))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def people(repo: Any) -> dict[str, str]:
    """role -> a user of that role, names of this run's own."""
    directory = UserDirectory(UserStore(repo.session, repo.keyspace), DashboardTelemetry())
    tag = uuid.uuid4().hex[:8]
    names = {role: f"{role}-{tag}" for role in ("viewer", "editor", "admin")}
    for role, name in names.items():
        directory.add(name, role, PW)
    return names


@pytest.fixture(scope="module")
def app(repo: Any) -> Any:
    return _app(repo)


def _signed_in(app: Any, user: str, address: str = "10.9.8.7") -> Any:
    client = app.server.test_client()
    client.environ_base["REMOTE_ADDR"] = address
    page = client.get("/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    signed = client.post("/login", data={"csrf_token": csrf, "user": user, "password": PW})
    assert signed.status_code == 302, signed.get_data(as_text=True)
    client.environ_base["HTTP_X_CSRFTOKEN"] = client.get_cookie("_csrf_token").value
    return client


def _audit(app: Any, **params: Any) -> dict[str, Any]:
    answer = app.server.test_client().get(
        "/api/audit", query_string=params, headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert answer.status_code == 200, answer.get_json()
    return answer.get_json()


def test_only_admins_read_the_audit_log(app: Any, people: dict[str, str]) -> None:
    for role in ("viewer", "editor"):
        refused = _signed_in(app, people[role]).get("/api/audit")
        assert refused.status_code == 403
        body = refused.get_json()
        assert set(body) == {"error", "detail", "at"} and body["error"] == "forbidden"
        assert f"the {role} role may not do this: it needs admin" in body["detail"]
    assert _signed_in(app, people["admin"]).get("/api/audit").status_code == 200
    assert app.server.test_client().get("/api/audit").status_code == 401
    assert _audit(app, limit=1)["entries"] is not None  # the built-in token is admin


def test_an_editors_changes_are_recorded_with_its_name(app: Any, people: dict[str, str]) -> None:
    editor = _signed_in(app, people["editor"])
    made = editor.post("/api/queries", json={"text": QUERY})
    assert made.status_code == 201, made.get_json()
    qid = made.get_json()["id"]
    other = "FROM web-* SELECT mem WINDOW 1m COMPUTE max"
    assert editor.patch(f"/api/queries/{qid}", json={"text": other}).status_code == 200
    assert editor.patch(f"/api/queries/{qid}", json={"paused": True}).status_code == 200
    assert editor.delete(f"/api/queries/{qid}").status_code == 204
    entries = _audit(app, kind="query", id=qid)["entries"]
    assert [e["action"] for e in entries] == ["delete", "pause", "update", "create"]
    for e in entries:
        assert (e["user"], e["via"], e["address"], e["kind"], e["id"]) == (
            people["editor"], "session", "10.9.8.7", "query", qid,
        )  # fmt: skip
    delete, pause, update, create = entries
    assert create["before"] is None and create["after"]["text"] == QUERY
    assert update["before"]["text"] == QUERY and update["after"]["text"] == other
    assert pause["after"]["paused"] is True and delete["after"] is None
    assert entries[0]["ts"] >= entries[-1]["ts"] and entries[0]["at"].endswith("+00:00")


def test_dashboards_share_links_rules_and_silences_are_recorded(
    app: Any, people: dict[str, str]
) -> None:
    editor = _signed_in(app, people["editor"])
    qid = editor.post("/api/queries", json={"text": QUERY}).get_json()["id"]
    panel = {"id": "cpu", "title": "CPU", "queries": [qid], "chart": "lines"}
    board = editor.post("/api/dashboards", json={"name": "audited", "panels": [panel]})
    board_id = board.get_json()["id"]
    token = editor.post(f"/api/dashboards/{board_id}/share").get_json()["token"]
    assert editor.delete(f"/api/dashboards/{board_id}/share").status_code in (200, 204)
    assert editor.delete(f"/api/dashboards/{board_id}").status_code in (200, 204)
    rule = {"name": "cpu", "query_id": qid, "function": "avg", "thresholds": {"warning": 80}}
    rule_id = editor.post("/api/alerts/rules", json=rule).get_json()["id"]
    assert editor.delete(f"/api/alerts/rules/{rule_id}").status_code == 200
    silence = {"starts_at": 0, "ends_at": 3600, "server_glob": "web-*"}
    silence_id = editor.post("/api/alerts/silences", json=silence).get_json()["id"]
    assert editor.delete(f"/api/alerts/silences/{silence_id}").status_code == 200
    mine = _audit(app, user=people["editor"], limit=1000)["entries"]
    seen = {(e["kind"], e["id"], e["action"]) for e in mine}
    assert {
        ("dashboard", board_id, "create"),
        ("share_link", board_id, "create"),
        ("share_link", board_id, "revoke"),
        ("dashboard", board_id, "delete"),
        ("alert_rule", rule_id, "create"),
        ("alert_rule", rule_id, "delete"),
        ("silence", silence_id, "create"),
        ("silence", silence_id, "delete"),
    } <= seen
    assert token not in str(mine)  # a share link's token opens the dashboard: never logged
    made = next(e for e in mine if (e["kind"], e["action"]) == ("alert_rule", "create"))
    assert made["after"]["thresholds"]["warning"] == 80 and made["before"] is None


def test_pages_walk_the_log_with_a_cursor_and_bad_parameters_are_400(
    app: Any, people: dict[str, str]
) -> None:
    editor = _signed_in(app, people["editor"], address="10.9.8.6")
    ids = [editor.post("/api/queries", json={"text": QUERY}).get_json()["id"] for _ in range(5)]
    wanted = set(ids)
    seen, cursor = [], None
    for _ in range(20):
        page = _audit(app, kind="query", user=people["editor"], limit=2, **(
            {"cursor": cursor} if cursor else {}
        ))  # fmt: skip
        assert len(page["entries"]) <= 2
        seen += [e["id"] for e in page["entries"] if e["action"] == "create"]
        cursor = page["next"]
        if cursor is None or wanted <= set(seen):
            break
    assert seen[:5] == ids[::-1]  # newest first, each once
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    client = app.server.test_client()
    for params, at in (
        ({"kind": "queries"}, "kind"),
        ({"limit": "0"}, "limit"),
        ({"cursor": "yesterday"}, "cursor"),
        ({"user": "x" * 201}, "user"),
    ):
        refused = client.get("/api/audit", query_string=params, headers=bearer)
        assert refused.status_code == 400, params
        assert refused.get_json()["error"] == "bad_request" and refused.get_json()["at"] == at


def test_tokens_and_the_built_in_token_are_named_as_what_they_are(
    app: Any, repo: Any, people: dict[str, str]
) -> None:
    from dashboard.api_tokens import TokenDirectory
    from storage.tokens import TokenStore

    telemetry = DashboardTelemetry()
    users = UserDirectory(UserStore(repo.session, repo.keyspace), telemetry)
    tokens = TokenDirectory(TokenStore(repo.session, repo.keyspace), users, telemetry)
    secret, row = tokens.create(people["editor"], None, 3600, "ci-script")
    client = app.server.test_client()
    made = client.post(
        "/api/queries", json={"text": QUERY}, headers={"Authorization": f"Bearer {secret}"}
    )
    qid = made.get_json()["id"]
    (entry,) = _audit(app, kind="query", id=qid)["entries"]
    assert (entry["user"], entry["via"]) == (people["editor"], f"token {row.id} (ci-script)")
    built_in = client.post(
        "/api/queries", json={"text": QUERY}, headers={"Authorization": f"Bearer {TOKEN}"}
    )
    (entry,) = _audit(app, kind="query", id=built_in.get_json()["id"])["entries"]
    assert (entry["user"], entry["via"]) == ("APM_DASHBOARD_TOKEN", "built-in token (admin)")


def test_behind_a_proxy_the_address_is_the_one_the_proxy_saw(
    repo: Any, people: dict[str, str]
) -> None:
    proxied = _app(repo, proxy_hops=1)
    editor = _signed_in(proxied, people["editor"], address="10.0.0.1")
    made = editor.post(
        "/api/queries", json={"text": QUERY}, headers={"X-Forwarded-For": "203.0.113.9"}
    )
    (entry,) = _audit(proxied, kind="query", id=made.get_json()["id"])["entries"]
    assert entry["address"] == "203.0.113.9"


def test_a_failed_write_leaves_no_row(repo: Any, people: dict[str, str]) -> None:
    failing = _app(_Failing(repo))
    editor = _signed_in(failing, people["editor"], address="10.9.8.5")
    before = _audit(failing, user=people["editor"], limit=1000)["entries"]
    assert editor.post("/api/queries", json={"text": QUERY}).status_code == 503
    assert editor.delete(f"/api/queries/{uuid.uuid4()}").status_code == 503
    # Refused before storage (a bad rule; a dashboard naming no stored query): nothing either.
    assert editor.post("/api/alerts/rules", json={"name": "x"}).status_code == 422
    bad = {"name": "x", "panels": [{"id": "a", "title": "a", "queries": ["nope"]}]}
    assert editor.post("/api/dashboards", json=bad).status_code == 422
    after = _audit(failing, user=people["editor"], limit=1000)["entries"]
    assert after == before


def test_a_row_the_log_cannot_take_is_counted_and_the_write_stands(
    repo: Any, people: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from storage.audit import AuditStore

    app = _app(repo)
    editor = _signed_in(app, people["editor"], address="10.9.8.4")

    def down(self: Any, row: Any) -> None:
        raise NoHostAvailable("down (test)", {})

    monkeypatch.setattr(AuditStore, "add", down)
    made = editor.post("/api/queries", json={"text": QUERY})
    monkeypatch.undo()
    assert made.status_code == 201
    qid = made.get_json()["id"]
    assert repo.get_query(qid) is not None
    assert _audit(app, kind="query", id=qid)["entries"] == []
    metrics = app.server.test_client().get("/metrics").get_data(as_text=True)
    assert 'apm_dashboard_audit_failures_total{kind="query"} 1.0' in metrics


@pytest.fixture
def storage_env(repo: Any, stack: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("APM_STORAGE_HOSTS", stack.host)
    monkeypatch.setenv("APM_STORAGE_PORT", str(stack.cassandra_port))
    monkeypatch.setenv("APM_STORAGE_KEYSPACE", repo.keyspace)
    yield


def test_apm_user_and_apm_token_are_recorded_and_apm_audit_reads_them(
    storage_env: None, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    import getpass
    import io
    import json

    from apm.cli import main

    name = f"cli-{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr("sys.stdin", io.StringIO(PW + "\n"))
    assert main(["user", "add", name, "--role", "editor", "--stdin"]) == 0
    assert main(["user", "set-role", name, "viewer"]) == 0
    assert main(["token", "create", "--user", name, "--label", "grafana"]) == 0
    capsys.readouterr()
    assert main(["audit", "--kind", "user", "--id", name]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [e["action"] for e in lines] == ["set_role", "create"]
    assert lines[0]["before"] == {"role": "editor", "disabled": False}
    assert lines[0]["after"] == {"role": "viewer", "disabled": False}
    assert (lines[0]["user"], lines[0]["via"]) == (getpass.getuser(), "apm user")
    assert lines[0]["address"].startswith("local (")
    assert "password" not in str(lines)
    assert (
        main(["audit", "--kind", "token", "--user", getpass.getuser(), "--limit", "1", "--json"])
        == 0
    )
    page = json.loads(capsys.readouterr().out)
    (token,) = page["entries"]
    assert token["after"]["user"] == name and token["after"]["label"] == "grafana"
    assert token["via"] == "apm token" and "digest" not in token["after"]
    assert page["next"] is not None


def test_apm_audit_refuses_bad_input_and_an_unreachable_store(
    storage_env: None, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from apm.cli import main

    assert main(["audit", "--kind", "queries"]) == 2
    assert "apm audit: --kind: one of query" in capsys.readouterr().err
    assert main(["audit", "--limit", "5000"]) == 2
    assert main(["audit", "--cursor", "nope"]) == 2
    monkeypatch.setenv("APM_STORAGE_PORT", "1")
    monkeypatch.setenv("APM_STORAGE_CONNECT_TIMEOUT_S", "2")
    assert main(["audit"]) == 1
    assert "apm audit: storage unavailable" in capsys.readouterr().err


def test_apm_query_and_apm_alert_are_recorded(storage_env: None, capsys: Any) -> None:
    import json

    from apm.cli import main

    assert main(["query", "add", QUERY]) == 0
    qid = capsys.readouterr().out.strip()
    assert main(["query", "pause", qid]) == 0
    assert main(["query", "resume", qid]) == 0
    assert main(["query", "list"]) == 0 and qid in capsys.readouterr().out  # reads pass
    rule = {"name": "cpu", "query_id": qid, "function": "avg", "thresholds": {"warning": 80}}
    assert main(["alert", "add", json.dumps(rule)]) == 0
    rule_id = json.loads(capsys.readouterr().out)["id"]
    assert main(["audit", "--kind", "query", "--id", qid]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(e["action"], e["via"]) for e in rows] == [
        ("resume", "apm query"), ("pause", "apm query"), ("create", "apm query"),
    ]  # fmt: skip
    assert main(["audit", "--kind", "alert_rule", "--id", rule_id]) == 0
    (made,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (made["action"], made["via"], made["after"]["query_id"]) == ("create", "apm alert", qid)
