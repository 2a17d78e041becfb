"""The two questions every launcher and test asks of a local process: does its HTTP endpoint
answer 200, and which TCP port is free to give it."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request

__all__ = ["free_port", "http_ok"]


def http_ok(url: str, timeout_s: float = 2.0) -> bool:
    """True when ``url`` answers 200; a refusal, a timeout or any other status is False."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as answer:
            return bool(answer.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


def free_port(host: str = "127.0.0.1") -> int:
    """A port the kernel had free on ``host`` a moment ago. Another process may take it before
    the caller binds it; on loopback that race has not shown up in practice."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
