"""SMTP peers for tests: aiosmtpd's real SMTP server on a free loopback port, collecting each
message; and a server that accepts connections and never answers (a hanging receiver)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from email import message_from_bytes
from email.message import Message
from typing import Any

from launch.probe import free_port

__all__ = ["hanging_server", "smtp_server"]


@contextmanager
def smtp_server() -> Iterator[tuple[int, list[Message]]]:
    from aiosmtpd.controller import Controller

    received: list[Message] = []

    class Handler:
        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
            received.append(message_from_bytes(envelope.original_content or envelope.content))
            return "250 OK"

    port = free_port()
    controller = Controller(Handler(), hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield port, received
    finally:
        controller.stop()


@contextmanager
def hanging_server() -> Iterator[int]:
    """Accepts connections and says nothing, as a stuck SMTP server would."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(sock.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield sock.getsockname()[1]
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in held:
            conn.close()
        sock.close()
