"""Every error the dashboard's REST API gives is the one shape both HTTP APIs share
(apm.errors): exactly ``error``, ``detail`` and ``at``. The whole app (auth, API, Dash's page
routes) over an in-memory repository, so storage failures and bugs can be staged."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from werkzeug.security import generate_password_hash

from apm.query import StoredQuery, WindowResult, parse
from dashboard.app import create_app
from dashboard.context import AppContext
from dashboard.settings import DashboardSettings

pytestmark = pytest.mark.unit

TOKEN = "tok"
BAD_TEXT = "FROM web-* SELECT cpu WINDOW 10x COMPUTE avg"


class MemoryRepo:
    """The QueryRepository subset the API uses; ``down`` makes every call fail like a lost
    Cassandra, and the id ``broken`` reads back as garbage (a bug: a 500)."""

    def __init__(self) -> None:
        self.queries: dict[str, StoredQuery] = {}
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise OSError("no host available (fake)")

    def save_query(self, text: str) -> StoredQuery:
        self._check()
        saved = StoredQuery(f"q{len(self.queries)}", parse(text))
        self.queries[saved.id] = saved
        return saved

    def get_query(self, query_id: str) -> Any:
        self._check()
        return object() if query_id == "broken" else self.queries.get(query_id)

    def list_queries(self, include_paused: bool = True) -> list[StoredQuery]:
        self._check()
        return list(self.queries.values())

    def update_query(self, query_id: str, text: str) -> StoredQuery:
        self._check()
        if query_id not in self.queries:
            raise KeyError(query_id)
        self.queries[query_id] = StoredQuery(query_id, parse(text))
        return self.queries[query_id]

    def set_paused(self, query_id: str, paused: bool) -> StoredQuery:
        self._check()
        if query_id not in self.queries:
            raise KeyError(query_id)
        old = self.queries[query_id]
        self.queries[query_id] = StoredQuery(query_id, old.query, paused)
        return self.queries[query_id]

    def delete_query(self, query_id: str) -> bool:
        self._check()
        return self.queries.pop(query_id, None) is not None

    def read_results(
        self, query_id: str, start: float, end: float, page_size: int = 5000
    ) -> Iterator[WindowResult]:
        self._check()
        return iter(())

    def last_result_at(self, query_id: str) -> float | None:
        self._check()
        return None

    def list_servers(self) -> dict[str, float]:
        return {}

    def list_metrics(self) -> dict[str, float]:
        self._check()
        return {}

    def get_status(self) -> dict[str, dict]:
        self._check()
        return {}


class _Topics:
    def metrics(self) -> list[str]:
        return []


class _Scraper:
    def scrape(self) -> list[Any]:
        return []


@pytest.fixture
def repo() -> MemoryRepo:
    return MemoryRepo()


@pytest.fixture
def server(repo: MemoryRepo) -> Any:
    settings = DashboardSettings(
        user="ops", password_hash=generate_password_hash("s3cret"), token=TOKEN, secret_key="k" * 32
    )
    return create_app(AppContext(settings, repo, _Topics(), _Scraper())).server


@pytest.fixture
def api(server: Any) -> Any:
    client = server.test_client()
    client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {TOKEN}"
    return client


def _shape(answer: Any, status: int, error: str, at: object = None) -> dict[str, Any]:
    assert answer.status_code == status, answer.get_data(as_text=True)
    assert answer.mimetype == "application/json"
    body = answer.get_json()
    assert set(body) == {"error", "detail", "at"}, body
    assert body["error"] == error and body["at"] == at, body
    assert isinstance(body["detail"], str) and body["detail"], body
    return body


def test_401_and_403_from_auth(server: Any) -> None:
    anon = server.test_client()
    _shape(anon.get("/api/queries"), 401, "unauthorized")
    _shape(
        anon.get("/api/queries", headers={"Authorization": "Bearer nope"}),
        401,
        "unauthorized",
        "header:Authorization",
    )
    page = anon.get("/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    assert (
        anon.post(
            "/login", data={"csrf_token": csrf, "user": "ops", "password": "s3cret", "next": "/"}
        ).status_code
        == 302
    )
    _shape(
        anon.post("/api/queries", json={"text": "FROM * SELECT cpu WINDOW 10s COMPUTE avg"}),
        403,
        "forbidden",
        "header:X-CSRFToken",
    )


def test_404s(api: Any) -> None:
    _shape(api.get("/api/queries/nope"), 404, "not_found")
    _shape(api.patch("/api/queries/nope", json={"paused": True}), 404, "not_found")
    _shape(
        api.patch("/api/queries/nope", json={"text": "FROM * SELECT cpu WINDOW 10s COMPUTE avg"}),
        404,
        "not_found",
    )
    _shape(api.delete("/api/queries/nope"), 404, "not_found")
    _shape(api.get("/api/queries/nope/results"), 404, "not_found")
    # An unknown route under /api/ is not Dash's page (200 HTML) but a 404 in the shape.
    _shape(api.get("/api/nothing"), 404, "not_found")
    _shape(api.get("/api/queries/nope/else"), 404, "not_found")


def test_405(api: Any) -> None:
    answer = api.put("/api/queries", json={})
    _shape(answer, 405, "method_not_allowed")
    assert "POST" in answer.headers["Allow"]


@pytest.mark.parametrize(
    ("call", "at"),
    [
        (
            lambda c: c.post("/api/queries", data="not json", content_type="application/json"),
            "body",
        ),
        (lambda c: c.post("/api/queries", json=[1]), "body"),
        (lambda c: c.patch("/api/queries/q0", json={}), "body"),
        (
            lambda c: c.patch("/api/queries/q0", json={"paused": True, "zeta": 1, "alpha": 2}),
            "alpha",
        ),
        (lambda c: c.patch("/api/queries/q0", json={"paused": "yes"}), "paused"),
        (lambda c: c.get("/api/queries/q0/results?to=someday"), "to"),
        (lambda c: c.get("/api/queries/q0/results?from=nan"), "from"),
        (lambda c: c.get("/api/queries/q0/results?max_points=many"), "max_points"),
        (lambda c: c.get("/api/queries/q0/results?from=200&to=100"), "from"),
        (lambda c: c.get("/api/queries/q0/results?from=0&to=1e12"), "from"),
        (lambda c: c.get("/api/queries/q0/results?max_points=1"), "max_points"),
    ],
)
def test_400s_name_the_field_or_parameter(api: Any, call: Any, at: str) -> None:
    assert (
        api.post(
            "/api/queries", json={"text": "FROM * SELECT cpu WINDOW 10s COMPUTE avg"}
        ).status_code
        == 201
    )
    _shape(call(api), 400, "bad_request", at)


def test_422_carries_the_parsers_message_and_position(api: Any) -> None:
    body = _shape(
        api.post("/api/queries", json={"text": BAD_TEXT}),
        422,
        "invalid_query",
        BAD_TEXT.index("10x"),
    )
    with pytest.raises(Exception) as exc_info:
        parse(BAD_TEXT)
    assert body["detail"] == exc_info.value.detail  # type: ignore[attr-defined]
    _shape(api.post("/api/queries", json={"text": 5}), 422, "invalid_query", 0)
    _shape(api.post("/api/queries", json={}), 422, "invalid_query", 0)
    assert (
        api.post(
            "/api/queries", json={"text": "FROM * SELECT cpu WINDOW 10s COMPUTE avg"}
        ).status_code
        == 201
    )
    _shape(api.patch("/api/queries/q0", json={"text": "FROM"}), 422, "invalid_query", len("FROM"))


def test_503_when_storage_is_down(api: Any, repo: MemoryRepo) -> None:
    repo.down = True
    for answer in (
        api.get("/api/queries"),
        api.get("/api/queries/q0"),
        api.post("/api/queries", json={"text": "FROM * SELECT cpu WINDOW 10s COMPUTE avg"}),
        api.patch("/api/queries/q0", json={"paused": True}),
        api.delete("/api/queries/q0"),
        api.get("/api/queries/q0/results"),
    ):
        body = _shape(answer, 503, "storage_unavailable")
        assert "no host available" in body["detail"]


def test_500_on_a_bug(api: Any) -> None:
    body = _shape(api.get("/api/queries/broken"), 500, "internal_error")
    assert "AttributeError" not in body["detail"]  # no internals leak out


def test_pages_keep_their_own_answers(server: Any) -> None:
    anon = server.test_client()
    assert anon.get("/chart").status_code == 302  # to the login page, as before
    assert anon.post("/metrics").status_code == 405
    assert anon.post("/metrics").mimetype == "text/html"
