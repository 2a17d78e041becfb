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


def test_preview_of_a_server_silent_rule_lists_its_servers_now(served, repo):
    """From the stored last-seen times the evaluator reads: a matching server silent past the
    bound fires, one heard from lately is normal, one gone for over an hour and one that does
    not match are left out. Was a 500 HTML page (the preview assumed a stored query)."""
    import time
    import uuid

    p, now = f"pv{uuid.uuid4().hex[:8]}", time.time()
    repo.touch_servers(
        {f"{p}-quiet": now - 300, f"{p}-live": now - 2, f"{p}-gone": now - 7200, "db-1": now}
    )
    raw = {"name": "silent", "kind": "server_silent", "servers": f"{p}-*", "silent_after_s": 60}
    status, answer = call(served, "POST", "/api/alerts/rules/preview", raw)
    assert status == 200 and answer["kind"] == "server_silent"
    assert [(s["server"], s["state"]) for s in answer["servers"]] == [
        (f"{p}-live", "normal"),
        (f"{p}-quiet", "firing"),
    ]
    assert answer["servers"][1]["silent_s"] >= 300
    status, err = call(served, "POST", "/api/alerts/rules/preview", {**raw, "silent_after_s": 0})
    assert (status, err["at"]) == (422, "silent_after_s")


def test_put_replaces_a_rule_validated_as_create(served, query_id):
    status, created = call(served, "POST", "/api/alerts/rules", rule(query_id))
    path = f"/api/alerts/rules/{created['id']}"
    edited = rule(query_id, thresholds={"warning": 85, "critical": 95})
    status, answer = call(served, "PUT", path, edited)
    assert status == 200 and answer["id"] == created["id"]
    stored = {r["id"]: r for r in call(served, "GET", "/api/alerts")[1]["rules"]}
    assert stored[created["id"]]["thresholds"]["warning"] == 85
    for over, at in [
        ({"thresholds": {"warning": "nan"}}, "thresholds.warning"),
        ({"for_s": 10 * 365 * 86_400}, "for_s"),
        ({"function": "max"}, "function"),  # what the rule watches is fixed
    ]:
        status, err = call(served, "PUT", path, {**edited, **over})
        assert (status, err["error"], err["at"]) == (422, "validation", at)
    assert call(served, "GET", "/api/alerts")[1]["rules"] == list(stored.values())
    status, err = call(served, "PUT", "/api/alerts/rules/no-such-rule", edited)
    assert (status, err["at"]) == (404, "rule_id") and set(err) == {"error", "detail", "at"}
    assert "no-such-rule" not in {r["id"] for r in call(served, "GET", "/api/alerts")[1]["rules"]}
    call(served, "DELETE", path)


def _json_values() -> Any:
    from hypothesis import strategies as st

    scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
        max_leaves=12,
    )


def _bodies(query_id: str) -> Any:
    """Arbitrary JSON, and rule- and silence-shaped objects with any field set to anything (so
    that the fuzzing reaches past the first check)."""
    from hypothesis import strategies as st

    names = [
        *rule(query_id),
        *("comparison", "kind", "servers", "silent_after_s", "keep_firing_for_s", "labels"),
        *("nodata_policy", "nodata_windows", "annotation", "receivers", "rule_id", "ends_at"),
        *("starts_at", "server_glob", "matchers", "weekly", "comment"),
    ]
    silent = {"name": "s", "kind": "server_silent", "servers": "*", "silent_after_s": 60}
    silence = {"starts_at": 0, "ends_at": 3600, "server_glob": "web-*"}
    shaped = st.builds(
        lambda base, over: {**base, **over},
        st.sampled_from([rule(query_id), silent, silence]),
        st.dictionaries(st.sampled_from(names), _json_values(), max_size=3),
    )
    return _json_values() | shaped


def test_no_body_answers_a_5xx_and_a_4xx_stores_nothing(served, query_id):
    """Any JSON to the routes that take a body: 2xx, or a 4xx in the one error shape with
    nothing stored (rules and silences as before)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    def stored() -> tuple[set[str], set[str]]:
        rules = {r["id"] for r in call(served, "GET", "/api/alerts")[1]["rules"]}
        return rules, {s["id"] for s in call(served, "GET", "/api/alerts/silences")[1]}

    existing = call(served, "POST", "/api/alerts/rules", rule(query_id))[1]["id"]
    routes = ["/rules", "/rules/preview", "/silences", f"/rules/{existing}"]

    @settings(
        max_examples=150,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(route=st.sampled_from(routes), raw=_bodies(query_id))
    def check(route: str, raw: Any) -> None:
        before = stored()
        body_before = call(served, "GET", "/api/alerts")[1]["rules"]
        method = "PUT" if route == routes[-1] else "POST"
        status, answer = call(served, method, "/api/alerts" + route, raw)
        assert status < 500, (status, answer)
        if status >= 400:
            assert set(answer) == {"error", "detail", "at"}, answer
            assert stored() == before
            assert call(served, "GET", "/api/alerts")[1]["rules"] == body_before
        elif route == "/rules":
            call(served, "DELETE", f"/api/alerts/rules/{answer['id']}")
        elif route == "/silences":
            call(served, "DELETE", f"/api/alerts/silences/{answer['id']}")

    check()
    call(served, "DELETE", f"/api/alerts/rules/{existing}")
