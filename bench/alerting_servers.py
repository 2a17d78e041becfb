"""The cost of one rule on a ``BY server`` query (issue 26): a cycle judges every server's series
on its own (one alert per server), reading each window once for all its servers
(``read_window_servers``), never one read per server. Measured in memory (the evaluation alone)
and against Cassandra (the real per-server tables of storage/servers.py), with the reads counted.

One query ``FROM web-* ... BY server`` with 10 s windows, one rule (``avg > 80`` for 30 s), the
default 600 s lateness: each cycle reads the new window and, in turn, the 60 open windows again
(late data, each at least every server_recheck_s: alerting/server_reads.py).
Every tenth server is at 90 for the first 63 windows (its alert fires), every other at 10; at
window 63 those go to 10 (all their alerts resolve at once). The cycles: first (the 60
backfilled windows of every server), steady (median of 3: one new window, nothing changes),
all resolve (one new window, a tenth of the servers resolve).

    .venv/bin/python -m bench.alerting_servers [--servers N] [--cassandra-servers N]

(about 4 minutes at the defaults on the shared machine, most of it writing 640,000 results).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

from alerting.cycle import PHASES, CycleReport
from alerting.evaluator import Evaluator
from alerting.settings import AlertingSettings
from apm.query import StoredQuery, WindowResult, parse
from bench.alerting_cost import QUIET, WINDOW, MemTables, now_window, schedule
from bench.base import progress, publish

__all__ = ["COMMAND", "cycles", "main"]

COMMAND = ".venv/bin/python -m bench.alerting_servers"
QUERY = "FROM web-* SELECT cpu.util WINDOW 10s COMPUTE avg BY server"
OPEN = 60  # open windows a rule keeps (late data); WINDOW and QUIET as bench.alerting_cost

Run = dict[str, tuple[CycleReport, float, int]]  # cycle -> (report, seconds, window reads)


def value(server: int, k: int) -> float:
    return 90.0 if server % 10 == 0 and k < OPEN + QUIET else 10.0


def _rows(qid: str, servers: int, origin: float) -> Iterator[WindowResult]:
    for k in range(OPEN + QUIET + 1):
        t = origin + WINDOW * k
        for n in range(servers):
            yield WindowResult(qid, t, WINDOW, {"avg": value(n, k)}, 10, t + WINDOW, f"web-{n}")


class _MemResults:
    """One BY server query's results, as Repository answers them, each read counted."""

    def __init__(self, servers: int, origin: float) -> None:
        self.stored = StoredQuery("q0", parse(QUERY))
        self.by_window: dict[float, list[WindowResult]] = {}
        for r in _rows("q0", servers, origin):
            self.by_window.setdefault(r.window_start, []).append(r)
        self.reads: Counter[str] = Counter()

    def list_queries(self) -> list[StoredQuery]:
        return [self.stored]

    def read_results(self, query_id: str, start: float, end: float) -> Any:
        self.reads["read_results"] += 1
        return iter(())  # a BY server query has no series over its whole selection

    def read_window_servers(self, query_id: str, window_start: float) -> Any:
        self.reads["read_window_servers"] += 1
        return iter(self.by_window.get(window_start, []))

    def list_servers(self) -> dict[str, float]:
        return {}

    def get_status(self) -> dict[str, dict]:
        return {}


class _Counted:
    """A Repository whose per-window reads are counted."""

    def __init__(self, repo: Any) -> None:
        self.repo, self.reads = repo, Counter[str]()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.repo, name)

    def read_window_servers(self, query_id: str, window_start: float) -> Any:
        self.reads["read_window_servers"] += 1
        return self.repo.read_window_servers(query_id, window_start)


def _body(qid: str, now: float) -> dict[str, Any]:
    return {
        "name": "web cpu per server",
        "query_id": qid,
        "function": "avg",
        "thresholds": {"warning": 80},
        "for_s": 30,
        "created_at": now - OPEN * WINDOW,
    }


def cycles(ev: Evaluator, reads: Counter[str], now: float) -> Run:
    def one(at: float) -> tuple[CycleReport, float, int]:
        reads.clear()
        began = time.perf_counter()
        report = ev.run_once(at)
        return report, time.perf_counter() - began, reads["read_window_servers"]

    return schedule(one, now)


def in_memory(servers: int) -> Run:
    now = now_window()
    results = _MemResults(servers, now - OPEN * WINDOW)
    tables = MemTables({"r0": _body("q0", now)})
    return cycles(Evaluator(results, tables, AlertingSettings(settle_s=0)), results.reads, now)


def on_cassandra(servers: int) -> Run:
    """In a keyspace of its own on the running Cassandra (dropped after)."""
    from storage.alerts import AlertStore, migrate_alerts
    from storage.repository import Repository
    from storage.schema import migrate
    from storage.settings import StorageSettings

    keyspace = f"bench_alerting_servers_{uuid.uuid4().hex[:8]}"
    now = now_window()
    with Repository.connect(StorageSettings()) as admin:
        migrate(admin.session, keyspace, 1)
        migrate_alerts(admin.session, keyspace)
        try:
            repo = Repository(admin.session, keyspace, clock=lambda: now - OPEN * WINDOW)
            qid = repo.save_query(QUERY).id
            progress(f"writing {servers * (OPEN + QUIET + 1):,} per-server results")
            repo.upsert_results(_rows(qid, servers, now - OPEN * WINDOW))
            tables = AlertStore(admin.session, keyspace)
            tables.put_rule("r0", _body(qid, now), now)
            counted = _Counted(repo)
            ev = Evaluator(counted, tables, AlertingSettings(settle_s=0))
            return cycles(ev, counted.reads, now)
        finally:
            admin.session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")


def _phases(report: CycleReport) -> str:
    return ", ".join(f"{p} {report.phases.get(p, 0.0):.2f}" for p in PHASES)


def rows(runs: list[tuple[str, int, Run]]) -> list[list[object]]:
    out: list[list[object]] = [
        ["cycle", "seconds (per server)", "window reads", "history / state rows", "phases (s)"]
    ]
    for place, servers, run in runs:
        for name, (report, seconds, reads) in run.items():
            median = f" (median of {QUIET})" if name == "steady" else ""
            out.append(
                [
                    f"1 rule, {servers:,} servers, {place}, {name}{median}",
                    f"{seconds:.2f} s ({seconds / servers * 1e6:.0f} us/server)",
                    reads,
                    f"{report.history_rows:,} / {report.state_rows:,}",
                    _phases(report),
                ]
            )
    return out


def main(command: str = COMMAND, argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.alerting_servers", description=__doc__)
    parser.add_argument("--servers", type=int, default=10_000, help="in memory (10,000)")
    parser.add_argument(
        "--cassandra-servers", type=int, default=10_000, help="on Cassandra (10,000; 0: none)"
    )
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    runs = []
    for n in sorted({1_000, args.servers}):
        progress(f"in memory: one BY server rule over {n:,} servers")
        runs.append(("in memory", n, in_memory(n)))
    if args.cassandra_servers:
        progress(f"on Cassandra: one BY server rule over {args.cassandra_servers:,} servers")
        runs.append(("on Cassandra", args.cassandra_servers, on_cassandra(args.cassandra_servers)))
    notes = (
        f"Window reads: each cycle reads the new window and, in turn, a share of the {OPEN} "
        "open ones (late data; each again at least every server_recheck_s = 60 s), every "
        "server of a window in one read (read_window_servers): the count does not "
        "grow with the servers (the first cycle reads the backfill). Phases as in 'Alerting: "
        "evaluation cost per rule'. Every state row is new in the first cycle; then only those "
        "changed in substance, and the rest once per state_refresh_s at a phase of their own. "
        f"Load average at the start {load:.1f}, at the end {os.getloadavg()[0]:.1f}: the shared "
        "2-core machine, Cassandra on the same cores; read the ratios."
    )
    title = "Alerting: one rule on a BY server query"
    given = sys.argv[1:] if argv is None else argv
    command = " ".join([command, *given])  # the figures' exact command
    return publish("alerting-servers", title, command, rows(runs), notes)


if __name__ == "__main__":
    sys.exit(main())
