"""What the agent benchmarks share: an ingest stand-in that answers 202, and the steady-state
CPU and RSS of one process sampled every 10 s (bench.agent's tree agent, bench.agent_deb's
packaged one)."""

from __future__ import annotations

import http.server
import statistics
import time
from typing import Any

import psutil

from bench.base import progress

__all__ = ["Sink", "cpu_and_rss"]


class Sink(http.server.BaseHTTPRequestHandler):
    """Accepts every POST with 202, as the ingest does, and keeps nothing."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(202)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: Any) -> None:
        pass


def cpu_and_rss(process: psutil.Process, seconds: float, label: str) -> dict[str, float]:
    """CPU (% of a core: median of 10 s windows and mean over the run) and RSS (MiB) of
    `process` over `seconds`, after 5 s of start-up."""
    time.sleep(5)  # imports and the first ticks are start-up, not steady state
    rss: list[float] = []
    windows: list[float] = []
    start_cpu = last_cpu = sum(process.cpu_times()[:2])
    started = last_wall = time.monotonic()
    while time.monotonic() - started < seconds:
        time.sleep(10)
        cpu, wall = sum(process.cpu_times()[:2]), time.monotonic()
        windows.append(100 * (cpu - last_cpu) / (wall - last_wall))
        last_cpu, last_wall = cpu, wall
        rss.append(process.memory_info().rss / 2**20)
        progress(f"{label}: {wall - started:.0f}s, cpu {windows[-1]:.2f}% rss {rss[-1]:.1f} MiB")
    return {
        "cpu_pct_median": statistics.median(windows),
        "cpu_pct_mean": 100 * (last_cpu - start_cpu) / (last_wall - started),
        "rss_mib_median": statistics.median(rss),
        "rss_mib_max": max(rss),
    }
