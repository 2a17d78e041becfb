"""Factories for the ingest tests: batches, key files, apps with a fake publisher (unit) and
a real ingest process on the shared Kafka (integration)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.ingest.fakes import FakePublisher


@pytest.fixture
def key_file(tmp_path: Path) -> tuple[Path, str]:
    """A key file holding one fresh key; returns (path, key)."""
    from ingest.auth import add_key

    path = tmp_path / "ingest-keys"
    return path, add_key(path, "tests")


@pytest.fixture
def make_batch() -> Callable[..., dict[str, Any]]:
    """A valid batch: ``servers`` x ``metrics`` samples at ``ts`` (default now)."""

    def make(
        servers: int = 2,
        metrics: int = 3,
        ts: float | None = None,
        prefix: str = "test",
        server_prefix: str = "web",
    ) -> dict[str, Any]:
        at = time.time() if ts is None else ts
        return {
            "snapshots": [
                {
                    "server": f"{server_prefix}-{s:03d}",
                    "ts": at,
                    "metrics": {
                        f"{prefix}.m{m}": float(s * 1000 + m) + 0.5 for m in range(metrics)
                    },
                }
                for s in range(servers)
            ]
        }

    return make


@pytest.fixture
def fake_publisher() -> FakePublisher:
    return FakePublisher()


@pytest.fixture
def make_client(
    key_file: tuple[Path, str], fake_publisher: FakePublisher
) -> Iterator[Callable[..., Any]]:
    """Builds a TestClient (lifespan run) over an app with the fake publisher; keyword
    arguments override IngestSettings."""
    from fastapi.testclient import TestClient

    from ingest.app import create_app
    from ingest.settings import IngestSettings

    clients: list[Any] = []

    def make(publisher: Any = None, **overrides: Any) -> Any:
        settings = IngestSettings(keys_file=key_file[0], **overrides)
        app = create_app(settings, publisher=publisher or fake_publisher)
        client = TestClient(app, headers={"Authorization": f"Bearer {key_file[1]}"})
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


@dataclass
class RunningIngest:
    url: str
    key: str
    proc: Any
    port: int

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


@pytest.fixture
def start_ingest_process(
    tmp_path: Path, key_file: tuple[Path, str]
) -> Iterator[Callable[..., RunningIngest]]:
    """Starts real ``apm ingest`` processes (stopped at teardown) against a given broker."""
    from launch import processes
    from launch.probe import free_port

    started: list[Any] = []

    def start(
        kafka_bootstrap: str, env: dict[str, str] | None = None, wait_ready: bool = True
    ) -> RunningIngest:
        port = free_port()
        proc = processes.ingest(port, key_file[0], kafka_bootstrap).start(
            tmp_path / "ingest-home", env=env, wait_s=60 if wait_ready else None
        )
        started.append(proc)
        return RunningIngest(processes.ingest_url(port), key_file[1], proc, port)

    yield start
    for proc in started:
        proc.stop(30)
