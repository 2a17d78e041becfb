"""Each server's host tags, published to the compacted topic ``apm.tags.TAGS_TOPIC`` only
when they change (docs/ingest.md, Tags).

The ingest keeps the tags it last published for each server, bounded to ``max_servers``
servers (least recently seen out first). A server forgotten, or any server after a restart,
has its tags published again: the topic is compacted by server, so a repeat costs one record
and changes nothing. A publish that fails is not remembered, so the next snapshot of that
server tries again; it never fails the request (its samples are acknowledged already).
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


class ServerTags:
    """The last published tags of at most ``max_servers`` servers (an LRU). Thread-safe."""

    def __init__(self, max_servers: int, counted: Callable[[str, int], None] | None = None) -> None:
        """``counted(outcome, records)`` hears each publish: "published" or "failed"."""
        if max_servers < 1:
            raise ValueError(f"max_servers must be >= 1, got {max_servers}")
        self.max_servers = max_servers
        self.counted = counted
        self._last: OrderedDict[str, dict[str, str]] = OrderedDict()
        self._lock = threading.Lock()
        self.published = 0  # records sent, for /metrics
        self.failed = 0  # publishes that failed (retried with the server's next snapshot)

    def __len__(self) -> int:
        return len(self._last)

    def changed(self, tagged: Mapping[str, Tagged]) -> dict[str, Tagged]:
        """Those of ``tagged`` whose tags differ from the last published (or are unknown)."""
        out = {}
        with self._lock:
            for server, (ts, tags) in tagged.items():
                last = self._last.get(server)
                if last is None or last != tags:
                    out[server] = (ts, tags)
                else:
                    self._last.move_to_end(server)
        return out

    def remember(self, published: Mapping[str, Tagged]) -> None:
        with self._lock:
            for server, (_, tags) in published.items():
                self._last[server] = dict(tags)
                self._last.move_to_end(server)
            while len(self._last) > self.max_servers:
                self._last.popitem(last=False)
            self.published += len(published)

    def publish(self, tagged: Mapping[str, Tagged], send: SendTags) -> int:
        """Sends the changed tags of ``tagged``; returns how many records went out (0 when
        nothing changed or the send failed, which is logged and counted)."""
        if not tagged:
            return 0
        changes = self.changed(tagged)
        if not changes:
            return 0
        records = [encode_tags_record(s, tags, ts) for s, (ts, tags) in changes.items()]
        try:
            send(records)
        except Exception as exc:  # Kafka down or slow: the next snapshot tries again
            with self._lock:
                self.failed += 1
            log.warning("publishing the tags of %d server(s) failed: %s", len(records), exc)
            if self.counted is not None:
                self.counted("failed", len(records))
            return 0
        self.remember(changes)
        if self.counted is not None:
            self.counted("published", len(records))
        return len(records)
