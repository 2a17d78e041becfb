"""Load shedding and the answer deadline (issue 14, item 7), with a publisher that blocks
like Kafka during an outage: the ingest answers 503 + Retry-After before the agent gives up,
refuses the request past ``max_inflight`` at once, and /metrics and /readyz stay responsive."""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Mapping, Sequence

import httpx
import orjson
import pytest

from ingest import deps
from ingest.app import create_app
from ingest.auth import add_key
from ingest.settings import IngestSettings
from tests.ingest.fakes import FakePublisher

pytestmark = pytest.mark.unit


class BlockedPublisher(FakePublisher):
    """publish() blocks until released, as kafka-python does waiting on a down broker."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.entered = 0
        self.finished = 0
        self.app: object = None

    def publish(self, records: Mapping[str, Sequence[bytes]]) -> None:
        with self.lock:
            self.entered += 1
        self.release.wait(20)
        super().publish(records)
        with self.lock:
            self.finished += 1


def _client(tmp_path, publisher, **overrides) -> httpx.AsyncClient:
    key = add_key(tmp_path / "keys")
    settings = IngestSettings(keys_file=tmp_path / "keys", **overrides)
    app = create_app(settings, publisher=publisher)
    publisher.app = app
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://ingest",
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        timeout=30,
    )


def _batch() -> bytes:
    return orjson.dumps(
        {"snapshots": [{"server": "web-1", "ts": time.time(), "metrics": {"cpu": 1.0}}]}
    )


async def _until(condition, timeout: float = 5.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "condition not reached"
        await asyncio.sleep(0.01)


def test_monitoring_answers_and_the_next_request_is_shed_while_publishes_block(tmp_path):
    """40 publishes blocked (anyio's whole default thread pool): /metrics and /readyz still
    answer at once, and request 41 gets 503 + Retry-After at once. Before: /metrics waited
    for a thread behind the publishes, and request 41 queued with them."""
    n = 40
    publisher = BlockedPublisher()
    client = _client(tmp_path, publisher, max_inflight=n, answer_timeout_s=30, retry_after_s=3)

    async def scenario() -> None:
        posts = [client.post("/v1/metrics", content=_batch()) for _ in range(n)]
        held = [asyncio.ensure_future(p) for p in posts]
        try:
            await _until(lambda: publisher.entered == n)
            # Behind the publishes, an answer would wait for their release (in finally): each
            # comes while all of them still block (a generous bound for a loaded machine).
            metrics = await asyncio.wait_for(client.get("/metrics"), 10)
            ready = await asyncio.wait_for(client.get("/readyz"), 10)
            shed = await asyncio.wait_for(client.post("/v1/metrics", content=_batch()), 10)
            assert publisher.finished == 0
        finally:
            publisher.release.set()
        assert metrics.status_code == 200 and ready.status_code == 200
        assert f"apm_ingest_inflight_requests {float(n)}" in metrics.text
        assert shed.status_code == 503, shed.text
        assert shed.headers["Retry-After"] == "3"
        assert set(shed.json()) == {"error", "detail", "at"}
        assert shed.json()["error"] == "unavailable"
        assert [a.status_code for a in await asyncio.gather(*held)] == [202] * n
        after = await client.get("/metrics")
        assert 'apm_ingest_requests_total{outcome="rejected",reason="overloaded"} 1.0' in after.text
        assert "apm_ingest_inflight_requests 0.0" in after.text

    asyncio.run(scenario())


def test_503_at_the_answer_deadline_and_the_late_publish_still_counts(tmp_path):
    """Kafka silent: the answer is 503 + Retry-After at answer_timeout_s (before: only after
    publish_timeout_s, 10 s, past the agent's 5 s). The publish still running keeps its slot,
    so with max_inflight=1 the next request is shed until it returns."""
    publisher = BlockedPublisher()
    client = _client(tmp_path, publisher, max_inflight=1, answer_timeout_s=0.3, retry_after_s=2)

    async def scenario() -> None:
        try:
            started = time.monotonic()
            late = await asyncio.wait_for(client.post("/v1/metrics", content=_batch()), 10)
            took = time.monotonic() - started
            # the answer's deadline, not the publish's end: the publish still blocks
            assert publisher.finished == 0
            shed = await asyncio.wait_for(client.post("/v1/metrics", content=_batch()), 10)
        finally:
            publisher.release.set()
        assert late.status_code == 503, late.text
        assert late.headers["Retry-After"] == "2"
        assert late.json()["error"] == "unavailable" and "deadline" in late.json()["detail"]
        assert took > 0.25  # not before answer_timeout_s (a timer never fires early)
        assert shed.status_code == 503 and "limit of 1" in shed.json()["detail"]
        await _until(lambda: publisher.finished == 1)
        await _until(lambda: publisher.app.state.ingest.gate.count() == 0)
        ok = await client.post("/v1/metrics", content=_batch())
        assert ok.status_code == 202, ok.text

    asyncio.run(scenario())


def test_the_default_deadline_is_the_contract_of_4_seconds():
    """docs/ingest.md: "the ingest answers within 4 s"; the publisher's own timeout is under
    it, so its 503 comes first and names the cause."""
    settings = IngestSettings()
    assert settings.answer_timeout_s <= 4.0
    assert settings.publish_timeout_s < settings.answer_timeout_s
    assert settings.retry_after_s >= 1


def test_dependencies_do_not_take_a_thread():
    for dep in (deps.get_state, deps.get_settings, deps.get_publisher, deps.require_key):
        assert inspect.iscoroutinefunction(dep), dep.__name__
