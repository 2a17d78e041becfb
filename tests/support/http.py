"""HTTP helpers the engine tiers share: the dashboard's JSON API with a bearer token, one
value from a Prometheus text page, and an ASGI app served by uvicorn on a thread."""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

__all__ = ["http_json", "metric_value", "uvicorn_thread"]


@contextlib.contextmanager
def uvicorn_thread(app: Any, **config: Any) -> Iterator[int]:
    """Serves ``app`` with uvicorn on a thread, on a free loopback port (yielded), until the
    block ends; ``config`` goes to uvicorn.Config (lifespan, ssl_context_factory ...)."""
    import uvicorn

    from launch.probe import free_port

    port = free_port()
    config.setdefault("log_level", "warning")
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, **config))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not server.started and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.started, "uvicorn did not start (see the log above)"
        yield port
    finally:
        server.should_exit = True
        thread.join(30)


def http_json(url: str, token: str = "", body: Any = None, timeout: float = 10.0) -> Any:
    """GET ``url`` (or POST ``body`` as JSON) with ``token`` as the bearer; the parsed answer."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        url,
        data=data,
        method="POST" if data is not None else "GET",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=timeout) as reply:
        return json.loads(reply.read())


def metric_value(url: str, name: str, timeout: float = 10.0) -> float | None:
    """The value of ``name`` on the Prometheus text page at ``url``, summed over its label
    sets; None when the page does not answer or has no such sample."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as reply:
            text = reply.read().decode()
    except OSError:
        return None
    values = [float(v) for v in re.findall(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.M)]
    return sum(values) if values else None
