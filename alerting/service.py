"""The evaluator process: an evaluation cycle every ``interval_s``, delivery in threads of its
own, /metrics on ``metrics_port``. SIGTERM or Ctrl-C stop it between cycles; a ``kill -9``
loses nothing (the state is in Cassandra, see alerting/evaluator.py)."""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
import uuid
from typing import Any

from alerting.dispatch import Dispatcher
from alerting.evaluator import CycleReport, Evaluator
from alerting.senders import AlertmanagerSender, EmailSender, Sender, WebhookSender
from alerting.settings import AlertingSettings
from alerting.telemetry import AlertingTelemetry

__all__ = ["LEASE", "run", "senders_for", "test_notice"]

# The lease evaluators sharing a keyspace take turns on (storage.lease).
LEASE = "alerting-evaluator"

log = logging.getLogger(__name__)


def senders_for(settings: AlertingSettings) -> list[Sender]:
    """A sender for each receiver the settings configure."""
    s = settings
    out: list[Sender] = []
    if s.alertmanager_url:
        out.append(
            AlertmanagerSender(
                s.alertmanager_url, timeout_s=s.send_timeout_s, hold_s=4 * s.renotify_s
            )
        )
    if s.webhook_url:
        out.append(WebhookSender(s.webhook_url, s.webhook_secret, timeout_s=s.send_timeout_s))
    if s.smtp_host and s.smtp_to:
        to = [a.strip() for a in s.smtp_to.split(",") if a.strip()]
        out.append(
            EmailSender(s.smtp_host, s.smtp_port, s.smtp_from, to, timeout_s=s.send_timeout_s)
        )
    return out


def test_notice(now: float) -> dict[str, Any]:
    """The notice of ``apm alert test-notify``: marked as a test in its labels, resolved at once
    so that it does not linger in an Alertmanager."""
    return {
        "status": "resolved",
        "labels": {"alertname": "apm-test-notification", "severity": "none", "apm_test": "true"},
        "annotations": {"summary": "a test notification from apm alert test-notify"},
        "startsAt": now,
        "endsAt": now + 1,
        "key": "test",
    }


def _record(telemetry: AlertingTelemetry, report: CycleReport) -> None:
    telemetry.cycles.inc()
    telemetry.windows.inc(report.windows)
    telemetry.lag.set(report.lag_s)
    telemetry.enqueued.inc(report.notices)
    telemetry.suppressed.inc(report.suppressed)
    telemetry.alerts.clear()
    for state, count in report.states.items():
        telemetry.alerts.labels(state).set(count)


def run(settings: AlertingSettings, stop: threading.Event | None = None) -> int:
    from storage.alerts import AlertStore
    from storage.lease import Lease
    from storage.repository import Repository

    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    telemetry = AlertingTelemetry()
    server = telemetry.serve(settings.metrics_port, settings.metrics_host)
    log.info("alerting: /metrics on %s:%d", settings.metrics_host, server.server_port)
    holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    with Repository.connect() as repo:
        tables = AlertStore(repo.session, repo.keyspace)
        lease = Lease(repo.session, repo.keyspace, LEASE, holder, settings.lease_ttl_s)
        held = threading.Event()  # the dispatcher sends only while this process holds the lease
        senders = senders_for(settings)
        dispatcher = Dispatcher(
            tables,
            senders,
            telemetry,
            retry_deadline_s=settings.retry_deadline_s,
            active=held.is_set,
        )
        dispatcher.start()
        evaluator = Evaluator(repo, tables, settings, tuple(s.name for s in senders))
        log.info(
            "alerting %s: evaluating every %.1fs, receivers %s",
            holder,
            settings.interval_s,
            [s.name for s in senders] or "none",
        )
        try:
            while not stop.is_set():
                began = time.monotonic()
                _cycle(evaluator, dispatcher, lease, held, telemetry)
                stop.wait(max(0.0, settings.interval_s - (time.monotonic() - began)))
        finally:
            dispatcher.close()
            server.shutdown()
            if held.is_set():
                _quietly(lease.release)
    return 0


def _cycle(
    evaluator: Evaluator,
    dispatcher: Dispatcher,
    lease: Any,
    held: threading.Event,
    telemetry: AlertingTelemetry,
) -> None:
    """One cycle: renew or take the lease, then evaluate if this process holds it."""
    try:
        holds = lease.acquire()
        if holds and not held.is_set():
            log.info("alerting: lease %s taken: evaluating", LEASE)
            evaluator.reload()  # the alert rows as the previous holder left them
        elif not holds and held.is_set():
            log.warning("alerting: lease lost to %s: standing by", lease.current())
        (held.set if holds else held.clear)()
        telemetry.leader.set(1 if holds else 0)
        if not holds:
            return
        with telemetry.cycle_seconds.time():
            report = evaluator.run_once(time.time())
        _record(telemetry, report)
        if report.notices:
            dispatcher.notify()
    except Exception as exc:  # Cassandra away: try again next cycle
        held.clear()
        telemetry.cycle_errors.inc()
        log.warning("evaluation cycle failed: %s", exc)


def _quietly(call: Any) -> None:
    try:
        call()
    except Exception as exc:  # stopping anyway; the TTL frees the lease
        log.warning("alerting: could not release the lease: %s", exc)
