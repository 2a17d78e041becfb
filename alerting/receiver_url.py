"""Which URLs a receiver may be configured with (the webhook's, the Alertmanager's): checked
when the evaluator's settings load, so a bad one stops it from starting."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

__all__ = ["webhook_url_error"]


def webhook_url_error(url: object, own_ports: frozenset[int] = frozenset()) -> str | None:
    """Why ``url`` is no acceptable receiver URL: only http(s), and never this platform itself
    (a loopback address on one of ``own_ports``), which would make the alerts page itself."""
    if not isinstance(url, str) or len(url) > 2048:
        return "must be a URL of at most 2048 characters"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"must be an http:// or https:// URL, got scheme {parts.scheme or 'none'!r}"
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return "has an invalid port"
    host = parts.hostname
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if loopback and port in own_ports:
        return f"points at this platform itself (port {port})"
    return None
