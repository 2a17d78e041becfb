"""Per-second aggregation of StatsD traffic, as the design says: a gauge keeps its last value,
a counter becomes the sum over the second (scaled up by its sample rate), a timer or histogram
becomes the highest value in the second (``<name>.max``), with optional ``.count``, ``.avg`` and
``.p99`` companions, and a set becomes the number of distinct members.

Packets land in the bucket of the second they arrive in (by the injected clock). ``flush(t)``
closes every second before ``t`` and labels each with the second's end, the same convention as
host snapshots (a snapshot stamped T describes the second that ends at T). Gauges, and counters
as zero, go on being reported for ``idle_ttl_s`` after their last update.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from agent.statsd.parse import MalformedLine, metric_name, parse_line
from apm.labels import TAGS_KEEP, unbounded_tag

__all__ = ["StatsdAggregator"]

_MAX_CATCH_UP_S = 600  # seconds of empty buckets emitted after a clock jump, at most
_NAME_CACHE_MAX = 100_000


@dataclass
class _Bucket:
    counters: dict[str, float] = field(default_factory=dict)
    gauges: dict[str, float] = field(default_factory=dict)
    timers: dict[str, list[float]] = field(default_factory=dict)
    timer_counts: dict[str, float] = field(default_factory=dict)
    sets: dict[str, set[str]] = field(default_factory=dict)


class StatsdAggregator:
    def __init__(
        self,
        clock: Callable[[], float],
        *,
        prefix: str = "",
        tags: str = "name",
        timer_stats: tuple[str, ...] | list[str] = (),
        idle_ttl_s: float = 60.0,
        on_malformed: Callable[[str], None] | None = None,
        drop_unbounded_tags: bool = True,
        tags_keep: tuple[str, ...] | list[str] = TAGS_KEEP,
    ) -> None:
        self.clock = clock
        self.prefix = prefix
        self.tag_mode = tags
        self.timer_stats = tuple(timer_stats)
        self.idle_ttl_s = idle_ttl_s
        self.on_malformed = on_malformed
        self.packets = 0
        self.malformed = 0
        self.tags_dropped = 0  # once per distinct name and tag list (names are cached)
        keep = tuple(tags_keep)
        self._drop: Callable[[str], bool] | None = None
        if drop_unbounded_tags:

            def drop(tag: str) -> bool:
                if unbounded_tag(tag, keep):
                    self.tags_dropped += 1
                    return True
                return False

            self._drop = drop
        self._lock = threading.Lock()
        self._buckets: dict[int, _Bucket] = {}
        self._names: dict[tuple[str, str], str] = {}
        self._gauges: dict[str, float] = {}  # current value, deltas already applied
        self._carried: dict[str, tuple[float, int]] = {}  # value, second last set
        self._counter_last: dict[str, int] = {}  # second a counter last moved
        self._next = math.floor(clock())

    def _name(self, raw: str, tags: str) -> str:
        key = (raw, tags)
        name = self._names.get(key)
        if name is None:
            name = metric_name(raw, tags, self.prefix, self.tag_mode, self._drop)
            if len(self._names) >= _NAME_CACHE_MAX:
                self._names.clear()
            self._names[key] = name
        return name

    def ingest(self, packet: bytes) -> None:
        """One UDP datagram of one or more newline-separated lines."""
        second = math.floor(self.clock())
        with self._lock:
            self.packets += 1
            # Invalid bytes spoil only their own line (which then fails to parse), not the packet.
            text = packet.decode("utf-8", "replace")
            bucket = self._buckets.get(second)
            if bucket is None:
                bucket = self._buckets[second] = _Bucket()
            for line in text.split("\n"):
                if line:
                    try:
                        self._add(bucket, line.rstrip("\r"))
                    except MalformedLine as exc:
                        self._bad(str(exc))

    def _bad(self, why: str) -> None:
        self.malformed += 1
        if self.on_malformed is not None:
            self.on_malformed(why)

    def _add(self, bucket: _Bucket, text: str) -> None:
        line = parse_line(text)
        if line is None:
            return
        name = self._name(line.name, line.tags)
        kind = line.kind
        if kind == "counter":
            total = sum(float(v) for v in line.values) / line.rate
            bucket.counters[name] = bucket.counters.get(name, 0.0) + total
        elif kind == "timer":
            values = [float(v) for v in line.values]
            bucket.timers.setdefault(name, []).extend(values)
            bucket.timer_counts[name] = bucket.timer_counts.get(name, 0.0) + len(values) / line.rate
        elif kind == "gauge":
            for value in line.values:
                number = float(value)
                if line.relative:
                    number += self._gauges.get(name, 0.0)
                self._gauges[name] = number
            bucket.gauges[name] = self._gauges[name]
        else:
            bucket.sets.setdefault(name, set()).update(line.values)

    def flush(self, until: float) -> list[tuple[float, dict[str, float]]]:
        """Closes every second before ``until``: ``[(second end, metrics), ...]`` oldest first,
        leaving out seconds with nothing to report."""
        end = math.floor(until)
        out: list[tuple[float, dict[str, float]]] = []
        with self._lock:
            start = max(self._next, end - _MAX_CATCH_UP_S)
            for second in sorted(s for s in self._buckets if s < min(start, end)):
                self._emit(out, second)  # before the catch-up window: still never lost
            for second in range(start, end):
                self._emit(out, second)
            self._next = max(self._next, end)
        return out

    def _emit(self, out: list[tuple[float, dict[str, float]]], second: int) -> None:
        bucket = self._buckets.pop(second, None)
        if bucket is not None:
            for name, value in bucket.gauges.items():
                self._carried[name] = (value, second)
            for name in bucket.counters:
                self._counter_last[name] = second
        horizon = second - self.idle_ttl_s
        self._carried = {n: vs for n, vs in self._carried.items() if vs[1] >= horizon}
        self._counter_last = {n: s for n, s in self._counter_last.items() if s >= horizon}
        metrics = {name: value for name, (value, _s) in self._carried.items()}
        metrics.update(dict.fromkeys(self._counter_last, 0.0))
        if bucket is not None:
            metrics.update(bucket.counters)
            for name, values in bucket.timers.items():
                metrics.update(self._timer(name, values, bucket.timer_counts[name]))
            for name, members in bucket.sets.items():
                metrics[name] = float(len(members))
        if metrics:
            out.append((float(second + 1), metrics))

    def _timer(self, name: str, values: list[float], count: float) -> dict[str, float]:
        out = {f"{name}.max": max(values)}
        if "count" in self.timer_stats:
            out[f"{name}.count"] = count
        if "avg" in self.timer_stats:
            out[f"{name}.avg"] = sum(values) / len(values)
        if "p99" in self.timer_stats:
            ordered = sorted(values)
            out[f"{name}.p99"] = ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]
        return out
