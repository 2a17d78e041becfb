"""The pusher with the real HTTP client against a real local server, so that the edges the
fakes stand in for are the real ones: http.client follows no redirect, header names arrive in
any case, a Retry-After of any text reaches the parser as sent."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agent.http import StdlibHttpClient

pytestmark = pytest.mark.unit


@pytest.fixture
def server() -> Iterator[tuple[str, list[tuple[int, dict[str, str], bytes]], list[bytes]]]:
    script: list[tuple[int, dict[str, str], bytes]] = []
    bodies: list[bytes] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
            status, headers, body = script.pop(0) if len(script) > 1 else script[0]
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1/metrics", script, bodies
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_redirect_a_401_and_an_infinite_retry_after_over_the_wire_keep_everything(
    server, make_pusher, tmp_path
) -> None:
    url, script, bodies = server
    script += [
        (308, {"Location": "https://ingest.example/v1/metrics"}, b""),
        (401, {"WWW-Authenticate": "Bearer"}, b'{"error":"unauthorized","detail":"bad key"}'),
        (503, {"Retry-After": "inf"}, b'{"error":"unavailable"}'),
        (503, {"RETRY-AFTER": "Fri, 31 Dec 9999 23:59:59 GMT"}, b""),
        (202, {}, json.dumps({"accepted": 2, "rejected": [{"index": 1, "error": "x"}]}).encode()),
    ]
    pusher = make_pusher(StdlibHttpClient(), snapshots=3)
    pusher.url = url
    delays = [pusher.push_once() for _ in range(5)]
    assert len(bodies) == 5  # the redirect was not followed anywhere
    assert delays[0] == pytest.approx(1.0) and delays[1] == pytest.approx(2.0)
    assert pusher.stats.blocked == 2 and pusher.stats.rejected == 1
    assert 120.0 <= delays[2] <= 144.0 and 120.0 <= delays[3] <= 144.0  # capped, jittered
    assert pusher.spool.depth == 0 and pusher.stats.pushed == 2
    [line] = (tmp_path / "rejected.jsonl").read_text().splitlines()
    assert json.loads(line)["snapshot"]["ts"] == 1001.0
