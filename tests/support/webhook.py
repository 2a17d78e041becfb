"""A webhook receiver for tests: a real HTTP server on a free loopback port that records each
POST (headers and parsed JSON body) and answers the status the test sets (with ``location``
as its Location header, for a redirect); GETs are only counted."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["WebhookReceiver", "webhook_receiver"]


@dataclass
class WebhookReceiver:
    url: str = ""
    status: int = 200
    location: str = ""
    gets: int = 0
    posts: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def alerts(self) -> list[dict[str, Any]]:
        """Every alert of every accepted POST, in arrival order."""
        with self.lock:
            return [a for _, body in self.posts for a in json.loads(body)["alerts"]]


@contextmanager
def webhook_receiver() -> Iterator[WebhookReceiver]:
    receiver = WebhookReceiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            status = receiver.status
            if status == 200:
                with receiver.lock:
                    receiver.posts.append((dict(self.headers), body))
            self.send_response(status)
            if receiver.location:
                self.send_header("Location", receiver.location)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            with receiver.lock:
                receiver.gets += 1
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_port}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
