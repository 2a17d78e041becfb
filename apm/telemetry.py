"""A service's own Prometheus metrics: a registry per instance (tests build several in one
process, so nothing goes to the global registry) and the /metrics endpoint that serves it.
Each service subclasses :class:`Telemetry` and declares its metrics in ``__post_init__``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

__all__ = ["Telemetry"]


@dataclass
class Telemetry:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def counter(self, name: str, doc: str, labels: Sequence[str] = ()) -> Counter:
        return Counter(name, doc, labels, registry=self.registry)

    def gauge(self, name: str, doc: str, labels: Sequence[str] = ()) -> Gauge:
        return Gauge(name, doc, labels, registry=self.registry)

    def histogram(
        self, name: str, doc: str, buckets: Sequence[float], labels: Sequence[str] = ()
    ) -> Histogram:
        return Histogram(name, doc, labels, buckets=buckets, registry=self.registry)

    def serve(self, port: int, host: str = "127.0.0.1") -> Any:
        """Serves /metrics on ``host:port`` (0: a free port) from a daemon thread; returns the
        HTTP server (``server_port``, ``shutdown()``)."""
        server, _ = start_http_server(port, addr=host, registry=self.registry)
        return server
