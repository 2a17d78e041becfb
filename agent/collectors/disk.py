"""Disk usage per mount and disk I/O as per-second rates (bytes and operations)."""

from __future__ import annotations

import logging

from agent.cardinality import matches
from agent.collectors.base import CollectorContext, CounterRates, name_part

__all__ = ["DiskCollector", "mount_part"]

log = logging.getLogger(__name__)
_IO = (
    ("read_bytes", "read_bytes"),
    ("write_bytes", "write_bytes"),
    ("read_count", "read_ops"),
    ("write_count", "write_ops"),
)


def mount_part(mountpoint: str) -> str:
    """'/' -> 'root', '/var/lib' -> 'var_lib': one safe part of a metric name."""
    return name_part(mountpoint.strip("/"), empty="root")


class DiskCollector:
    name = "disk"

    def __init__(self, context: CollectorContext) -> None:
        self._psutil = context.psutil
        self._rates = CounterRates()
        self._failed: set[str] = set()
        self._filters = context.filters
        self._stats = context.stats

    def collect(self, now: float) -> dict[str, float]:
        out: dict[str, float] = {}
        filters = self._filters
        for part in self._psutil.disk_partitions(all=False):
            if matches(part.fstype, filters.disk_exclude_fstypes) or matches(
                part.mountpoint, filters.disk_exclude_mounts
            ):
                continue  # per-pod and per-layer mounts would be a new metric name each
            key = f"disk.mount.{mount_part(part.mountpoint)}.used_pct"
            if key in out:
                continue  # the same mount seen twice (bind mounts): keep the first
            try:
                out[key] = float(self._psutil.disk_usage(part.mountpoint).percent)
            except OSError as exc:
                if self._stats is not None:  # in agent.collector.errors, every second it fails
                    self._stats.add("collector_errors")
                if part.mountpoint not in self._failed:  # say it once, not every second
                    log.warning("disk usage of %s unavailable: %s", part.mountpoint, exc)
                    self._failed.add(part.mountpoint)
        io = self._psutil.disk_io_counters(perdisk=False)
        if io is not None:  # None where the kernel exposes no disk statistics
            for field, metric in _IO:
                rate = self._rates.rate(metric, float(getattr(io, field)), now)
                if rate is not None:
                    out[f"disk.io.{metric}"] = rate
        return out
