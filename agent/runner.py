"""The agent: every second it collects host metrics and closes the StatsD second, writes the
snapshot(s) to the spool, and leaves pushing to its own thread, so a slow or dead ingest never
delays collection. Snapshots stamped T describe the second that ends at T."""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Any

from agent.cardinality import Filters, NameLimit
from agent.collectors import REGISTRY, Collector, CollectorContext, Registry
from agent.exposition import TelemetryServer
from agent.http import HttpClient, StdlibHttpClient
from agent.push import BEAT_S, Pusher
from agent.sdnotify import notify
from agent.settings import AgentSettings
from agent.spool import Spool
from agent.stats import AgentStats
from agent.statsd import StatsdAggregator, StatsdListener
from agent.tags import host_tags
from agent.tls import ClientTls
from apm.model import Snapshot, metric_name_error, value_error
from apm.retry import Backoff

__all__ = ["Agent", "encode_snapshot"]

log = logging.getLogger(__name__)


def encode_snapshot(snapshot: Snapshot) -> bytes:
    return json.dumps(snapshot.to_json(), separators=(",", ":"), allow_nan=False).encode()


class Agent:
    def __init__(
        self,
        settings: AgentSettings,
        *,
        psutil: Any = None,
        clock: Callable[[], float] = time.time,
        http: HttpClient | None = None,
        registry: Registry = REGISTRY,
        spool: Spool | None = None,
        statsd: bool | None = None,
    ) -> None:
        if psutil is None:
            import psutil as psutil_module

            psutil = psutil_module
        self.settings = settings
        self.clock = clock
        # Sent with every snapshot (agent.tags); an ingest from before tags refuses them.
        self.tags = host_tags(settings.tags) if settings.send_tags else None
        self.stats = AgentStats(clock)
        self.spool = spool or Spool(
            settings.spool_dir, settings.spool_max_bytes, settings.spool_segment_bytes
        )
        context = CollectorContext(
            psutil=psutil,
            stats=self.stats,
            extra={"spool": self.spool},
            filters=Filters(
                tuple(settings.net_exclude),
                tuple(settings.disk_exclude_fstypes),
                tuple(settings.disk_exclude_mounts),
            ),
        )
        self.names = NameLimit(settings.max_metric_names)
        self.collectors: list[Collector] = registry.create(list(settings.collectors), context)
        self._failing: set[str] = set()
        self.aggregator: StatsdAggregator | None = None
        self.listener: StatsdListener | None = None
        if settings.statsd_enabled if statsd is None else statsd:
            self.aggregator = StatsdAggregator(
                clock,
                prefix=settings.statsd_prefix,
                tags=settings.statsd_tags,
                timer_stats=list(settings.statsd_timer_stats),
                idle_ttl_s=settings.statsd_idle_ttl_s,
                on_malformed=self._malformed,
                drop_unbounded_tags=settings.statsd_drop_unbounded_tags,
                tags_keep=list(settings.statsd_tags_keep),
            )
        self.pusher = Pusher(
            self.spool,
            http or StdlibHttpClient(ClientTls(settings.tls_files)),
            settings.ingest_url,
            settings.api_key,
            Backoff(settings.backoff_initial_s, settings.backoff_cap_s, settings.backoff_jitter),
            self.stats,
            timeout_s=settings.push_timeout_s,
            retry_after_cap_s=settings.retry_after_cap_s,
            max_snapshots=settings.batch_max_snapshots,
            max_bytes=settings.batch_max_bytes,
            drain_rate=settings.drain_rate,
            rejected_path=settings.spool_dir.parent / "rejected.jsonl",
        )
        self.stop_event = threading.Event()
        if settings.insecure_skip_verify:
            log.warning(
                "insecure_skip_verify is on: the ingest's certificate is NOT verified, so "
                "anyone on the path to %s can pose as it and read the API key and the data; "
                "set tls_ca instead",
                settings.ingest_url,
            )

    def push_healthy(self, thread: threading.Thread) -> bool:
        """Whether the push thread lives and has beaten recently. While it does not, the
        systemd watchdog is not pinged, so systemd restarts the agent (WatchdogSec) instead of
        letting it collect into a spool that nothing drains."""
        # One loop turn: a request (connect, send, read: each up to the timeout) and a wait
        # of at most BEAT_S; anything longer is a hang.
        stale_after = 3 * self.settings.push_timeout_s + BEAT_S + 10.0
        silent = self.pusher.monotonic() - self.pusher.beat
        healthy = thread.is_alive() and silent < stale_after
        if healthy and not self.stats.push_thread_up:
            log.warning("push thread beats again")
        elif not healthy and self.stats.push_thread_up:
            log.critical(
                "push thread %s: no longer pinging the watchdog, so that systemd restarts the "
                "agent; the spool keeps every snapshot",
                "died" if not thread.is_alive() else f"silent for {silent:.0f}s",
            )
        self.stats.push_thread_up = int(healthy)
        return healthy

    def _malformed(self, why: str) -> None:
        self.stats.add("statsd_malformed")
        log.debug("malformed statsd line dropped: %s", why)

    def collect(self, now: float) -> dict[str, float]:
        """Every collector's metrics; one that fails is logged (once) and counted, not fatal."""
        metrics: dict[str, float] = {}
        for collector in self.collectors:
            try:
                metrics.update(collector.collect(now))
                self._failing.discard(collector.name)
            except Exception as exc:
                self.stats.add("collector_errors")
                if collector.name not in self._failing:
                    log.warning(
                        "collector %s failed: %r (retried every second; counted in "
                        "agent.collector.failing until it works again)",
                        collector.name,
                        exc,
                    )
                    self._failing.add(collector.name)
        self.stats.collectors_failing = len(self._failing)
        return metrics

    def snapshots(self, ts: float) -> list[Snapshot]:
        """The snapshots closing at ``ts``: StatsD seconds left over from a stall first, then
        this second's host metrics merged with this second's StatsD aggregates."""
        host = self.collect(ts)
        if self.aggregator is not None:
            self.stats.statsd_packets = self.aggregator.packets
            self.stats.statsd_tags_dropped = self.aggregator.tags_dropped
        late: list[tuple[float, dict[str, float]]] = []
        if self.aggregator is not None:
            for closed_at, metrics in self.aggregator.flush(ts):
                if closed_at == ts:
                    host.update(metrics)
                else:
                    late.append((closed_at, metrics))
        server, tags = self.settings.server, self.tags
        out = [Snapshot(server, t, self._valid(m), tags) for t, m in late]
        out.append(Snapshot(server, ts, self._valid(host), tags))
        return [s for s in out if s.metrics]

    def _valid(self, metrics: dict[str, float]) -> dict[str, float]:
        good = {}
        for name, value in metrics.items():
            if metric_name_error(name) is not None or value_error(value) is not None:
                self.stats.add("collector_errors")
            elif self.names.admit(name):
                good[name] = float(value)
        self.stats.names_refused = self.names.refused
        self.stats.names_known = len(self.names.known)
        return good

    def tick(self, ts: float) -> list[Snapshot]:
        snapshots = self.snapshots(ts)
        for snapshot in snapshots:
            self.spool.append(encode_snapshot(snapshot))
            log.debug("collected ts=%d metrics=%d", snapshot.ts, len(snapshot.metrics))
        return snapshots

    def run(self, max_ticks: int | None = None) -> None:
        """Collects every interval until ``stop_event`` is set; pushes on another thread."""
        interval = self.settings.interval_s
        if self.aggregator is not None:
            self.listener = StatsdListener(
                self.aggregator, self.settings.statsd_host, self.settings.statsd_port
            )
            self.listener.start()
        exposition = None
        if self.settings.metrics_port:
            exposition = TelemetryServer(
                self.stats, self.spool, self.settings.metrics_host, self.settings.metrics_port
            )
            exposition.start()
        self.collect(self.clock())  # primes the counters so the first tick has rates
        pusher = threading.Thread(
            target=self.pusher.run, args=(self.stop_event,), name="push", daemon=True
        )
        pusher.start()
        notify("READY=1")
        log.info(
            "agent %s collecting every %.3gs (%s), pushing to %s, spool %s (%d waiting)",
            self.settings.server,
            interval,
            ",".join(self.settings.collectors),
            self.settings.ingest_url,
            self.settings.spool_dir,
            self.spool.depth,
        )
        ticks = 0
        try:
            while not self.stop_event.is_set() and (max_ticks is None or ticks < max_ticks):
                now = self.clock()
                due = math.floor(now / interval + 1) * interval
                if self.stop_event.wait(max(0.0, due - now)):
                    break
                self.tick(round(due, 6))
                if self.push_healthy(pusher):
                    notify("WATCHDOG=1")
                ticks += 1
        finally:
            self.stop_event.set()
            notify("STOPPING=1")
            if self.listener is not None:
                self.listener.stop()
            if exposition is not None:
                exposition.stop()
            pusher.join(timeout=self.settings.push_timeout_s + 1)
            self.spool.close()
