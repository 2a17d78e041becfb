"""The fleet's agent versions for the health page, read from the ``agent.version`` topic.

Every agent sends ``agent.version`` with each one-second snapshot, so the last
``lookback_s`` seconds of that one topic (offsets found by time) hold every agent that is
reporting; nothing else in the platform needs to keep an inventory. The read is bounded by
``max_records`` records and ``timeout_s``, and cached for ``cache_s`` so page refreshes do not
re-read it. An agent that stopped sending is not in the list: the health page's "Silent" list
names it (from the servers' last-seen times), and its version is the one it last reported
there.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from apm.agentversion import METRIC, version_text
from apm.kafka import new_consumer, topic_partitions
from apm.model import topic_for
from apm.wire import decode

__all__ = ["AgentSeen", "KafkaAgentVersions"]


@dataclass(frozen=True)
class AgentSeen:
    version: str
    ts: float  # the newest sample's event time, epoch seconds


class KafkaAgentVersions:
    def __init__(
        self,
        bootstrap: str,
        lookback_s: float = 10.0,
        max_records: int = 20_000,
        timeout_s: float = 3.0,
        cache_s: float = 10.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._bootstrap = bootstrap
        self.lookback_s, self.max_records, self.timeout_s = lookback_s, max_records, timeout_s
        self._cache_s = cache_s
        self._clock = clock
        self._lock = threading.Lock()
        self._cached: tuple[float, dict[str, AgentSeen]] | None = None
        self.records_read = 0  # by the last read (the bound's check)

    def versions(self) -> dict[str, AgentSeen]:
        """server -> its newest reported version in the last ``lookback_s``; raises OSError
        when Kafka cannot be read."""
        with self._lock:
            now = self._clock()
            if self._cached and now - self._cached[0] < self._cache_s:
                return self._cached[1]
            try:
                seen = self._read(now)
            except Exception as exc:  # kafka-python raises its own error tree; all mean down
                raise OSError(f"Kafka at {self._bootstrap} unreachable: {exc}") from exc
            self._cached = (now, seen)
            return seen

    def _read(self, now: float) -> dict[str, AgentSeen]:
        consumer = new_consumer(
            self._bootstrap,
            client_id="apm-dashboard-agents",
            request_timeout_ms=int(self.timeout_s * 1000) + 1000,
        )
        try:
            deadline = time.monotonic() + self.timeout_s
            seen, self.records_read = _newest(
                consumer, now - self.lookback_s, self.max_records, deadline
            )
            return seen
        finally:
            consumer.close()


def _newest(
    consumer: Any, since: float, max_records: int, deadline: float
) -> tuple[dict[str, AgentSeen], int]:
    """The newest (ts, version) per server in the records from ``since`` (epoch s) to the end
    offsets as they were at the start, at most ``max_records`` records or until ``deadline``
    (time.monotonic()), and the number of records read."""
    parts = topic_partitions(consumer, [topic_for(METRIC)])
    if not parts:
        return {}, 0
    consumer.assign(parts)
    ends = consumer.end_offsets(parts)
    starts = consumer.offsets_for_times({tp: int(since * 1000) for tp in parts})
    todo = {}
    for tp in parts:
        found = starts.get(tp)
        offset = found.offset if found is not None else ends[tp]
        consumer.seek(tp, offset)
        if offset < ends[tp]:
            todo[tp] = ends[tp]
    newest: dict[str, tuple[float, float]] = {}
    read = 0
    while todo and read < max_records and time.monotonic() < deadline:
        batch = consumer.poll(timeout_ms=200, max_records=min(2000, max_records - read))
        for tp, records in batch.items():
            for record in records:
                read += 1
                try:
                    samples = decode(record.value)
                except (ValueError, UnicodeDecodeError):  # not the ingest's: not an agent's
                    continue
                for server, ts, value in samples:
                    if server not in newest or ts >= newest[server][0]:
                        newest[server] = (ts, value)
            if tp in todo and consumer.position(tp) >= todo[tp]:
                del todo[tp]
    seen = {server: AgentSeen(version_text(v), ts) for server, (ts, v) in newest.items()}
    return seen, read
