"""Each server's host tags, published to the compacted topic ``apm.tags.TAGS_TOPIC`` only
when they change (docs/ingest.md, Tags).

The ingest keeps the tags it last published for each server, bounded to ``max_bytes``
(least recently seen out first). A server forgotten, or any server after a restart,
has its tags published again: the topic is compacted by server, so a repeat costs one record
and changes nothing. A change is remembered (claimed) before it is sent, so that concurrent
requests of one server send it once; a publish that fails is taken back, so the next
snapshot of that server tries again; it never fails the request (its samples are
acknowledged already). Two concurrent requests of one server with different tags may reach
Kafka in either order; the server's next change sets it right.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence

from apm.tags import encode_tags_record
from ingest.validate import Tagged

__all__ = ["SendTags", "ServerTags"]

log = logging.getLogger(__name__)

# Sends keyed records to the tags topic and returns once Kafka acknowledged them; raises
# otherwise (ingest.publisher.Publisher.publish_tags).
SendTags = Callable[[Sequence[tuple[bytes, bytes]]], None]


def _size(server: str, tags: Mapping[str, str]) -> int:
    """What one entry costs, roughly: its characters and a fixed overhead per string."""
    return len(server) + 64 + sum(len(k) + len(v) + 100 for k, v in tags.items())


class ServerTags:
    """The last published tags of servers, at most ``max_bytes`` of them (``_size``; the
    least recently seen out first: an LRU). Thread-safe."""

    def __init__(self, max_bytes: int, counted: Callable[[str, int], None] | None = None) -> None:
        """``counted(outcome, records)`` hears each publish: "published" or "failed"."""
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be >= 1, got {max_bytes}")
        self.max_bytes = max_bytes
        self.bytes = 0
        self.counted = counted
        self._last: OrderedDict[str, dict[str, str]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._last)

    def _drop(self, server: str) -> None:  # with the lock
        self.bytes -= _size(server, self._last.pop(server))

    def claim(self, tagged: Mapping[str, Tagged]) -> dict[str, Tagged]:
        """Those of ``tagged`` whose tags differ from the last published (or are unknown),
        remembered at once: concurrent requests of the same server (the loadgen's, an
        agent's retry) then send a change once, not once each."""
        out = {}
        with self._lock:
            for server, (ts, tags) in tagged.items():
                if self._last.get(server) != tags:
                    out[server] = (ts, tags)
                    if server in self._last:
                        self._drop(server)
                    self._last[server] = dict(tags)
                    self.bytes += _size(server, tags)
                self._last.move_to_end(server)
            while self.bytes > self.max_bytes and self._last:
                self._drop(next(iter(self._last)))
        return out

    def forget(self, failed: Mapping[str, Tagged]) -> None:
        """Takes back a claim whose publish failed, unless a later claim replaced it."""
        with self._lock:
            for server, (_, tags) in failed.items():
                if self._last.get(server) == tags:
                    self._drop(server)

    def publish(self, tagged: Mapping[str, Tagged], send: SendTags) -> int:
        """Sends the changed tags of ``tagged``; returns how many records went out (0 when
        nothing changed or the send failed, which is logged and counted)."""
        if not tagged:
            return 0
        changes = self.claim(tagged)
        if not changes:
            return 0
        records = [encode_tags_record(s, tags, ts) for s, (ts, tags) in changes.items()]
        try:
            send(records)
        except Exception as exc:  # Kafka down or slow: the next snapshot tries again
            self.forget(changes)
            log.warning("publishing the tags of %d server(s) failed: %s", len(records), exc)
            if self.counted is not None:
                self.counted("failed", len(records))
            return 0
        if self.counted is not None:
            self.counted("published", len(records))
        return len(records)
