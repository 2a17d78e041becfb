"""systemd's notify protocol (READY=1, WATCHDOG=1) over $NOTIFY_SOCKET, standard library only.
Without systemd (no NOTIFY_SOCKET) every call is a no-op."""

from __future__ import annotations

import os
import socket

__all__ = ["notify", "watchdog_interval"]


def notify(message: str, environ: dict[str, str] | None = None) -> bool:
    address = (environ if environ is not None else os.environ).get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):  # an abstract socket
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.connect(address)
            sock.sendall(message.encode())
    except OSError:
        return False
    return True


def watchdog_interval(environ: dict[str, str] | None = None) -> float | None:
    """Seconds systemd allows between WATCHDOG=1 pings, if the watchdog is on for us."""
    env = environ if environ is not None else os.environ
    usec = env.get("WATCHDOG_USEC")
    if not usec or env.get("WATCHDOG_PID", str(os.getpid())) != str(os.getpid()):
        return None
    try:
        return int(usec) / 1e6
    except ValueError:
        return None
