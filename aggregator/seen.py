"""Each server's and metric's newest sample and the skew counts, read in the windows stream's
own pass (v4's step e, docs/aggregator.md): the JVM decode tells every sample it reads to an
accumulator (``io.apm.aggregator.Seen``), and each batch's figures are taken after its action.
Until v3 a second stream (the "servers stream") read and decoded every record again for them.

- ``SeenAccumulator``: the accumulator of one run of the windows stream, registered with Spark
  before the plan uses it, drained once per batch (``parse`` reads what it hands over);
- ``Touches``: the newest times gathered batch by batch, written to storage at most every
  ``every_s`` seconds (a 2 s trigger would otherwise rewrite every server's row every 2 s).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["Batch", "SeenAccumulator", "Touches", "parse"]


class Batch(NamedTuple):
    """One batch's figures: {server: newest ts}, {metric: newest ts} (of the samples not ahead
    of their arrival) and per metric {"metric", "future", "backlog"} (skew.SetAside rows)."""

    servers: dict[str, float]
    metrics: dict[str, float]
    set_aside: list[dict[str, Any]]


def parse(text: str) -> Batch:
    """``Seen.drain()``'s text: ``S<TAB>server<TAB>ts`` and
    ``M<TAB>metric<TAB>newest<TAB>future<TAB>backlog`` lines (``newest`` empty: none on time)."""
    servers: dict[str, float] = {}
    metrics: dict[str, float] = {}
    set_aside: list[dict[str, Any]] = []
    for line in text.splitlines():
        kind, name, *rest = line.split("\t")
        if kind == "S":
            servers[name] = float(rest[0])
        elif kind == "M":
            newest, future, backlog = rest
            if newest:
                metrics[name] = float(newest)
            set_aside.append({"metric": name, "future": int(future), "backlog": int(backlog)})
        else:
            raise ValueError(f"not a line of Seen.drain(): {line[:80]!r}")
    return Batch(servers, metrics, set_aside)


class SeenAccumulator:
    """One ``io.apm.aggregator.Seen``, registered with ``spark``'s context; ``jvm`` is what the
    decode takes (aggregator/records.py)."""

    def __init__(self, spark: SparkSession, tolerance_s: float, delay_s: float) -> None:
        jvm = spark._jvm
        if jvm is None:
            raise RuntimeError("the aggregator's decode needs a classic (JVM) SparkSession")
        self.jvm = jvm.io.apm.aggregator.Seen(float(tolerance_s), float(delay_s))
        # Spark refuses to ship an accumulator it does not know; registered, each task's copy
        # comes back merged into this one when the task ends.
        spark.sparkContext._jsc.sc().register(self.jvm, "apm.aggregator.seen")

    def drain(self) -> Batch:
        """What the tasks that ended since the last drain saw, and forgets it."""
        return parse(self.jvm.drain())


class Touches:
    """Newest times per server and per metric, kept as the maximum of what ``add`` was told and
    handed to ``write`` (servers, metrics) when ``flush`` finds ``every_s`` passed since the
    last write (or ``force``). Nothing is lost between writes: the maxima wait."""

    def __init__(
        self,
        write: Callable[[dict[str, float], dict[str, float]], None],
        every_s: float,
        clock: Callable[[], float],
    ) -> None:
        self._write = write
        self._every_s = every_s
        self._clock = clock
        self._last = -math.inf
        # The stream's batches add and flush; the job's loop flushes too (publish_status).
        self._lock = threading.Lock()
        self.servers: dict[str, float] = {}
        self.metrics: dict[str, float] = {}

    def add(self, servers: dict[str, float], metrics: dict[str, float]) -> None:
        with self._lock:
            self._add(servers, metrics)

    def _add(self, servers: dict[str, float], metrics: dict[str, float]) -> None:
        for mine, theirs in ((self.servers, servers), (self.metrics, metrics)):
            for name, ts in theirs.items():
                if ts > mine.get(name, -math.inf):
                    mine[name] = ts

    def flush(self, force: bool = False) -> None:
        with self._lock:
            self._flush(force)

    def _flush(self, force: bool) -> None:
        now = self._clock()
        if not (self.servers or self.metrics) or (not force and now - self._last < self._every_s):
            return
        servers, metrics = self.servers, self.metrics
        # Taken before the write: a write that raises keeps nothing twice, and a retry of the
        # job's storage (aggregator/retrying.py) is inside ``write``.
        self.servers, self.metrics = {}, {}
        try:
            self._write(servers, metrics)
        except Exception:
            self._add(servers, metrics)  # kept for the next flush
            raise
        self._last = now
