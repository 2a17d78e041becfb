"""The agent's own health as Prometheus text on ``GET /metrics``, like every other service.

The agent install stays minimal (no prometheus-client), so this is the standard library's
HTTP server and a hand-written exposition of a handful of counters and gauges. The same
figures also travel in every snapshot as ``agent.*`` metrics; this endpoint is for scraping
a host whose pushes are failing, when those snapshots are stuck in the spool.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from agent.spool import Spool
from agent.stats import AgentStats

__all__ = ["TelemetryServer", "render"]

log = logging.getLogger(__name__)

# name, type, help, how to read it
_FAMILIES: tuple[tuple[str, str, str, Callable[[AgentStats, Spool], float]], ...] = (
    (
        "apm_agent_snapshots_pushed_total",
        "counter",
        "snapshots acknowledged by the ingest",
        lambda s, _: s.pushed,
    ),
    (
        "apm_agent_push_retries_total",
        "counter",
        "failed push attempts that will be retried",
        lambda s, _: s.retries,
    ),
    (
        "apm_agent_snapshots_rejected_total",
        "counter",
        "snapshots the ingest refused for their content (422, 413 alone), set aside",
        lambda s, _: s.rejected,
    ),
    (
        "apm_agent_push_blocked_total",
        "counter",
        "push attempts answered with a configuration error (401, 403, 404, 3xx ...); spool kept",
        lambda s, _: s.blocked,
    ),
    (
        "apm_agent_push_blocked_status",
        "gauge",
        "the HTTP status that blocks pushing now, 0 when none does",
        lambda s, _: s.blocked_status,
    ),
    (
        "apm_agent_push_tls_errors_total",
        "counter",
        "push attempts that failed in the TLS handshake (untrusted or refused certificate)",
        lambda s, _: s.tls_errors,
    ),
    (
        "apm_agent_push_splits_total",
        "counter",
        "batches halved after a 413",
        lambda s, _: s.splits,
    ),
    (
        "apm_agent_push_thread_up",
        "gauge",
        "1 while the push thread runs and beats, 0 when found dead or hung",
        lambda s, _: s.push_thread_up,
    ),
    (
        "apm_agent_collector_errors_total",
        "counter",
        "collector runs that raised",
        lambda s, _: s.collector_errors,
    ),
    (
        "apm_agent_statsd_packets_total",
        "counter",
        "StatsD packets received",
        lambda s, _: s.statsd_packets,
    ),
    (
        "apm_agent_statsd_malformed_total",
        "counter",
        "malformed StatsD lines dropped",
        lambda s, _: s.statsd_malformed,
    ),
    (
        "apm_agent_statsd_tags_dropped_total",
        "counter",
        "unbounded-looking tags left out of names (once per distinct name and tags)",
        lambda s, _: s.statsd_tags_dropped,
    ),
    (
        "apm_agent_metric_names_refused_total",
        "counter",
        "samples refused because max_metric_names distinct names were reached",
        lambda s, _: s.names_refused,
    ),
    (
        "apm_agent_metric_names",
        "gauge",
        "distinct metric names admitted since the agent started",
        lambda s, _: s.names_known,
    ),
    (
        "apm_agent_spool_depth",
        "gauge",
        "snapshots waiting in the on-disk spool",
        lambda _, sp: sp.depth,
    ),
    ("apm_agent_spool_bytes", "gauge", "bytes on disk in the spool", lambda _, sp: sp.size_bytes),
    (
        "apm_agent_spool_dropped_total",
        "counter",
        "unsent snapshots dropped by the spool cap",
        lambda _, sp: sp.dropped,
    ),
    (
        "apm_agent_last_push_age_seconds",
        "gauge",
        "seconds since the last acknowledged push",
        lambda s, _: s.push_age(),
    ),
)


def render(stats: AgentStats, spool: Spool) -> str:
    lines = []
    for name, kind, help_text, read in _FAMILIES:
        lines += [
            f"# HELP {name} {help_text}",
            f"# TYPE {name} {kind}",
            f"{name} {float(read(stats, spool))!r}",
        ]
    return "\n".join(lines) + "\n"


class TelemetryServer:
    """Serves :func:`render` on a daemon thread. A port already taken is logged, not fatal:
    collection and pushing matter more than the scrape endpoint."""

    def __init__(self, stats: AgentStats, spool: Spool, host: str, port: int) -> None:
        self._stats, self._spool = stats, spool
        self._server: ThreadingHTTPServer | None = None
        self._address = (host, port)

    @property
    def port(self) -> int | None:
        return self._server.server_address[1] if self._server else None

    def start(self) -> bool:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?")[0] != "/metrics":
                    self.send_error(404, "only /metrics here")
                    return
                body = render(outer._stats, outer._spool).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return  # a scrape a second would flood the agent's log

        try:
            self._server = ThreadingHTTPServer(self._address, Handler)
        except OSError as exc:
            log.warning("agent /metrics not served on %s:%d: %s", *self._address, exc)
            return False
        threading.Thread(target=self._server.serve_forever, name="metrics", daemon=True).start()
        return True

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
