"""The shared telemetry base: metrics in the instance's own registry, served on /metrics."""

from __future__ import annotations

import urllib.request
from dataclasses import dataclass

import pytest

from apm.telemetry import Telemetry

pytestmark = pytest.mark.unit


@dataclass
class _Demo(Telemetry):
    def __post_init__(self) -> None:
        self.hits = self.counter("apm_demo_hits", "hits", ["path"])
        self.depth = self.gauge("apm_demo_depth", "depth")
        self.took = self.histogram("apm_demo_seconds", "time", (0.1, 1))


def test_two_instances_do_not_share_metrics_and_serve_their_own():
    one, two = _Demo(), _Demo()  # the same names twice: no clash in the global registry
    one.hits.labels("/a").inc(3)
    one.took.observe(0.5)
    server = one.serve(0)
    try:
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as answer:
            text = answer.read().decode()
    finally:
        server.shutdown()
    assert 'apm_demo_hits_total{path="/a"} 3.0' in text
    assert 'apm_demo_seconds_bucket{le="1.0"} 1.0' in text
    assert two.registry.get_sample_value("apm_demo_hits_total", {"path": "/a"}) is None
