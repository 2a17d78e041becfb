"""The driver's map of every server's host tags, with the time each version was received, and
the per-window rule that decides which version a sample is grouped by (docs/aggregator.md,
"Host tags").

The rule: a version applies from its ``effective_from``, the first window start at or after
the moment its record was received (the tags record's Kafka timestamp), and a window uses the
newest version whose ``effective_from`` is at or before its start, so one window's row never
mixes two versions of a server's tags, and a change applies at the latest from the next window
after it was received. A window before every version of a server has no tags.

Bounds: at most ``max_servers`` servers (a record of a server beyond is dropped and counted in
``dropped``: that server stays untagged) and ``max_versions`` versions a server (the oldest go
first). A version is kept until every window it covers has closed: until its successor was
received more than ``horizon_s`` ago (the watermark's delay, the longest window and a margin).
A version costs its tags (at most 32 of 64 + 128 characters) and ~100 bytes.

The executors get the map as :meth:`TagMap.encode` builds it (``io.apm.aggregator.TagTable``
decodes it and applies the same rule; tests/aggregator/test_tag_map.py holds both to it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["TagMap", "Version", "effective_from"]

# Neither a server name nor a tag holds these (apm.model.SERVER_NAME_RE, apm.tags: printable).
_FIELD, _PAIR = "\t", "\x1f"


@dataclass(frozen=True)
class Version:
    tags: Mapping[str, str]
    received_ms: int  # the tags record's Kafka timestamp; 0: known since the job started


def effective_from(received_ms: int, width: int) -> int:
    """The first start (s) of a ``width``-s window at or after ``received_ms``."""
    w = width * 1000
    return -(-received_ms // w) * width


class TagMap:
    """server -> its versions of tags, oldest first; ``version`` changes with every change."""

    def __init__(self, max_servers: int = 100_000, max_versions: int = 4) -> None:
        if max_servers < 1 or max_versions < 1:
            raise ValueError("a tag map keeps at least one server and one version")
        self.max_servers = max_servers
        self.max_versions = max_versions
        self.version = 0
        self.dropped = 0  # records of servers past max_servers, since the start
        self._servers: dict[str, list[Version]] = {}
        # The servers with more than one version: all that prune has to look at, so that a
        # batch's prune costs the recent changes, not the fleet.
        self._changed: set[str] = set()

    def __len__(self) -> int:
        return len(self._servers)

    def put(self, server: str, tags: Mapping[str, str] | None, received_ms: int) -> None:
        """A record of the tags topic: ``server``'s tags (None: a tombstone, no tags) as of
        ``received_ms``. A record equal to the server's newest version changes nothing."""
        versions = self._servers.get(server)
        if versions is None:
            if len(self._servers) >= self.max_servers:
                self.dropped += 1
                return
            versions = self._servers[server] = []
        now = dict(tags or {})
        if versions and dict(versions[-1].tags) == now:
            return
        versions.append(Version(now, max(0, int(received_ms))))
        del versions[: -self.max_versions]
        if len(versions) > 1:
            self._changed.add(server)
        self.version += 1

    def known_since_start(self) -> None:
        """Marks each server's oldest version as known since the job started (received 0):
        the topic was read from its start, and compaction may have removed what the server had
        before, so that version also applies to the windows before it was received."""
        for versions in self._servers.values():
            if versions and versions[0].received_ms:
                versions[0] = Version(versions[0].tags, 0)
                self.version += 1

    def prune(self, now_ms: int, horizon_s: float) -> None:
        """Drops each version whose successor was received more than ``horizon_s`` ago: every
        window it covers has closed."""
        cut = now_ms - int(horizon_s * 1000)
        for server in list(self._changed):
            versions = self._servers[server]
            keep = 0
            while keep + 1 < len(versions) and versions[keep + 1].received_ms < cut:
                keep += 1
            if keep:
                del versions[:keep]
                self.version += 1
            if len(versions) < 2:
                self._changed.discard(server)

    def versions(self, server: str) -> list[Version]:
        return list(self._servers.get(server, ()))

    def at(self, server: str, window_start: int, width: int) -> Mapping[str, str]:
        """The tags ``server``'s samples of that window are grouped by (the module's rule)."""
        for v in reversed(self._servers.get(server, ())):
            if effective_from(v.received_ms, width) <= window_start:
                return v.tags
        return {}

    def encode(self) -> bytes:
        """The map as ``io.apm.aggregator.TagTable.decode`` reads it: a line a version."""
        lines = []
        for server, versions in self._servers.items():
            for v in versions:
                pairs = _PAIR.join(f"{k}{_PAIR}{value}" for k, value in sorted(v.tags.items()))
                lines.append(f"{server}{_FIELD}{v.received_ms}{_FIELD}{pairs}\n")
        return "".join(lines).encode()
