"""Load averages, memory and swap: instantaneous gauges, no history needed."""

from __future__ import annotations

from agent.collectors.base import CollectorContext

__all__ = ["LoadCollector", "MemoryCollector"]


class LoadCollector:
    name = "load"

    def __init__(self, context: CollectorContext) -> None:
        self._psutil = context.psutil

    def collect(self, now: float) -> dict[str, float]:
        one, five, fifteen = self._psutil.getloadavg()
        return {"load.1": float(one), "load.5": float(five), "load.15": float(fifteen)}


class MemoryCollector:
    name = "memory"

    def __init__(self, context: CollectorContext) -> None:
        self._psutil = context.psutil

    def collect(self, now: float) -> dict[str, float]:
        mem = self._psutil.virtual_memory()
        swap = self._psutil.swap_memory()
        return {
            "mem.total": float(mem.total),
            "mem.used": float(mem.used),
            "mem.available": float(mem.available),
            "mem.util": float(mem.percent),
            "swap.total": float(swap.total),
            "swap.used": float(swap.used),
            "swap.util": float(swap.percent),
        }
