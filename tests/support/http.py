"""HTTP helpers the engine tiers share: the dashboard's JSON API with a bearer token, and one
value from a Prometheus text page."""

from __future__ import annotations

import json
import re
import urllib.request
from typing import Any

__all__ = ["http_json", "metric_value"]


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
