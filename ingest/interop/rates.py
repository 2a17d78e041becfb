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

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

__all__ = ["Pending", "RateState", "Step"]


@dataclass(frozen=True)
class _Last:
    start: int  # start_time_unix_nano of the series' current run
    t: int  # time_unix_nano
    values: tuple[float, ...]
    before_t: int | None = None  # the point before, for a point sent again
    before: tuple[float, ...] | None = None


@dataclass(frozen=True)
class Step:
    """What a point gave: ``rates`` (per second, one per value) when ``kind`` is ``rate``;
    else ``first``, ``reset`` or ``out_of_order`` and no rates."""

    kind: str
    rates: tuple[float, ...] = ()


Pending = dict[Hashable, "_Last"]


class RateState:
    def __init__(self, max_series: int, on_evict: Callable[[], None] = lambda: None) -> None:
        self.max_series = max_series
        self._on_evict = on_evict
        self._last: OrderedDict[Hashable, _Last] = OrderedDict()
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
    ) -> Step:
        """The rates of one cumulative point of series ``key`` at ``t`` (nanoseconds: the
        interval is computed exactly, then made seconds). ``values[0]`` must never go down
        within a run: the counter, or a histogram's count. With ``pending`` the new state goes
        there, for :meth:`commit` (else it is applied at once)."""
        with self._lock:
            last = pending.get(key) if pending is not None else None
            if last is None:
                last = self._last.get(key)
            target = self._last if pending is None else pending
            if last is None or (start and start != last.start):
                return self._restart(target, key, last, start, t, values)
            if t == last.t and values == last.values:  # sent again
                if last.before is None or last.before_t is None:
                    return Step("first")
                return Step("rate", _rates(last.before_t, last.before, t, values))
            if t <= last.t:
                return Step("out_of_order")
            if values[0] < last.values[0]:  # the counter went down: restarted
                return self._restart(target, key, last, start, t, values)
            self._put(target, key, _Last(start or last.start, t, values, last.t, last.values))
            return Step("rate", _rates(last.t, last.values, t, values))

    def commit(self, pending: Pending) -> None:
        """Applies a published request's steps. A series another request moved past them
        meanwhile keeps its newer point."""
        with self._lock:
            for key, new in pending.items():
                old = self._last.get(key)
                if old is None or new.start != old.start or new.t > old.t:
                    self._put(self._last, key, new)

    def _restart(
        self,
        target: Pending,
        key: Hashable,
        last: _Last | None,
        start: int,
        t: int,
        values: tuple[float, ...],
    ) -> Step:
        self._put(target, key, _Last(start, t, values))
        return Step("first" if last is None else "reset")

    def _put(self, target: Pending, key: Hashable, last: _Last) -> None:
        target[key] = last
        if target is not self._last:
            return
        self._last.move_to_end(key)
        while len(self._last) > self.max_series:
            self._last.popitem(last=False)
            self._on_evict()


def _rates(t0: int, v0: tuple[float, ...], t1: int, v1: tuple[float, ...]) -> tuple[float, ...]:
    span = (t1 - t0) / 1e9
    return tuple((b - a) / span for a, b in zip(v0, v1, strict=True))
