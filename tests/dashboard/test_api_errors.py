"""Every error the dashboard's REST API gives is the one shape both HTTP APIs share
(apm.errors): exactly ``error``, ``detail`` and ``at``. The whole app (auth, API, Dash's page
routes) over an in-memory repository, so storage failures and bugs can be staged."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from cassandra import InvalidRequest, OperationTimedOut, ReadTimeout
from cassandra.cluster import NoHostAvailable
from cassandra.cqltypes import Int32Type
from prometheus_client import CONTENT_TYPE_LATEST
from werkzeug.security import generate_password_hash

from apm.query import StoredQuery, WindowResult, parse
from dashboard.app import create_app
from dashboard.context import AppContext
from dashboard.settings import DashboardSettings
from storage.reader import bucket_span, ms_ceil

pytestmark = pytest.mark.unit

TOKEN = "tok-Jf5Ns8Gq2Vx6Bm9Lc3Pw7Rz4"
BAD_TEXT = "FROM web-* SELECT cpu WINDOW 10x COMPUTE avg"


def _bind(query_id: str, *buckets: int) -> None:
    """What the real driver does when it binds a key (storage.repository): Cassandra refuses a
    partition key over 64 KiB, and a day bucket past 32 bits does not serialize."""
    if len(query_id.encode()) > 65_535:
        raise InvalidRequest("Key length of 70000 is longer than maximum of 65535")
    for bucket in buckets:
        Int32Type.serialize(bucket, 4)  # struct.error, as in session.execute


class MemoryRepo:
    """The QueryRepository subset the API uses; ``down`` makes every call fail like a lost
    Cassandra (``failure``, OSError by default), and the id ``broken`` reads back as garbage
    (a bug: a 500). Keys are checked as the driver checks them."""

    def __init__(self) -> None:
        self.queries: dict[str, StoredQuery] = {}
        self.down = False
        self.failure: Exception = OSError("no host available (fake)")

    def _check(self, query_id: str = "") -> None:
        if self.down:
            raise self.failure
        _bind(query_id)

    def save_query(self, text: str) -> StoredQuery:
        self._check()
        saved = StoredQuery(f"q{len(self.queries)}", parse(text))
        self.queries[saved.id] = saved
        return saved

    def get_query(self, query_id: str) -> Any:
        self._check(query_id)
        return object() if query_id == "broken" else self.queries.get(query_id)

    def list_queries(self, include_paused: bool = True) -> list[StoredQuery]:
        self._check()
        return list(self.queries.values())

    def update_query(self, query_id: str, text: str) -> StoredQuery:
        self._check(query_id)
        if query_id not in self.queries:
            raise KeyError(query_id)
        self.queries[query_id] = StoredQuery(query_id, parse(text))
        return self.queries[query_id]

    def set_paused(self, query_id: str, paused: bool) -> StoredQuery:
        self._check(query_id)
        if query_id not in self.queries:
            raise KeyError(query_id)
        old = self.queries[query_id]
        self.queries[query_id] = StoredQuery(query_id, old.query, paused)
        return self.queries[query_id]

    def delete_query(self, query_id: str) -> bool:
        self._check(query_id)
        return self.queries.pop(query_id, None) is not None

    def read_results(
        self, query_id: str, start: float, end: float, page_size: int = 5000
    ) -> Iterator[WindowResult]:
        self._check(query_id)
        _bind(query_id, *bucket_span(ms_ceil(max(0.0, start)), ms_ceil(end)))
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
        (lambda c: c.get("/api/queries/q0/results?from=0&to=3e10"), "from"),
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


@pytest.mark.parametrize(
    "failure",
    [
        NoHostAvailable("no host available (fake)", {}),
        OperationTimedOut("no host available: timed out (fake)"),
        ReadTimeout("no host available: read timeout (fake)"),
        ConnectionRefusedError("no host available: refused (fake)"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_503_for_each_kind_of_storage_failure(
    api: Any, repo: MemoryRepo, failure: Exception
) -> None:
    repo.down, repo.failure = True, failure
    _shape(api.get("/api/queries"), 503, "storage_unavailable")


def test_a_refusal_by_the_database_is_not_an_outage(api: Any, repo: MemoryRepo) -> None:
    # InvalidRequest (or a value the driver cannot serialize) is a bug that got through: 500.
    repo.down, repo.failure = True, InvalidRequest("unconfigured table (fake)")
    body = _shape(api.get("/api/queries"), 500, "internal_error")
    assert "unconfigured" not in body["detail"]


LONG_ID = "q" * 70_000


@pytest.mark.parametrize(
    ("call", "status", "error", "at"),
    [
        # A key Cassandra refuses (over 64 KiB), or that no stored query can have: no such query.
        (lambda c: c.get(f"/api/queries/{LONG_ID}"), 404, "not_found", None),
        (lambda c: c.delete(f"/api/queries/{LONG_ID}"), 404, "not_found", None),
        (
            lambda c: c.patch(f"/api/queries/{LONG_ID}", json={"paused": True}),
            404,
            "not_found",
            None,
        ),
        (lambda c: c.get(f"/api/queries/{LONG_ID}/results"), 404, "not_found", None),
        (lambda c: c.get("/api/queries/q%01x"), 404, "not_found", None),
        # Times whose day bucket overflows the driver's 32-bit int, or before the epoch.
        (lambda c: c.get("/api/queries/q0/results?to=1e15"), 400, "bad_request", "to"),
        (
            lambda c: c.get("/api/queries/q0/results?from=1e15&to=1.0000001e15"),
            400,
            "bad_request",
            "to",
        ),
        (lambda c: c.get("/api/queries/q0/results?to=+275760-01-01"), 400, "bad_request", "to"),
        (lambda c: c.get("/api/queries/q0/results?from=-5&to=100"), 400, "bad_request", "from"),
        (
            lambda c: c.get("/api/queries/q0/results?max_points=1000000000"),
            400,
            "bad_request",
            "max_points",
        ),
        # A body nested past Python's stack, and one past the size limit.
        (
            lambda c: c.post("/api/queries", data="[" * 50_000, content_type="application/json"),
            400,
            "bad_request",
            "body",
        ),
        (
            lambda c: c.post(
                "/api/queries", data=b"{" + b" " * 70_000 + b"}", content_type="application/json"
            ),
            413,
            "too_large",
            None,
        ),
        (
            lambda c: c.patch("/api/queries/q0", data=b"\xff\xfe", content_type="application/json"),
            400,
            "bad_request",
            "body",
        ),
    ],
)
def test_bad_input_is_a_4xx_never_a_500_or_503(
    api: Any, call: Any, status: int, error: str, at: str | None
) -> None:
    assert (
        api.post(
            "/api/queries", json={"text": "FROM * SELECT cpu WINDOW 10s COMPUTE avg"}
        ).status_code
        == 201
    )
    _shape(call(api), status, error, at)


def test_prometheus_content_type_has_one_charset(server: Any) -> None:
    answer = server.test_client().get("/metrics")
    assert answer.headers["Content-Type"] == CONTENT_TYPE_LATEST
    assert answer.headers["Content-Type"].count("charset") == 1


def test_queries_is_the_queries_page(server: Any) -> None:
    anon = server.test_client()
    first = anon.get("/queries")
    assert first.status_code == 302 and first.headers["Location"] == "/login?next=/queries"
    page = anon.get("/login?next=/queries").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    login = anon.post(
        "/login", data={"csrf_token": csrf, "user": "ops", "password": "s3cret", "next": "/queries"}
    )
    assert login.headers["Location"] == "/queries"
    for path in ("/queries", "/queries/"):
        answer = anon.get(path)
        assert answer.status_code == 308 and answer.headers["Location"] == "/", path
    assert anon.get("/queries", follow_redirects=True).status_code == 200


def test_500_on_a_bug(api: Any) -> None:
    body = _shape(api.get("/api/queries/broken"), 500, "internal_error")
    assert "AttributeError" not in body["detail"]  # no internals leak out


def test_pages_keep_their_own_answers(server: Any) -> None:
    anon = server.test_client()
    assert anon.get("/chart").status_code == 302  # to the login page, as before
    assert anon.post("/metrics").status_code == 405
    assert anon.post("/metrics").mimetype == "text/html"
