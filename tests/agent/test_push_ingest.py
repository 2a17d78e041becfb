"""The agent against the real ingest application (its real auth, routing and validation over
a real socket; only Kafka is a fake publisher): a rotated key (401) and a wrong path (404)
keep the whole spool, and once the key is right the backlog goes through in order."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.http import StdlibHttpClient

pytestmark = pytest.mark.unit


@pytest.fixture
def ingest(tmp_path: Path) -> Iterator[tuple[str, str, object]]:
    import uvicorn

    from ingest.app import create_app
    from ingest.auth import add_key
    from ingest.settings import IngestSettings
    from tests.ingest.fakes import FakePublisher

    keys = tmp_path / "keys"
    key = add_key(keys, "agent")
    publisher = FakePublisher()
    app = create_app(IngestSettings(keys_file=keys), publisher=publisher)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", key, publisher
    finally:
        server.should_exit = True
        thread.join(10)


def test_a_rotated_key_and_a_wrong_url_keep_the_spool_until_fixed(
    ingest, make_pusher, tmp_path
) -> None:
    base, key, publisher = ingest
    now = time.time()
    pusher = make_pusher(StdlibHttpClient(), snapshots=0)
    for i in range(6):
        pusher.spool.append(
            json.dumps({"server": "web-1", "ts": now - 10 + i, "metrics": {"m": 1.0}}).encode()
        )
    pusher.max_snapshots = pusher._limit = 2
    pusher.url = f"{base}/v1/metrics"
    pusher.headers["Authorization"] = "Bearer rotated-away"
    assert pusher.push_once() == pytest.approx(1.0)
    assert pusher.stats.blocked_status == 401
    pusher.url = f"{base}/v2/metrics"
    pusher.headers["Authorization"] = f"Bearer {key}"
    assert pusher.push_once() == pytest.approx(2.0)
    assert pusher.stats.blocked_status == 404
    assert pusher.spool.depth == 6 and pusher.stats.rejected == 0
    assert not (tmp_path / "rejected.jsonl").exists()
    pusher.url = f"{base}/v1/metrics"
    while pusher.push_once() is not None:
        pass
    assert pusher.stats.pushed == 6 and pusher.stats.blocked_status == 0
    # Published only once the key and the URL were right: three batches of two.
    assert len(publisher.published) == 3  # type: ignore[attr-defined]
