"""The two questions every launcher and test asks of a local process: does its HTTP endpoint
answer 200, and which TCP port is free to give it."""

from __future__ import annotations

import socket
import ssl
import urllib.error
import urllib.request

__all__ = ["free_port", "http_ok"]


def http_ok(url: str, timeout_s: float = 2.0, context: ssl.SSLContext | None = None) -> bool:
    """True when ``url`` answers 200; a refusal, a timeout, a TLS failure or any other status
    is False. ``context``: the TLS client context of an https:// URL (a private CA's)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s, context=context) as answer:
            return bool(answer.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


# Ports this process has handed out: the kernel may give the same free port to two calls in a
# row (it was free both times), and a launcher asks for several before it binds any (a
# private Kafka's broker and controller ports: equal ports fail its storage format).
_handed: set[tuple[str, int]] = set()


def free_port(host: str = "127.0.0.1") -> int:
    """A port the kernel had free on ``host`` a moment ago, never one this process was given
    before. Another process may take it before the caller binds it; on loopback that race
    has not shown up in practice."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
        if (host, port) not in _handed:
            _handed.add((host, port))
            return port
