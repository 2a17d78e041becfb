"""Coalescing concurrent requests' samples of a metric into shared Kafka records.

kafka-python spends ~0.5 ms of CPU per record whatever its size, so records per second, not
samples, bound the ingest. Requests that arrive within ``linger`` of each other join one
*window*; when it closes, each topic's pieces (a request's records for that topic, already
``apm.wire`` lines) are concatenated with ``\\n`` into records of at most ``max_record_bytes``,
so one record carries many requests' samples of a metric. A piece is never split, so each
record is still a valid ``apm.wire`` value and every request knows exactly which records hold
its samples: it returns only when all of those are acknowledged, and raises if any of them
failed (so every request sharing a failed record is answered 503 and retries: duplicates at
worst, never a loss).

The first request of a window is its leader: it waits out the linger (or less, if the window
fills up or the service shuts down) and hands the window's records to the producer; the
others only wait for their own records' acknowledgements.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

__all__ = ["Coalescer", "RecordFuture", "SendRecord"]


class RecordFuture(Protocol):
    """What the producer returns for one record (kafka-python's FutureRecordMetadata)."""

    is_done: bool
    exception: BaseException | None

    def get(self, timeout: float | None = None) -> object: ...


# (topic, value, turn) -> the record's future. ``turn`` numbers the window, so that the
# sender can put all of a window's records on one partition index (fuller produce batches).
SendRecord = Callable[[str, bytes, int], RecordFuture]


class _Ticket:
    """One request's share of a window: the futures of every record holding its pieces."""

    __slots__ = ("futures",)

    def __init__(self) -> None:
        self.futures: list[RecordFuture] = []


class _Window:
    def __init__(self, turn: int) -> None:
        self.turn = turn
        self.pieces: dict[str, list[tuple[bytes, _Ticket]]] = {}
        self.bytes = 0
        self.requests = 0
        self.closed = threading.Event()  # no more joiners; someone is sending it
        self.sent = threading.Event()  # every record handed to the producer (or failed)
        self.error: BaseException | None = None


class Coalescer:
    """Gathers records from concurrent ``publish`` calls over ``linger_s`` into shared ones."""

    def __init__(
        self, send: SendRecord, linger_s: float, max_record_bytes: int, max_window_bytes: int
    ) -> None:
        self._send = send
        self.linger_s = linger_s
        self.max_record_bytes = max_record_bytes
        self.max_window_bytes = max_window_bytes
        self._lock = threading.Lock()
        self._open: _Window | None = None
        self._turn = 0
        self.pending_bytes = 0  # joined a window, not yet handed to the producer

    def publish(self, records: Mapping[str, Sequence[bytes]], timeout_s: float) -> None:
        """Returns once every record holding any of ``records``' samples is acknowledged;
        raises the send's or the record's error otherwise (TimeoutError past ``timeout_s``)."""
        deadline = time.monotonic() + timeout_s
        ticket = _Ticket()
        size = sum(len(v) for values in records.values() for v in values)
        with self._lock:
            window = self._open
            leader = window is None
            if window is None:
                self._turn += 1
                window = self._open = _Window(self._turn)
            for topic, values in records.items():
                pieces = window.pieces.setdefault(topic, [])
                pieces.extend((value, ticket) for value in values)
            window.bytes += size
            window.requests += 1
            self.pending_bytes += size
            full = window.bytes >= self.max_window_bytes
        if full:
            self._flush(window)
        elif leader:
            window.closed.wait(self.linger_s)  # woken early when filled or shut down
            self._flush(window)
        if not window.sent.wait(max(0.0, deadline - time.monotonic())):
            raise TimeoutError("the records were not handed to the producer in time")
        if window.error is not None:
            raise window.error
        for future in ticket.futures:
            _await(future, deadline)

    def lingering(self) -> int:
        """Requests in the open window."""
        window = self._open
        return window.requests if window is not None else 0

    def flush(self) -> None:
        """Sends the open window now (shutdown); its callers still wait for their acks."""
        with self._lock:
            window = self._open
        if window is not None:
            self._flush(window)

    def _flush(self, window: _Window) -> None:
        with self._lock:
            if window.closed.is_set():
                return  # another thread is sending (or has sent) it
            window.closed.set()
            if self._open is window:
                self._open = None
            self.pending_bytes -= window.bytes
        try:
            for topic, pieces in window.pieces.items():
                self._send_topic(topic, pieces, window.turn)
        except BaseException as exc:  # every caller of the window must hear of it
            window.error = exc
        finally:
            window.sent.set()

    def _send_topic(self, topic: str, pieces: list[tuple[bytes, _Ticket]], turn: int) -> None:
        values: list[bytes] = []
        owners: list[_Ticket] = []
        size = -1  # n values take n - 1 separators
        for value, ticket in pieces:
            if values and size + 1 + len(value) > self.max_record_bytes:
                self._send_record(topic, values, owners, turn)
                values, owners, size = [], [], -1
            values.append(value)
            if not owners or owners[-1] is not ticket:
                owners.append(ticket)
            size += 1 + len(value)
        if values:
            self._send_record(topic, values, owners, turn)

    def _send_record(
        self, topic: str, values: list[bytes], owners: list[_Ticket], turn: int
    ) -> None:
        future = self._send(topic, values[0] if len(values) == 1 else b"\n".join(values), turn)
        for ticket in dict.fromkeys(owners):  # once per request, even if it has many pieces
            ticket.futures.append(future)


def _await(future: RecordFuture, deadline: float) -> None:
    """Returns only once ``future`` is acknowledged; raises its error, or TimeoutError once
    ``deadline`` has passed. What a 202 rests on is checked here (is_done and no exception),
    not inferred from ``get`` returning: kafka-python 3.0.12 raises at ``get(timeout=0)`` on
    a pending record, but some versions return None there, which would answer 202 before
    the broker's acknowledgement (issue 14, item 6)."""
    if not future.is_done:
        remaining = deadline - time.monotonic()
        if remaining > 0:
            try:
                future.get(timeout=remaining)
            except Exception:
                if not future.is_done:  # the wait ran out; the record's own error is below
                    raise
        if not future.is_done:
            raise TimeoutError("Kafka did not acknowledge a record within the publish timeout")
    if future.exception is not None:
        raise future.exception
