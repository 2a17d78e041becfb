"""Which alert rows a cycle writes (alerting/evaluator.py writes them after the history and the
outbox). Writing every row every cycle was most of a 10,000-rule cycle on Cassandra (one
statement per row, ~0.2 ms of the driver's CPU each; docs/alerting.md, "Cost").

A row is written in the cycle that changes it in *substance*: a new alert, another state,
severity, start of the state or of the firing, what was last notified, or a history row written
for it (a transition, a refold after late data). A row that only moved on by a window (its open
windows' values, its checkpoint, the newest value and reason) is written at least every
``state_refresh_s`` (once per period of that length, at a phase of its own, so that the writes
spread over the cycles; up to two periods just after a restart).

Why that keeps every promise: the row in Cassandra is always one this evaluator wrote whole, and
its substance is the newest one. After a restart (or a failover) the evaluator refolds from it
over the stored results, deterministically, so the windows it passes again give the same
states, rewrite the same history keys and decide the same notices (the same ids, already sent or
in the outbox): at most ``state_refresh_s`` more windows are read and folded once.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from typing import Any

__all__ = ["SUBSTANCE", "StateWrites", "crc_phase"]

# The fields of an alert's newest state that a reader of the row must never see stale.
SUBSTANCE = ("state", "severity", "since", "fired_at")

Key = tuple[str, str]


def crc_phase(key: Key) -> float:
    """A row's phase within the refresh period, in [0, 1): the same in every process."""
    return zlib.crc32(f"{key[0]}\0{key[1]}".encode()) / 2**32


def _substance(row: dict[str, Any]) -> tuple[Any, ...]:
    latest = row.get("latest") or {}
    return (*(latest.get(f) for f in SUBSTANCE), row.get("notified"))


class StateWrites:
    def __init__(self, refresh_s: float, phase: Callable[[Key], float] = crc_phase) -> None:
        self.refresh_s, self.phase = refresh_s, phase
        # The refresh period (of the row's own phase) in which each row was last written here.
        self._written: dict[Key, int] = {}

    def forget(self) -> None:
        """The rows in Cassandra are unknown again (a failed cycle, a lease taken over)."""
        self._written.clear()

    def drop(self, rule_id: str) -> None:
        self._written = {k: t for k, t in self._written.items() if k[0] != rule_id}

    def select(
        self,
        before: dict[Key, dict[str, Any]],
        rows: list[tuple[str, str, dict[str, Any]]],
        touched: set[Key],
        now: float,
    ) -> list[tuple[str, str, dict[str, Any]]]:
        """The rows of ``rows`` to write this cycle, given the rows as the previous cycle left
        them (``before``) and the alerts that got history rows (``touched``)."""
        out = []
        for rule_id, instance, row in rows:
            key = (rule_id, instance)
            prior = before.get(key)
            period = self._period(key, now)
            # A row read from Cassandra counts as written in this period: rewritten at its next
            # boundary (just after a restart a row may so be up to two periods old).
            last = self._written.setdefault(key, period)
            if (
                self.refresh_s <= 0
                or prior is None
                or key in touched
                or _substance(prior) != _substance(row)
                or period != last
            ):
                out.append((rule_id, instance, row))
                self._written[key] = period
        return out

    def _period(self, key: Key, now: float) -> int:
        """The refresh period ``now`` falls in, shifted by a phase of the row's own, so that
        rows written together (10,000 new rules, or read at start) come due apart."""
        if self.refresh_s <= 0:
            return 0
        return math.floor(now / self.refresh_s + self.phase(key))
