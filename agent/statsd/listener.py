"""The local UDP listener: one thread reading datagrams into the aggregator."""

from __future__ import annotations

import logging
import socket
import threading

from agent.statsd.aggregate import StatsdAggregator

__all__ = ["StatsdListener"]

log = logging.getLogger(__name__)
_RCVBUF = 8 * 1024 * 1024  # absorbs bursts while the thread is descheduled


class StatsdListener:
    def __init__(
        self, aggregator: StatsdAggregator, host: str = "127.0.0.1", port: int = 8125
    ) -> None:
        self.aggregator = aggregator
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_DGRAM)
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _RCVBUF)
            self.sock.bind((host, port))
        except OSError as exc:
            self.sock.close()
            raise OSError(
                exc.errno, f"cannot listen for StatsD on {host}:{port}: {exc.strerror}"
            ) from None
        self.sock.settimeout(0.5)
        self.address: tuple[str, int] = self.sock.getsockname()[:2]
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def serve(self, stop: threading.Event) -> None:
        receive = self.sock.recv
        ingest = self.aggregator.ingest
        while not stop.is_set():
            try:
                packet = receive(65535)
            except TimeoutError:
                continue
            except OSError as exc:
                if stop.is_set():
                    return
                log.warning("statsd receive failed: %s", exc)
                continue
            try:
                ingest(packet)
            except Exception:  # a packet must never take the listener down
                log.exception("statsd packet could not be handled")

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self.serve, args=(self._stop,), name="statsd", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        self.sock.close()
