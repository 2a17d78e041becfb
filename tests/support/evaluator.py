"""The alert evaluator as a process the tests start (``apm alert run``), on a keyspace of
their own and short timings, and a poll for what it does; and, for unit tests of the evaluation,
the results it reads and the alert tables it writes, in memory (:class:`MemResults`,
:class:`MemTables`), with the edges of storage's Repository and AlertStore."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import IO, Any

from apm.query import StoredQuery, WindowResult, parse
from launch.probe import free_port
from tests.support.servers import FakeServerSeries

__all__ = ["MemResults", "MemTables", "evaluator_env", "start_evaluator", "wait_for"]


class MemResults(FakeServerSeries):
    """The results side of ``storage.repository.Repository`` in memory: a query's one series
    (server "") here, its per-server series in storage's own fake (tests/support/servers.py,
    with the repository's edges); ranges are [start, end) of window starts, of two versions of
    a window the later ``updated_at`` wins. Each read is counted in ``reads`` by method name."""

    def __init__(self) -> None:
        super().__init__()
        self.queries: dict[str, StoredQuery] = {}
        self.plain: dict[tuple[str, float], WindowResult] = {}
        self.reads: Counter[str] = Counter()

    def save_query(self, text: str, query_id: str, active_from: float = 0.0) -> StoredQuery:
        moment = datetime.fromtimestamp(active_from, UTC)
        stored = StoredQuery(query_id, parse(text), created_at=moment, active_since=moment)
        self.queries[query_id] = stored
        return stored

    def upsert_results(self, rows: Iterable[WindowResult]) -> int:
        plain, n = self.upsert_server_rows(rows)
        for r in plain:
            key = (r.query_id, float(r.window_start))
            if key not in self.plain or r.updated_at >= self.plain[key].updated_at:
                self.plain[key] = r
        return n + len({(r.query_id, r.window_start) for r in plain})

    def list_queries(self) -> list[StoredQuery]:
        self.reads["list_queries"] += 1
        return list(self.queries.values())

    def read_results(self, query_id: str, start: float, end: float) -> Iterator[WindowResult]:
        self.reads["read_results"] += 1
        got = [r for (q, t), r in self.plain.items() if q == query_id and start <= t < end]
        return iter(sorted(got, key=lambda r: r.window_start))

    def read_server_results(
        self, query_id: str, server: str, start: float, end: float, page_size: int = 5000
    ) -> Iterator[WindowResult]:
        self.reads["read_server_results"] += 1
        return super().read_server_results(query_id, server, start, end, page_size)

    def read_window_servers(self, query_id: str, window_start: float) -> Iterator[WindowResult]:
        self.reads["read_window_servers"] += 1
        return super().read_window_servers(query_id, window_start)

    def list_result_servers(self, query_id: str, start: float, end: float) -> list[str]:
        self.reads["list_result_servers"] += 1
        return super().list_result_servers(query_id, start, end)

    def list_servers(self) -> dict[str, float]:
        return {}

    def get_status(self) -> dict[str, dict]:
        return {}


class MemTables:
    """The alert tables (``storage.alerts.AlertStore``) in memory: rows keyed as there (state by
    rule and instance; history by rule, window and instance; outbox by receiver and id), so a
    rewrite of a key replaces it."""

    def __init__(self) -> None:
        self.rule_bodies: dict[str, dict[str, Any]] = {}
        self.silence_bodies: dict[str, dict[str, Any]] = {}
        self.suppressed: dict[str, list[Any]] = {}
        self.rows: dict[tuple[str, str], dict[str, Any]] = {}
        self.history: dict[tuple[str, float, str], Any] = {}
        self.outbox: dict[tuple[str, str], dict[str, Any]] = {}

    def rules(self) -> dict[str, dict[str, Any]]:
        return dict(self.rule_bodies)

    def silences(self) -> dict[str, tuple[dict[str, Any], list[Any]]]:
        return {k: (b, self.suppressed.get(k, [])) for k, b in self.silence_bodies.items()}

    def current(self) -> dict[tuple[str, str], dict[str, Any]]:
        return dict(self.rows)

    def put_current(self, rows: Iterable[tuple[str, str, dict[str, Any]]]) -> None:
        self.rows.update({(r, i): b for r, i, b in rows})

    def delete_current(self, rule_id: str) -> None:
        self.rows = {k: v for k, v in self.rows.items() if k[0] != rule_id}

    def put_history(self, rows: Iterable[Any]) -> None:
        self.history.update({(h.rule_id, h.window_start, h.instance): h for h in rows})

    def enqueue(self, rows: Iterable[Any]) -> None:
        self.outbox.update({(o.receiver, o.id): o.body for o in rows})

    def set_suppressed(self, silence_id: str, suppressed: list[Any]) -> None:
        self.suppressed[silence_id] = list(suppressed)


def wait_for(check: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def evaluator_env(keyspace: str, **settings: Any) -> dict[str, str]:
    """The environment of an evaluator on ``keyspace``: a 0.3 s cycle, no settle, an hour of
    lateness and backfill, no re-notify, a 2 s lease; ``settings`` add APM_ALERTING_<NAME>."""
    timings = {
        "interval_s": 0.3,
        "settle_s": 0,
        "lateness_s": 3600,
        "renotify_s": 100_000,
        "backfill_windows": 1000,
        # A restarted evaluator waits out its killed predecessor's lease: keep it short.
        "lease_ttl_s": 2,
    }
    env = {f"APM_ALERTING_{k.upper()}": str(v) for k, v in {**timings, **settings}.items()}
    return {**os.environ, "APM_STORAGE_KEYSPACE": keyspace, **env}


def start_evaluator(env: dict[str, str], log: IO[bytes]) -> tuple[subprocess.Popen, int]:
    """The process, and the port of its /metrics."""
    port = free_port()
    cmd = [sys.executable, "-m", "apm.cli", "alert", "run"]
    env = {**env, "APM_ALERTING_METRICS_PORT": str(port)}
    return subprocess.Popen(cmd, env=env, stdout=log, stderr=log), port
