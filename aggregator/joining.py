"""The cap on records per micro-batch while topics join the subscription.

Spark reads a topic it has no checkpointed offsets for from its earliest retained offset, and
``plan.admit`` drops the records that arrived before the topic's queries became active. Under
a configured cap (``max_offsets_per_trigger``) of 5,000 records a day of one agent's metric
(86,400 records) took 17 batches, holding back every other topic's reads meanwhile. So for the
run of the streams that starts with joining topics, the cap is raised by exactly the number of
those older records, and it goes back to the configured cap once a batch has read them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from apm.model import topic_for

__all__ = ["JoinCap", "OlderRecords"]

log = logging.getLogger(__name__)


class OlderRecords(Protocol):
    def records_before(self, since: Mapping[str, float]) -> dict[str, int]: ...


class JoinCap:
    def __init__(
        self, base: int, patience_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.base, self.patience_s, self.clock = base, patience_s, clock
        self.raised = False
        self._joining: set[str] = set()
        self._until = 0.0

    def cap(
        self,
        admitted: Iterable[tuple[str, float]],
        known_topics: set[str],
        offsets: OlderRecords | None,
    ) -> int:
        """The cap for a run reading ``admitted`` (metric, active since) pairs, when the
        checkpoint already has offsets for ``known_topics``."""
        self.raised, self._joining = False, set()
        if not self.base or offsets is None:
            return self.base
        since: dict[str, float] = {}
        for metric, moment in admitted:
            if (topic := topic_for(metric)) not in known_topics:
                since[topic] = min(moment, since.get(topic, moment))
        try:
            older = {t: n for t, n in offsets.records_before(since).items() if n} if since else {}
        except Exception as exc:  # the broker briefly away: the plain cap only costs time
            log.warning("cannot count the joining topics' older records: %s", exc)
            return self.base
        if older:
            total = sum(older.values())
            log.info(
                "joining %s: %d records that arrived before their queries became active "
                "are read and skipped under a cap of %d records (normally %d)",
                ", ".join(sorted(older)),
                total,
                self.base + total,
                self.base,
            )
            self.raised, self._joining = True, set(older)
            # A joining topic deleted meanwhile never shows up in the offsets read: give up
            # on it after a while rather than keep the raised cap.
            self._until = self.clock() + self.patience_s
        return self.base + sum(older.values())

    def done(self, read_topics: set[str]) -> bool:
        """True once a raised cap has served its purpose: every joining topic is in the
        offsets a finished batch read up to (or the patience ran out)."""
        return self.raised and (self._joining <= read_topics or self.clock() > self._until)
