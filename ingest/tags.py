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

Tags come from the agent (the JSON contract) or from a protocol's mapping (OTLP resource
attributes, remote_write labels: ingest.interop.tags). A server has one set, so when both speak
of one server (an SDK on a host whose agent pushes too) the agent's wins: a protocol's tags are
not published for a server whose last published tags were the agent's, which would otherwise
flip between the two at every export. Skipped ones are counted ("agent_kept").
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence

from apm.tags import encode_tags_record
from ingest.validate import Tagged

__all__ = ["AGENT", "SendTags", "ServerTags"]

log = logging.getLogger(__name__)

# Sends keyed records to the tags topic and returns once Kafka acknowledged them; raises
# otherwise (ingest.publisher.Publisher.publish_tags).
SendTags = Callable[[Sequence[tuple[bytes, bytes]]], None]
AGENT = "agent"  # the JSON contract's snapshots: what an agent (or the loadgen) says


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
        self._from: dict[str, str] = {}  # server -> who said its last published tags
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._last)

    def _drop(self, server: str) -> None:  # with the lock
        self.bytes -= _size(server, self._last.pop(server))
        self._from.pop(server, None)

    def claim(
        self, tagged: Mapping[str, Tagged], source: str = AGENT
    ) -> tuple[dict[str, Tagged], int]:
        """Those of ``tagged`` whose tags differ from the last published (or are unknown),
        remembered at once: concurrent requests of the same server (the loadgen's, an
        agent's retry) then send a change once, not once each. A protocol's tags of a server
        whose last were the agent's are left out: returns (the changes, how many left out)."""
        out = {}
        kept = 0
        with self._lock:
            for server, (ts, tags) in tagged.items():
                if source != AGENT and self._from.get(server) == AGENT:
                    kept += 1
                    self._last.move_to_end(server)
                    continue
                if self._last.get(server) != tags:
                    out[server] = (ts, tags)
                    if server in self._last:
                        self._drop(server)
                    self._last[server] = dict(tags)
                    self._from[server] = source
                    self.bytes += _size(server, tags)
                self._last.move_to_end(server)
            while self.bytes > self.max_bytes and self._last:
                self._drop(next(iter(self._last)))
        return out, kept

    def forget(self, failed: Mapping[str, Tagged]) -> None:
        """Takes back a claim whose publish failed, unless a later claim replaced it."""
        with self._lock:
            for server, (_, tags) in failed.items():
                if self._last.get(server) == tags:
                    self._drop(server)

    def publish(self, tagged: Mapping[str, Tagged], send: SendTags, source: str = AGENT) -> int:
        """Sends the changed tags of ``tagged`` (said by ``source``: AGENT or a protocol);
        returns how many records went out (0 when nothing changed or the send failed, which
        is logged and counted)."""
        if not tagged:
            return 0
        changes, kept = self.claim(tagged, source)
        if kept and self.counted is not None:
            self.counted("agent_kept", kept)
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
