"""The agent's own metrics: its version (agent.version), RSS and CPU, its spool, and how its
pushes are going."""

from __future__ import annotations

from typing import Any

from agent.collectors.base import CollectorContext
from agent.version import VERSION, version_number

__all__ = ["AgentCollector"]


class AgentCollector:
    name = "agent"

    def __init__(self, context: CollectorContext) -> None:
        self._process = context.psutil.Process()
        self._stats = context.stats
        self._spool: Any = context.extra.get("spool")
        self._last_cpu: tuple[float, float] | None = None

    def collect(self, now: float) -> dict[str, float]:
        times = self._process.cpu_times()
        cpu = float(times.user + times.system)
        out = {
            "agent.version": version_number(VERSION),
            "agent.rss": float(self._process.memory_info().rss),
        }
        if self._last_cpu is not None and now > self._last_cpu[1]:
            used, then = self._last_cpu
            out["agent.cpu"] = max(0.0, 100.0 * (cpu - used) / (now - then))
        self._last_cpu = (cpu, now)
        if self._spool is not None:
            out["agent.spool.depth"] = float(self._spool.depth)
            out["agent.spool.bytes"] = float(self._spool.size_bytes)
            out["agent.spool.dropped"] = float(self._spool.dropped)
        if self._stats is not None:
            stats = self._stats
            out.update(
                {
                    "agent.push.retries": float(stats.retries),
                    "agent.push.rejected": float(stats.rejected),
                    "agent.push.blocked": float(stats.blocked),
                    "agent.push.blocked_status": float(stats.blocked_status),
                    "agent.push.age": stats.push_age(),
                    "agent.collector.errors": float(stats.collector_errors),
                    "agent.collector.failing": float(stats.collectors_failing),
                    "agent.statsd.packets": float(stats.statsd_packets),
                    "agent.statsd.malformed": float(stats.statsd_malformed),
                    "agent.statsd.tags_dropped": float(stats.statsd_tags_dropped),
                    "agent.names.refused": float(stats.names_refused),
                }
            )
        return out
