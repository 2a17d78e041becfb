"""The alerting REST API on the served dashboard (real Cassandra): rules, preview, history,
silences, the one error shape, and an OpenAPI document that names every route."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from typing import Any

import pytest

from dashboard.alerts_openapi import OPENAPI
from tests.dashboard.conftest import TOKEN
from tests.support.webhook import webhook_receiver

pytestmark = pytest.mark.integration


def call(served: Any, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        served.url + path,
        data=data,
        method=method,
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=20) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.fixture
def query_id(repo: Any) -> str:
    return repo.save_query("FROM web-* SELECT cpu.util WINDOW 10s COMPUTE avg, max").id


def rule(query_id: str, **over: Any) -> dict[str, Any]:
    return {
        "name": "cpu high",
        "query_id": query_id,
        "function": "avg",
        "thresholds": {"warning": 80, "critical": 90},
        "for_s": 30,
        **over,
    }


def test_create_list_preview_history_delete(served, query_id):
    status, created = call(served, "POST", "/api/alerts/rules", rule(query_id))
    assert status == 201 and created["query_id"] == query_id
    status, listed = call(served, "GET", "/api/alerts")
    assert status == 200 and created["id"] in {r["id"] for r in listed["rules"]}
    status, preview = call(served, "POST", "/api/alerts/rules/preview", rule(query_id))
    assert status == 200 and len(preview["points"]) == 360  # an hour of 10 s windows
    assert {p["state"] for p in preview["points"]} == {"normal"}  # no samples, policy keep
    status, history = call(served, "GET", f"/api/alerts/rules/{created['id']}/history")
    assert (status, history) == (200, [])
    assert call(served, "DELETE", f"/api/alerts/rules/{created['id']}")[0] == 200
    status, err = call(served, "DELETE", f"/api/alerts/rules/{created['id']}")
    assert status == 404 and set(err) == {"error", "detail", "at"}


@pytest.mark.parametrize(
    ("over", "at"),
    [
        ({"thresholds": {"warning": "nan"}}, "thresholds.warning"),
        ({"for_s": 10 * 365 * 86_400}, "for_s"),
        ({"query_id": "gone"}, "query_id"),
        ({"annotation": "{value.__class__.__mro__}"}, "annotation"),
    ],
)
def test_bad_rules_are_422_in_the_one_shape(served, query_id, over, at):
    before = call(served, "GET", "/api/alerts")[1]
    status, err = call(served, "POST", "/api/alerts/rules", {**rule(query_id), **over})
    assert status == 422
    assert set(err) == {"error", "detail", "at"} and (err["error"], err["at"]) == ("validation", at)
    assert call(served, "GET", "/api/alerts")[1] == before  # nothing stored


def test_silences(served, query_id):
    status, s = call(
        served,
        "POST",
        "/api/alerts/silences",
        {"starts_at": 0, "ends_at": 3600, "server_glob": "web-*"},
    )
    assert status == 201
    assert s["id"] in {x["id"] for x in call(served, "GET", "/api/alerts/silences")[1]}
    status, err = call(served, "POST", "/api/alerts/silences", {"starts_at": 0, "ends_at": 10})
    assert status == 422 and err["error"] == "validation"
    assert call(served, "DELETE", f"/api/alerts/silences/{s['id']}")[0] == 200


def test_not_json_is_400(served):
    req = urllib.request.Request(
        served.url + "/api/alerts/rules",
        data=b"{nope",
        method="POST",
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req, timeout=20)
    assert info.value.code == 400
    assert json.loads(info.value.read())["at"] == "body"


def test_openapi_names_every_route(served):
    status, doc = call(served, "GET", "/api/alerts/openapi.json")
    assert status == 200 and doc == OPENAPI
    routes = {
        (r.rule.replace("<", "{").replace(">", "}"), m.lower())
        for r in served.app.server.url_map.iter_rules()
        if r.rule.startswith("/api/alerts")
        for m in r.methods - {"HEAD", "OPTIONS"}
    }
    described = {(p, m) for p, ops in OPENAPI["paths"].items() for m in ops}
    assert routes == described


def test_an_oversized_body_is_413_before_it_is_read(served):
    """Headers announcing 100 MB and none of it sent: the answer comes without waiting for
    the body (read first, the request would hang until the socket timeout)."""
    host, port = served.url.split("//")[1].split(":")
    with socket.create_connection((host, int(port)), timeout=15) as conn:
        conn.sendall(
            b"POST /api/alerts/rules HTTP/1.1\r\nHost: x\r\n"
            + f"Authorization: Bearer {TOKEN}\r\n".encode()
            + b"Content-Type: application/json\r\nContent-Length: 100000000\r\n\r\n{"
        )
        head = conn.recv(4096)
    assert head.startswith(b"HTTP/1.1 413"), head[:200]


def test_test_notify_answers_only_an_outcome_never_the_url(served, monkeypatch):
    """The hook URL's path is a secret and the answer reaches any API user: a refusing
    receiver is named by its outcome alone."""
    with webhook_receiver() as hook:
        hook.status = 404
        monkeypatch.setenv("APM_ALERTING_WEBHOOK_URL", hook.url + "/T0KEN-s3cret")
        status, answer = call(served, "POST", "/api/alerts/test-notify?receiver=webhook")
    assert (status, answer) == (502, {"webhook": "refused"})


def test_test_notify_delivers_to_the_webhook_peer(served, monkeypatch):
    """The dashboard reads the same APM_ALERTING_* receivers as the evaluator (`make run`
    passes them to both): the test notice arrives, signed."""
    with webhook_receiver() as hook:
        monkeypatch.setenv("APM_ALERTING_WEBHOOK_URL", hook.url)
        monkeypatch.setenv("APM_ALERTING_WEBHOOK_SECRET", "s3cret")
        status, answer = call(served, "POST", "/api/alerts/test-notify?receiver=webhook")
        assert (status, answer) == (200, {"webhook": "delivered"})
        ((headers, _),) = hook.posts
        assert {k.lower() for k in headers} >= {"x-apm-signature"}
        assert len(hook.alerts()) == 1
    monkeypatch.delenv("APM_ALERTING_WEBHOOK_URL")
    status, err = call(served, "POST", "/api/alerts/test-notify?receiver=webhook")
    assert status == 404 and err["at"] == "receiver"
    monkeypatch.setenv("APM_ALERTING_WEBHOOK_URL", "file:///etc/passwd")
    status, err = call(served, "POST", "/api/alerts/test-notify?receiver=webhook")
    assert (status, err["error"]) == (503, "misconfigured")
    assert err["detail"].startswith("APM_ALERTING_WEBHOOK_URL: Value error, receiver URL must")
