"""What a collector is, the registry that names them, and counter-to-rate conversion.

A collector is a small plugin: ``collect(now)`` returns this second's metrics. Collectors get
their I/O (psutil, /proc readers, the agent's own stats) at construction, so units test against
fakes. The registry refuses a second plugin under a taken name, like Telegraf's ``inputs.Add``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent.cardinality import Filters

__all__ = [
    "Collector",
    "CollectorContext",
    "CounterRates",
    "DuplicateCollectorError",
    "Registry",
    "UnknownCollectorError",
    "name_part",
]


class Collector(Protocol):
    name: str

    def collect(self, now: float) -> dict[str, float]:
        """This second's metrics; ``now`` is the injected clock's time in seconds."""
        ...


@dataclass
class CollectorContext:
    """What factories may draw on. ``psutil`` is the module or a fake with the same calls."""

    psutil: Any
    stats: Any = None  # agent.stats.AgentStats, for the agent's own metrics
    proc_root: str = "/proc"
    extra: dict[str, Any] = field(default_factory=dict)
    filters: Filters = field(default_factory=Filters)  # interfaces and mounts to skip


Factory = Callable[[CollectorContext], Collector]


class DuplicateCollectorError(ValueError):
    pass


class UnknownCollectorError(ValueError):
    pass


class Registry:
    """Collector factories keyed by name."""

    def __init__(self) -> None:
        self._factories: dict[str, Factory] = {}

    def add(self, name: str, factory: Factory) -> None:
        if name in self._factories:
            raise DuplicateCollectorError(f"a collector named {name!r} is already registered")
        self._factories[name] = factory

    def names(self) -> list[str]:
        return sorted(self._factories)

    def create(self, names: list[str], context: CollectorContext) -> list[Collector]:
        unknown = [n for n in names if n not in self._factories]
        if unknown:
            raise UnknownCollectorError(
                f"unknown collectors {unknown}; known: {', '.join(self.names())}"
            )
        return [self._factories[n](context) for n in names]


_UNSAFE = re.compile(r"[^A-Za-z0-9_\-]+")


def name_part(raw: str, empty: str = "root") -> str:
    """A device, mount or interface name made safe as one dotted part of a metric name."""
    part = _UNSAFE.sub("_", raw).strip("_")
    return part or empty


class CounterRates:
    """Per-second rates from monotonically increasing counters.

    A counter that goes down either wrapped (a 32- or 64-bit counter that was near its limit)
    or was reset (driver reload, interface re-created, reboot). A wrap adds the distance to the
    limit; a reset means everything counted since restarted from zero, so the new value is the
    delta. Either way the second still gets a value rather than a negative spike or a gap.
    """

    def __init__(self) -> None:
        self._last: dict[str, tuple[float, float]] = {}

    def rate(self, key: str, value: float, now: float) -> float | None:
        previous = self._last.get(key)
        self._last[key] = (value, now)
        if previous is None:
            return None
        last_value, last_time = previous
        elapsed = now - last_time
        if elapsed <= 0:
            return None
        delta = value - last_value
        if delta < 0:
            delta = self.unwrap(last_value, value)
        return delta / elapsed

    @staticmethod
    def unwrap(last: float, value: float) -> float:
        for bits in (32, 64):
            limit = float(2**bits)
            if last < limit:
                wrapped = limit - last + value
                # Only a counter that was in the top quarter of its range plausibly wrapped.
                if wrapped < limit / 4:
                    return wrapped
                break
        return value
