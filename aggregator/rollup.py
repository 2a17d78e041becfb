"""The rollup tiers' driver side (docs/storage.md, "Rollup tiers"): each batch's fleet windows
as partials (``to_partials``, written beside their results), and the rollup that merges the
partials of each closed 1 min and 1 h bucket into its tier row (``Rollup``, one pass a trigger
interval in the job's loop).

Why in the driver's loop: the batch that writes a partial marks its buckets dirty, so the
rollup never scans for changes; each aggregator rolls up the queries it evaluates (no lease);
a window refined by late data writes its partial again and so marks its buckets again. Work
per pass is bounded (``per_pass`` buckets, oldest first); what waits shows as the lag.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from aggregator.evaluate import function_values
from apm.functions import Summary, needs
from apm.loghist import LogHistogram
from apm.query import Query, WindowResult
from apm.tiers import TIERS, WindowPartial, tiers_of

if TYPE_CHECKING:
    from pyspark.sql import Row

__all__ = ["Rollup", "RollupStore", "roll", "to_partials"]

log = logging.getLogger(__name__)

Key = tuple[str, str, int]  # (query id, tier, bucket start)


class RollupStore(Protocol):
    """What the rollup needs of storage (storage.repository.Repository has it)."""

    def upsert_partials(self, partials: Iterable[WindowPartial]) -> int: ...

    def read_partials(self, query_id: str, start: float, end: float) -> list[WindowPartial]: ...

    def upsert_tier(self, tier: str, rows: Iterable[WindowResult]) -> int: ...


def to_partials(
    rows: Sequence[Row], queries: Mapping[str, Query], updated_at: float
) -> list[WindowPartial]:
    """Collected fleet ``evaluate`` rows (with their ``histogram``) -> the partials of the
    windows whose query has a tier. A window whose float sum overflowed (evaluate.py) has no
    partial: storage keeps finite numbers only, so its buckets' rows leave it out."""
    out = []
    for row in rows:
        query = queries.get(row["query_id"])
        if query is None or query.window_seconds != row["window_seconds"] or row["server"]:
            continue
        if not tiers_of(query.window_seconds) or not math.isfinite(row["sum"]):
            continue
        hist = row["histogram"]
        out.append(
            WindowPartial(
                row["query_id"],
                float(row["window_start"]),
                int(row["window_seconds"]),
                int(row["n"]),
                float(row["sum"]),
                float(row["min"]),
                float(row["max"]),
                None if hist is None else bytes(hist),
                updated_at,
            )
        )
    return out


def roll(
    query_id: str, query: Query, tier: str, start: float, partials: Iterable[WindowPartial]
) -> WindowResult | None:
    """The ``tier`` row of the bucket starting at ``start`` from its windows' partials (None
    without any): n, sum, min and max exact, percentiles from the merged histograms, clamped
    to [min, max]; its updated_at the newest partial's, so the same partials give the same
    row. A function that needs a histogram some window lacks (the query read no percentile
    when it was written) is left out."""
    mine = [p for p in partials if p.window_seconds == query.window_seconds and p.n > 0]
    if not mine:
        return None
    n = sum(p.n for p in mine)
    low, high = min(p.min for p in mine), max(p.max for p in mine)
    hists = [p.hist for p in mine]
    merged: LogHistogram | None = None
    if all(h is not None for h in hists):
        merged = LogHistogram()
        for h in hists:
            merged = merged.merge(LogHistogram.decode(h))  # type: ignore[arg-type]

    def percentile(p: float) -> float:
        if merged is None:
            raise LookupError("a window of this bucket kept no histogram")
        return min(max(merged.percentile(p), low), high)

    window = Summary(n, math.fsum(p.sum for p in mine), low, high, percentile)
    functions = [f for f in query.functions if merged is not None or "sketch" not in needs([f])]
    values = function_values(functions, window)
    updated = max(p.updated_at for p in mine)
    return WindowResult(query_id, start, TIERS[tier], values, n, updated, "")


class Rollup:
    """The dirty tier buckets of the queries this job evaluates, and the passes that roll
    them up. ``wrote`` is called from the batches' thread, ``run_once`` from the job's loop."""

    def __init__(
        self,
        store: RollupStore,
        clock: Callable[[], float] = time.time,
        per_pass: int = 200,
        rolled: Callable[[str], None] = lambda tier: None,
    ) -> None:
        self.store, self.clock, self.per_pass, self._rolled = store, clock, per_pass, rolled
        self.queries: Mapping[str, Query] = {}
        self._dirty: set[Key] = set()
        self._lock = threading.Lock()

    def wrote(self, partials: Iterable[WindowPartial]) -> None:
        """Marks the tier buckets of the windows whose partials were written."""
        keys = {
            (p.query_id, tier, int(p.window_start // TIERS[tier]) * TIERS[tier])
            for p in partials
            for tier in tiers_of(p.window_seconds)
        }
        with self._lock:
            self._dirty |= keys

    def mark_recent(self, queries: Mapping[str, Query], seconds: float) -> None:
        """Marks every bucket of the last ``seconds`` of ``queries``: after a start, so that a
        roll lost with the process is done again."""
        now = self.clock()
        keys = set()
        for qid, query in queries.items():
            for tier in tiers_of(query.window_seconds):
                size = TIERS[tier]
                first = int((now - seconds) // size) * size
                keys |= {(qid, tier, b) for b in range(first, int(now), size)}
        with self._lock:
            self._dirty |= keys

    def _due(self, now: float) -> list[Key]:
        return sorted(
            (k for k in self._dirty if k[2] + TIERS[k[1]] <= now), key=lambda k: k[2] + TIERS[k[1]]
        )

    @property
    def pending(self) -> int:
        """Closed buckets waiting for a roll."""
        with self._lock:
            return len(self._due(self.clock()))

    def lag_seconds(self) -> float:
        """How long the oldest closed bucket still waiting has been closed (0: none)."""
        now = self.clock()
        with self._lock:
            due = self._due(now)
        return max(0.0, now - (due[0][2] + TIERS[due[0][1]])) if due else 0.0

    def run_once(self) -> int:
        """Rolls up to ``per_pass`` closed dirty buckets, oldest first; returns how many. A
        bucket that fails is marked again and the pass ends (storage away: the next one)."""
        with self._lock:
            due = self._due(self.clock())[: self.per_pass]
            self._dirty -= set(due)  # marked again by a batch meanwhile: rolled again later
        done = 0
        for i, (qid, tier, start) in enumerate(due):
            query = self.queries.get(qid)
            if query is None or tier not in tiers_of(query.window_seconds):
                continue  # no longer evaluated here, or redefined
            try:
                partials = self.store.read_partials(qid, start, start + TIERS[tier])
                row = roll(qid, query, tier, start, partials)
                if row is not None:
                    self.store.upsert_tier(tier, [row])
            except Exception as exc:
                log.warning(
                    "rollup of %s %s at %s failed (retried next pass): %s", qid, tier, start, exc
                )
                with self._lock:
                    self._dirty |= set(due[i:])
                break
            done += 1
            self._rolled(tier)
        return done
