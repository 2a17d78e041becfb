"""Factories for the load generator's tests: settings, fleets, and a recording fake ingest
(an httpx.MockTransport, used by unit tests of the sender's logic only)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from loadgen.fleet import Fleet
from loadgen.settings import LoadgenSettings


@pytest.fixture
def make_settings() -> Callable[..., LoadgenSettings]:
    def make(**overrides: Any) -> LoadgenSettings:
        base: dict[str, Any] = {
            "servers": 30,
            "metrics": 5,
            "duration_s": 12,
            "seed": 7,
            "start": 1_763_800_000.0,
            "silent_fraction": 0.2,
            "servers_per_request": 8,
            "concurrency": 4,
            "progress_interval_s": 60.0,
        }
        return LoadgenSettings(**{**base, **overrides})

    return make


@pytest.fixture
def make_fleet() -> Callable[..., Fleet]:
    def make(
        servers: int = 30,
        metrics: int = 5,
        seed: int = 7,
        silent_fraction: float = 0.2,
        metric_prefix: str = "",
    ) -> Fleet:
        return Fleet(servers, metrics, seed, silent_fraction, metric_prefix)

    return make


class FakeIngest:
    """Answers each request from a script of statuses (then 202), recording accepted bodies."""

    def __init__(
        self, script: list[int | Exception] | None = None, headers: dict[str, str] | None = None
    ) -> None:
        self.script = list(script or [])
        self.headers = headers or {}
        self.accepted: list[dict[str, Any]] = []
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        step = self.script.pop(0) if self.script else 202
        if isinstance(step, Exception):
            raise step
        if step != 202:
            return httpx.Response(
                step, headers=self.headers, json={"error": "scripted", "detail": "x", "at": None}
            )
        body = request.content
        if request.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        doc = json.loads(body)
        self.accepted.append(doc)
        samples = sum(len(s["metrics"]) for s in doc["snapshots"])
        return httpx.Response(202, json={"accepted": samples, "snapshots": len(doc["snapshots"])})

    def client(self) -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(self))

    def samples(self) -> list[tuple[str, str, float, float]]:
        return [
            (s["server"], m, s["ts"], v)
            for doc in self.accepted
            for s in doc["snapshots"]
            for m, v in s["metrics"].items()
        ]


@pytest.fixture
def fake_ingest() -> Callable[..., FakeIngest]:
    return FakeIngest


@pytest.fixture
def real_ingest(kafka_bootstrap: str, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A real ``apm ingest`` process on the shared Kafka: (base URL, API key)."""
    from ingest.auth import add_key
    from launch import processes
    from launch.probe import free_port

    key = add_key(tmp_path / "ingest-keys", "loadgen-tests")
    port = free_port()
    proc = processes.ingest(port, tmp_path / "ingest-keys", kafka_bootstrap).start(
        tmp_path / "ingest"
    )
    try:
        yield processes.ingest_url(port), key
    finally:
        proc.stop(30)
