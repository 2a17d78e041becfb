"""The dashboards' API and share links against the real app and real Cassandra: CRUD with
reorder, duplicate, export/import, bad input (a 100 MB body, 10,000 panels, a deleted query)
refused with the one error shape and nothing stored, and share links open without sign-in
only while they are live."""

from __future__ import annotations

import secrets
import uuid
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.integration


@pytest.fixture
def anon(served: Any) -> Any:
    with httpx.Client(base_url=served.url, timeout=30) as client:
        yield client


@pytest.fixture
def two_queries(repo: Any) -> list[str]:
    tag = uuid.uuid4().hex[:8]
    return [
        repo.save_query(f"FROM web-* SELECT cpu.{tag} WINDOW 10s COMPUTE avg, max").id,
        repo.save_query(f"FROM * SELECT mem.{tag} WINDOW 1m COMPUTE p99").id,
    ]


def _board(name: str, qids: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "panels": [
            {"id": "cpu", "title": "CPU", "queries": [qids[0]], "chart": "lines"},
            {"id": "mem", "title": "Memory", "queries": [qids[1]], "chart": "stat", "x": 6},
        ],
        "time_range": "6h",
        "server_filter": "web-*",
    }


def _names(api: Any) -> list[str]:
    return [b["name"] for b in api.get("/api/dashboards").json()]


def test_create_read_reorder_duplicate_delete(api: Any, two_queries: list[str]) -> None:
    name = f"board-{uuid.uuid4().hex[:6]}"
    made = api.post("/api/dashboards", json=_board(name, two_queries))
    assert made.status_code == 201, made.text
    body = made.json()
    assert body["name"] == name and [p["id"] for p in body["panels"]] == ["cpu", "mem"]
    assert body["server_filter"] == "web-*" and body["shared"] is False
    board_id = body["id"]
    assert api.get(f"/api/dashboards/{board_id}").json()["panels"] == body["panels"]
    assert name in _names(api)

    reordered = {**_board(name, two_queries)}
    reordered["panels"] = list(reversed(reordered["panels"]))
    put = api.put(f"/api/dashboards/{board_id}", json=reordered)
    assert put.status_code == 200, put.text
    assert [p["id"] for p in api.get(f"/api/dashboards/{board_id}").json()["panels"]] == [
        "mem",
        "cpu",
    ]

    copy = api.post(f"/api/dashboards/{board_id}/duplicate", json={"name": f"{name} two"})
    assert copy.status_code == 201 and copy.json()["id"] != board_id
    assert copy.json()["panels"] == put.json()["panels"]
    default = api.post(f"/api/dashboards/{board_id}/duplicate")
    assert default.json()["name"] == f"{name} (copy)"

    assert api.delete(f"/api/dashboards/{board_id}").status_code == 204
    gone = api.get(f"/api/dashboards/{board_id}")
    assert gone.status_code == 404 and gone.json()["error"] == "not_found"
    assert api.delete(f"/api/dashboards/{board_id}").status_code == 404
    assert api.put(f"/api/dashboards/{board_id}", json=reordered).status_code == 404


def test_export_then_import_under_another_name(api: Any, two_queries: list[str]) -> None:
    name = f"exp-{uuid.uuid4().hex[:6]}"
    board_id = api.post("/api/dashboards", json=_board(name, two_queries)).json()["id"]
    exported = api.get(f"/api/dashboards/{board_id}/export")
    assert exported.status_code == 200
    assert "attachment" in exported.headers["Content-Disposition"]
    doc = exported.json()
    assert doc["apm_dashboard"] == 1 and "id" not in doc
    imported = api.post("/api/dashboards/import", params={"name": f"{name} imported"}, json=doc)
    assert imported.status_code == 201, imported.text
    assert imported.json()["name"] == f"{name} imported"
    assert imported.json()["panels"] == api.get(f"/api/dashboards/{board_id}").json()["panels"]


def test_bad_input_is_refused_clearly_and_nothing_is_stored(
    api: Any, repo: Any, two_queries: list[str]
) -> None:
    name = f"bad-{uuid.uuid4().hex[:6]}"
    before = _names(api)
    # 100 MB announced: refused on its Content-Length before the body is read.
    huge = api.post(
        "/api/dashboards",
        content=b"{" + b" " * (100 * 1024 * 1024) + b"}",
        headers={"Content-Type": "application/json"},
    )
    assert huge.status_code == 413 and huge.json()["error"] in ("http", "too_large")
    many = _board(name, two_queries)
    many["panels"] = [{"queries": [two_queries[0]]}] * 10_000
    refused = api.post("/api/dashboards", json=many)
    assert refused.status_code == 422, refused.text
    assert refused.json() == {
        "error": "validation",
        "detail": "a dashboard has at most 50 panels, this one has 10000",
        "at": "panels",
    }
    deleted = repo.save_query("FROM * SELECT soon.gone WINDOW 10s COMPUTE avg")
    repo.delete_query(deleted.id)
    stale = _board(name, [deleted.id, two_queries[1]])
    gone = api.post("/api/dashboards", json=stale)
    assert gone.status_code == 422 and gone.json()["at"] == "panels[0].queries[0]"
    assert deleted.id in gone.json()["detail"]
    assert api.post("/api/dashboards", content=b"not json").status_code == 400
    assert api.post("/api/dashboards/import", json={"apm_dashboard": 2}).status_code == 422
    assert _names(api) == before


def test_a_panel_whose_query_is_deleted_later_is_explained(
    api: Any, repo: Any, two_queries: list[str], served: Any
) -> None:
    made = api.post("/api/dashboards", json=_board(f"later-{uuid.uuid4().hex[:6]}", two_queries))
    board_id = made.json()["id"]
    repo.delete_query(two_queries[0])
    # Still readable; the page and the share view say which query is gone.
    assert api.get(f"/api/dashboards/{board_id}").status_code == 200
    token = api.post(f"/api/dashboards/{board_id}/share").json()["token"]
    data = httpx.get(f"{served.url}/share/{token}/data", timeout=30).json()
    notes = {p["id"]: p["notes"] for p in data["panels"]}
    assert any(two_queries[0] in n and "deleted" in n for n in notes["cpu"])


def test_share_links_open_without_sign_in_until_revoked(
    api: Any, anon: Any, two_queries: list[str]
) -> None:
    name = f"shared-{uuid.uuid4().hex[:6]}"
    board_id = api.post("/api/dashboards", json=_board(name, two_queries)).json()["id"]
    # Signed out, nothing else opens: the board's own API, a guessed link.
    assert anon.get(f"/api/dashboards/{board_id}").status_code == 401
    guessed = anon.get(f"/share/{secrets.token_urlsafe(32)}")
    assert guessed.status_code == 404 and guessed.json()["error"] == "not_found"
    assert anon.get("/share/").status_code == 404

    shared = api.post(f"/api/dashboards/{board_id}/share")
    assert shared.status_code == 201
    token = shared.json()["token"]
    assert len(token) >= 40 and shared.json()["url"] == f"/share/{token}"
    page = anon.get(f"/share/{token}")
    assert page.status_code == 200 and name in page.text
    assert page.headers["Referrer-Policy"] == "no-referrer"
    data = anon.get(f"/share/{token}/data").json()
    assert [p["id"] for p in data["panels"]] == ["cpu", "mem"]
    assert anon.get(f"/share/{token}/plotly.js").status_code == 200
    # Read-only: no method but GET goes through the link.
    assert anon.post(f"/share/{token}/data").status_code == 404
    assert api.get(f"/api/dashboards/{board_id}").json()["shared"] is True

    assert api.delete(f"/api/dashboards/{board_id}/share").status_code == 204
    for path in (f"/share/{token}", f"/share/{token}/data", f"/share/{token}/plotly.js"):
        replay = anon.get(path)
        assert replay.status_code == 404 and name not in replay.text
    assert api.delete(f"/api/dashboards/{board_id}/share").status_code == 404
