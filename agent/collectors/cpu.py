"""CPU utilisation, total and per core, split into user, system and iowait, from the kernel's
cumulative CPU times. Percentages are of the time that passed on that CPU in the last second."""

from __future__ import annotations

from typing import Any

from agent.collectors.base import CollectorContext

__all__ = ["CpuCollector", "cpu_shares"]

# guest and guest_nice are already counted inside user and nice on Linux, so they stay out.
_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def _times(sample: Any) -> dict[str, float]:
    return {f: float(getattr(sample, f, 0.0) or 0.0) for f in _FIELDS}


def cpu_shares(before: dict[str, float], after: dict[str, float]) -> dict[str, float] | None:
    """util/user/system/iowait in % between two samples, or None when no time passed.

    A field that went backwards (a known kernel quirk for iowait, or a counter reset) counts as
    zero rather than making a share negative."""
    delta = {f: max(0.0, after[f] - before[f]) for f in _FIELDS}
    total = sum(delta.values())
    if total <= 0:
        return None
    busy = total - delta["idle"] - delta["iowait"]
    return {
        "util": 100.0 * busy / total,
        "user": 100.0 * (delta["user"] + delta["nice"]) / total,
        "system": 100.0 * (delta["system"] + delta["irq"] + delta["softirq"]) / total,
        "iowait": 100.0 * delta["iowait"] / total,
    }


class CpuCollector:
    name = "cpu"

    def __init__(self, context: CollectorContext) -> None:
        self._psutil = context.psutil
        self._last_total: dict[str, float] | None = None
        self._last_cores: list[dict[str, float]] = []

    def collect(self, now: float) -> dict[str, float]:
        out: dict[str, float] = {}
        total = _times(self._psutil.cpu_times(percpu=False))
        if self._last_total is not None and (shares := cpu_shares(self._last_total, total)):
            out.update({f"cpu.{k}": v for k, v in shares.items()})
        self._last_total = total
        cores = [_times(c) for c in self._psutil.cpu_times(percpu=True)]
        for index, (before, after) in enumerate(zip(self._last_cores, cores, strict=False)):
            if shares := cpu_shares(before, after):
                out.update({f"cpu.core.{index}.{k}": v for k, v in shares.items()})
        self._last_cores = cores
        return out
