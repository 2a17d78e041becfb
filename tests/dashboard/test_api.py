"""The REST API against the real app and real Cassandra: auth, validation shared with the UI
(422 with the parser's message and position), CRUD and results as JSON. The error shape of
every answer, over a fake repository: test_api_errors.py."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from apm.query import WindowResult, parse
from apm.query_state import STATES

pytestmark = pytest.mark.integration


def test_without_auth_every_api_call_is_refused(served: Any) -> None:
    with httpx.Client(base_url=served.url, timeout=30) as anon:
        assert anon.get("/api/queries").status_code == 401
        assert anon.post("/api/queries", json={"text": "x"}).status_code == 401
        wrong = anon.get("/api/queries", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        assert wrong.headers["WWW-Authenticate"].startswith("Bearer")
        # The UI redirects to the login page instead.
        page = anon.get("/chart")
        assert page.status_code == 302 and page.headers["location"].startswith("/login")


def test_create_get_patch_delete(api: Any) -> None:
    created = api.post(
        "/api/queries",
        json={"text": "from web-* select cpu window 10s compute avg, percentile(99.9)"},
    )
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["text"] == "FROM web-* SELECT cpu WINDOW 10s COMPUTE avg, percentile(99.9)"
    assert body["functions"] == ["avg", "p99.9"] and body["paused"] is False
    qid = body["id"]
    assert api.get(f"/api/queries/{qid}").json()["metric"] == "cpu"
    assert qid in [q["id"] for q in api.get("/api/queries").json()]

    paused = api.patch(f"/api/queries/{qid}", json={"paused": True})
    assert paused.status_code == 200 and paused.json()["paused"] is True
    edited = api.patch(
        f"/api/queries/{qid}", json={"text": "FROM * SELECT mem WINDOW 1m COMPUTE max"}
    )
    assert edited.json()["metric"] == "mem" and edited.json()["window_seconds"] == 60

    assert api.delete(f"/api/queries/{qid}").status_code == 204
    assert api.get(f"/api/queries/{qid}").status_code == 404
    assert api.delete(f"/api/queries/{qid}").status_code == 404
    assert api.patch(f"/api/queries/{qid}", json={"paused": False}).status_code == 404


def test_every_query_carries_its_state_and_why(api: Any, repo: Any) -> None:
    tag = uuid.uuid4().hex[:8]
    metric, job = f"api.state.{tag}", f"aggregator-api-{tag}"
    # A live job whose scope covers the metric (real jobs publish this every 5 s).
    repo.put_status(job, {"scope": {"metrics": [metric], "shard": None}, "reads": [metric]})
    created = api.post(
        "/api/queries", json={"text": f"FROM * SELECT {metric} WINDOW 1m COMPUTE avg"}
    ).json()
    assert created["state"] == "waiting"
    assert created["reason"] == f"waiting for its first 1m window to close; {job} reads {metric}"
    qid = created["id"]
    listed = api.get("/api/queries").json()
    assert all(q["state"] in STATES and q["reason"] for q in listed)
    assert next(q for q in listed if q["id"] == qid)["state"] == "waiting"

    written = time.time()
    repo.upsert_results(
        [WindowResult(qid, (written // 60) * 60 - 60, 60, {"avg": 2.0}, 3, written)]
    )
    got = api.get(f"/api/queries/{qid}").json()
    assert got["state"] == "evaluated" and got["reason"].startswith(f"evaluated by {job}")
    assert got["last_result_at"] is not None
    results = api.get(f"/api/queries/{qid}/results").json()
    assert results["query"]["state"] == "evaluated"

    paused = api.patch(f"/api/queries/{qid}", json={"paused": True}).json()
    assert (paused["state"], paused["reason"]) == (
        "paused",
        "paused: resume it to evaluate it again",
    )


def test_bad_query_is_422_with_the_parsers_message_and_position(api: Any) -> None:
    text = "FROM web-* SELECT cpu WINDOW 10x COMPUTE avg"
    response = api.post("/api/queries", json={"text": text})
    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "invalid_query"
    assert body["at"] == text.index("10x")
    assert "duration" in body["detail"] and "'10x'" in body["detail"]
    with pytest.raises(Exception) as exc_info:
        parse(text)
    assert body["detail"] == exc_info.value.detail  # type: ignore[attr-defined]
    patch = api.patch("/api/queries/whatever", json={"text": "FROM"})
    assert patch.status_code == 422 and patch.json()["at"] == len("FROM")


def test_a_query_with_host_tags_is_stored_and_a_bad_tag_is_refused_where_it_is(
    api: Any, repo: Any
) -> None:
    """Since the aggregator evaluates tags (issue 37), a tag query is stored like any other;
    a tag key the rule refuses is still a 422 at its position."""
    text = "FROM web-* WHERE env:prod SELECT cpu WINDOW 10s COMPUTE avg"
    created = api.post("/api/queries", json={"text": text})
    assert created.status_code == 201, created.text
    qid = created.json()["id"]
    assert created.json()["group_by"] == []
    assert repo.get_query(qid).text == text
    patch = api.patch(f"/api/queries/{qid}", json={"text": f"{text} BY dc"})
    assert patch.status_code == 200, patch.text
    assert patch.json()["group_by"] == ["dc"]
    assert repo.get_query(qid).text == f"{text} BY dc"
    bad = "FROM web-* WHERE Env:prod SELECT cpu WINDOW 10s COMPUTE avg"
    refused = api.post("/api/queries", json={"text": bad})
    assert refused.status_code == 422
    body = refused.json()
    assert body["error"] == "invalid_query" and body["at"] >= bad.index("WHERE")
    assert repo.get_query(qid).text == f"{text} BY dc"  # unchanged


@pytest.mark.parametrize("payload", [None, [], {"text": 5}, {}])
def test_malformed_bodies_get_clear_errors(api: Any, payload: Any) -> None:
    response = api.post("/api/queries", json=payload)
    assert response.status_code in (400, 422)
    assert response.json()["error"]


def test_results_as_json_raw_and_downsampled(api: Any, repo: Any) -> None:
    qid = api.post(
        "/api/queries", json={"text": "FROM * SELECT cpu WINDOW 10s COMPUTE min, max"}
    ).json()["id"]
    start = (time.time() // 10) * 10 - 3000
    rows = [
        WindowResult(
            qid, start + i * 10, 10, {"min": float(i), "max": float(i) + 1}, 3, time.time()
        )
        for i in range(300)
        if i not in (100, 101)
    ]
    repo.upsert_results(rows)
    raw = api.get(f"/api/queries/{qid}/results", params={"from": start, "to": start + 3000}).json()
    assert [w["window_start"] for w in raw["windows"]] == [r.window_start for r in rows]
    assert raw["windows"][0]["values"] == {"min": 0.0, "max": 1.0}
    small = api.get(
        f"/api/queries/{qid}/results", params={"from": start, "to": start + 3000, "max_points": 50}
    ).json()
    series = small["series"]["max"]
    drawn = [v for v in series["v"] if v is not None]
    assert len(drawn) <= 52 and max(drawn) == 300.0 and min(drawn) == 1.0  # extremes kept
    assert None in series["v"]  # the missing windows stay a gap
    begin = datetime.fromtimestamp(start - 86_400, UTC).isoformat().replace("+00:00", "Z")
    iso = api.get(f"/api/queries/{qid}/results", params={"from": begin, "to": start + 20})
    assert len(iso.json()["windows"]) == 2
    too_long = api.get(f"/api/queries/{qid}/results", params={"from": 0, "to": start})
    assert too_long.status_code == 400 and "at most" in too_long.json()["detail"]


def test_a_by_server_querys_results_are_read_per_server(api: Any, repo: Any) -> None:
    text = "FROM * SELECT cpu WINDOW 10s COMPUTE avg BY server TOP 2 BY avg"
    created = api.post("/api/queries", json={"text": text}).json()
    assert created["by_server"] and created["top"] == {"n": 2, "function": "avg", "order": "top"}
    qid, now = created["id"], time.time()
    start = (now // 10) * 10 - 600
    repo.upsert_results(
        WindowResult(qid, start + i * 10, 10, {"avg": float(i + k)}, 1, now, f"web-{k}")
        for i in range(3)
        for k in range(3)
    )
    span = {"from": start, "to": start + 600}
    listed = api.get(f"/api/queries/{qid}/results", params=span).json()
    assert listed["servers"] == ["web-0", "web-1", "web-2"] and listed["windows"] == []
    assert "?server=" in listed["detail"]
    one = api.get(f"/api/queries/{qid}/results", params={**span, "server": "web-2"}).json()
    assert one["server"] == "web-2"
    assert [w["values"]["avg"] for w in one["windows"]] == [2.0, 3.0, 4.0]
    bad = api.get(f"/api/queries/{qid}/results", params={**span, "server": "web 2"})
    assert (bad.status_code, bad.json()["at"]) == (400, "server")
    plain = api.post("/api/queries", json={"text": "FROM * SELECT cpu WINDOW 10s COMPUTE avg"})
    refused = api.get(f"/api/queries/{plain.json()['id']}/results", params={"server": "web-2"})
    assert refused.status_code == 400 and "BY server" in refused.json()["detail"]


@pytest.mark.parametrize(
    "params", [{"from": "yesterday"}, {"from": "10", "to": "5"}, {"max_points": "1"}, {"to": "nan"}]
)
def test_bad_result_parameters(api: Any, params: dict[str, str]) -> None:
    qid = api.post(
        "/api/queries", json={"text": "FROM * SELECT cpu WINDOW 10s COMPUTE min"}
    ).json()["id"]
    response = api.get(f"/api/queries/{qid}/results", params=params)
    assert response.status_code == 400 and response.json()["error"] == "bad_request"


@pytest.mark.parametrize(
    ("path", "params", "status"),
    [
        ("/api/queries/{qid}/results", {"to": "1e15"}, 400),  # a day bucket past 32 bits
        ("/api/queries/{qid}/results", {"from": "1e14", "to": "1.00000001e14"}, 400),
        ("/api/queries/{qid}/results", {"to": "-1e15"}, 400),
    ],
)
def test_bad_input_is_never_storage_unavailable(
    api: Any, path: str, params: dict[str, str], status: int
) -> None:
    """The real driver turned these into a 503 "storage unavailable". (An id over Cassandra's
    64 KiB key limit cannot come through a URL: the HTTP layers refuse it first; the unit
    tests cover it.)"""
    qid = api.post(
        "/api/queries", json={"text": "FROM * SELECT cpu WINDOW 10s COMPUTE min"}
    ).json()["id"]
    response = api.get(path.format(qid=qid), params=params)
    assert response.status_code == status, response.text
    assert response.json()["error"] == "bad_request"


def test_results_of_unknown_query_is_404(api: Any) -> None:
    assert api.get("/api/queries/nope/results").status_code == 404


def test_metrics_and_healthz_are_public(served: Any) -> None:
    with httpx.Client(base_url=served.url, timeout=30) as anon:
        assert anon.get("/healthz").text == "ok\n"
        assert "apm_dashboard_requests_total" in anon.get("/metrics").text
