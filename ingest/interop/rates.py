"""Cumulative OTLP series made into rates, as the agent makes counters into per-second values:
the previous point of each series is kept (bounded, least recently seen forgotten first) and
each new point gives ``(value - previous) / (time - previous time)``.

Kept per ingest process, in memory: the first point of a series, the first after it was
forgotten, after a restart of the ingest or after a load balancer sent the series to another
replica, gives no rate (and later points give rates over the interval since the point this
replica saw last, which are still exact averages). A counter that went down or a new start
time is a reset: that point gives no rate either. A point sent again (the sender's retry after
a 503) gives the same rate again, which the aggregator takes as a duplicate.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

__all__ = ["Pending", "RateState", "Step"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Last:
    metric: str  # the instrument's name, for the per-metric series budget
    start: int  # start_time_unix_nano of the series' current run
    t: int  # time_unix_nano
    values: tuple[float, ...]
    before_t: int | None = None  # the point before, for a point sent again
    before: tuple[float, ...] | None = None


@dataclass(frozen=True)
class Step:
    """What a point gave: ``rates`` (per second, one per value) when ``kind`` is ``rate``;
    else ``first``, ``reset``, ``out_of_order`` or ``series_budget`` (a new series of a
    metric that has its ``max_per_metric`` already) and no rates."""

    kind: str
    rates: tuple[float, ...] = ()


Pending = dict[Hashable, _Last]

# An entry's cost beyond its metric name: the OrderedDict slot and link, a 16-byte digest
# key, the _Last and its tuples of floats (measured ~430 bytes with two values; rounded up).
_ENTRY_BYTES = 512


class RateState:
    """The previous point of each series, keyed by a fixed-size digest of its identity (so
    that long attribute values cost nothing here), bounded by ``max_series`` entries and
    ``max_bytes``, least recently seen forgotten first (``on_evict``), and by
    ``max_per_metric`` series per metric: past it a metric's new series are refused
    (``series_budget``, with a warning naming the metric at most once a minute), so that one
    metric's flood of new series cannot push the others' state out."""

    def __init__(
        self,
        max_series: int,
        on_evict: Callable[[], None] = lambda: None,
        max_bytes: int = 64 * 1024 * 1024,
        max_per_metric: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_series = max_series
        self.max_bytes = max_bytes
        self.max_per_metric = max_per_metric
        self.bytes = 0
        self._on_evict = on_evict
        self._clock = clock
        self._last: OrderedDict[Hashable, _Last] = OrderedDict()
        self._per_metric: Counter[str] = Counter()
        self._warned: dict[str, float] = {}
        self._lock = threading.Lock()

    def size(self) -> int:
        return len(self._last)

    def step(
        self,
        key: Hashable,
        start: int,
        t: int,
        values: tuple[float, ...],
        pending: Pending | None = None,
        metric: str = "",
    ) -> Step:
        """The rates of one cumulative point of series ``key`` at ``t`` (nanoseconds: the
        interval is computed exactly, then made seconds). ``values[0]`` must never go down
        within a run: the counter, or a histogram's count. With ``pending`` the new state goes
        there, for :meth:`commit` (else it is applied at once)."""
        with self._lock:
            last = pending.get(key) if pending is not None else None
            if last is None:
                last = self._last.get(key)
                if last is None and self._per_metric[metric] >= self.max_per_metric:
                    self._warn(metric)
                    return Step("series_budget")
            target = self._last if pending is None else pending
            if last is None or (start and start != last.start):
                return self._restart(target, key, last, metric, start, t, values)
            if t == last.t and values == last.values:  # sent again
                if last.before is None or last.before_t is None:
                    return Step("first")
                return Step("rate", _rates(last.before_t, last.before, t, values))
            if t <= last.t:
                return Step("out_of_order")
            if values[0] < last.values[0]:  # the counter went down: restarted
                return self._restart(target, key, last, metric, start, t, values)
            new = _Last(metric, start or last.start, t, values, last.t, last.values)
            self._put(target, key, new)
            return Step("rate", _rates(last.t, last.values, t, values))

    def commit(self, pending: Pending) -> None:
        """Applies a published request's steps. A series another request moved past them
        meanwhile keeps its newer point."""
        with self._lock:
            for key, new in pending.items():
                old = self._last.get(key)
                if old is None and self._per_metric[new.metric] >= self.max_per_metric:
                    continue
                if old is None or new.start != old.start or new.t > old.t:
                    self._put(self._last, key, new)

    def _restart(
        self,
        target: Pending,
        key: Hashable,
        last: _Last | None,
        metric: str,
        start: int,
        t: int,
        values: tuple[float, ...],
    ) -> Step:
        self._put(target, key, _Last(metric, start, t, values))
        return Step("first" if last is None else "reset")

    def _put(self, target: Pending, key: Hashable, last: _Last) -> None:
        if target is not self._last:
            target[key] = last
            return
        old = self._last.get(key)
        if old is None:
            self._per_metric[last.metric] += 1
            self.bytes += _size(last)
        else:
            self.bytes += _size(last) - _size(old)
        self._last[key] = last
        self._last.move_to_end(key)
        while len(self._last) > self.max_series or self.bytes > self.max_bytes:
            _, gone = self._last.popitem(last=False)
            self.bytes -= _size(gone)
            self._per_metric[gone.metric] -= 1
            if not self._per_metric[gone.metric]:
                del self._per_metric[gone.metric]
            self._on_evict()

    def _warn(self, metric: str) -> None:
        now = self._clock()
        if now - self._warned.get(metric, -math.inf) < _WARN_EVERY_S:
            return
        if len(self._warned) >= 1000:
            self._warned.clear()
        self._warned[metric] = now
        log.warning(
            "OTLP metric %r has %d series, its budget (otlp_series_per_metric_max): its new "
            "series are dropped (counted as series_budget)",
            metric[:200],
            self.max_per_metric,
        )


_WARN_EVERY_S = 60.0


def _size(last: _Last) -> int:
    return _ENTRY_BYTES + len(last.metric) + 16 * len(last.values)


def _rates(t0: int, v0: tuple[float, ...], t1: int, v1: tuple[float, ...]) -> tuple[float, ...]:
    span = (t1 - t0) / 1e9
    return tuple((b - a) / span for a, b in zip(v0, v1, strict=True))
