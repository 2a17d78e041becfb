"""Host collectors and the default registry that names them.

``base.py``: what a collector is, its registry and counter-to-rate conversion; one collector
per area: ``cpu.py``, ``memory.py`` (load, memory, swap), ``disk.py``, ``network.py``,
``system.py`` (processes, TCP states through ``tcpdiag.py``'s netlink sock_diag, uptime) and
``own.py`` (the agent's own figures)."""

from __future__ import annotations

from agent.collectors.base import (
    Collector,
    CollectorContext,
    CounterRates,
    DuplicateCollectorError,
    Registry,
    UnknownCollectorError,
)
from agent.collectors.cpu import CpuCollector
from agent.collectors.disk import DiskCollector
from agent.collectors.memory import LoadCollector, MemoryCollector
from agent.collectors.network import NetworkCollector
from agent.collectors.own import AgentCollector
from agent.collectors.system import SystemCollector

__all__ = [
    "REGISTRY",
    "Collector",
    "CollectorContext",
    "CounterRates",
    "DuplicateCollectorError",
    "Registry",
    "UnknownCollectorError",
    "default_registry",
]


def default_registry() -> Registry:
    registry = Registry()
    for cls in (
        CpuCollector,
        LoadCollector,
        MemoryCollector,
        DiskCollector,
        NetworkCollector,
        SystemCollector,
        AgentCollector,
    ):
        registry.add(cls.name, cls)
    return registry


REGISTRY = default_registry()
