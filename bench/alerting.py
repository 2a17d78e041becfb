"""Alerting benchmark (``make bench-alerting``), against the running Cassandra in a keyspace of
its own (dropped after) and Debian's prometheus-alertmanager on a free port:

1. latency from a window's end to the alert listed by the Alertmanager: the window's result is
   written at its end (what an aggregator with zero freshness delay would do), the evaluator
   (``alerting.service.run``, interval 0.45 s, settle 0) picks it up, the dispatcher posts it;
   the Alertmanager's API is polled every 20 ms;
2. the cost of one evaluation cycle for 10,000 rules over 1,000 queries (10 s windows, the
   default 600 s lateness: 60 open windows refolded per rule), in memory (the evaluation
   alone) and against Cassandra (reads, history, state rows).

    .venv/bin/python -m bench.alerting
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from alerting.evaluator import Evaluator
from alerting.settings import AlertingSettings
from apm.query import StoredQuery, WindowResult, parse
from bench.base import percentile, progress, publish

__all__ = ["main"]

COMMAND = ".venv/bin/python -m bench.alerting"
TRIALS = 20
RULES, QUERIES = 10_000, 1_000


class _MemResults:
    def __init__(self, queries: int) -> None:
        q = parse("FROM * SELECT cpu.util WINDOW 10s COMPUTE avg")
        self.stored = {f"q{i}": StoredQuery(f"q{i}", q) for i in range(queries)}

    def list_queries(self) -> list[StoredQuery]:
        return list(self.stored.values())

    def read_results(self, query_id: str, start: float, end: float) -> Any:
        t = math.ceil(start / 10) * 10
        while t < end:
            yield WindowResult(query_id, t, 10, {"avg": 50.0 + (t % 70)}, 10, t + 10)
            t += 10

    def list_servers(self) -> dict[str, float]:
        return {}

    def get_status(self) -> dict[str, dict]:
        return {}


class _MemTables:
    def __init__(self, rules: dict[str, dict[str, Any]]) -> None:
        self._rules = rules
        self._current: dict[tuple[str, str], dict[str, Any]] = {}

    def rules(self) -> dict[str, dict[str, Any]]:
        return self._rules

    def silences(self) -> dict:
        return {}

    def current(self) -> dict:
        return dict(self._current)

    def put_current(self, rows: Any) -> None:
        self._current.update({(r, i): b for r, i, b in rows})

    def delete_current(self, rule_id: str) -> None:
        self._current = {k: v for k, v in self._current.items() if k[0] != rule_id}

    def put_history(self, rows: Any) -> None:
        list(rows)

    def enqueue(self, rows: Any) -> None:
        list(rows)

    def set_suppressed(self, silence_id: str, suppressed: Any) -> None:
        pass


def _rule_bodies(query_ids: list[str], now: float) -> dict[str, dict[str, Any]]:
    return {
        f"r{i}": {
            "name": f"rule {i}",
            "query_id": query_ids[i % len(query_ids)],
            "function": "avg",
            "thresholds": {"warning": 80 + i % 10, "critical": 110},
            "for_s": 30,
            "created_at": now - 600,
        }
        for i in range(RULES)
    }


def _cycles(ev: Evaluator, now: float) -> tuple[float, float]:
    began = time.perf_counter()
    ev.run_once(now)
    cold = time.perf_counter() - began
    began = time.perf_counter()
    ev.run_once(now + 10)  # the next window: one new window, 60 open ones refolded per rule
    return cold, time.perf_counter() - began


def cost_in_memory() -> tuple[float, float]:
    now = math.floor(time.time() / 10) * 10.0
    results = _MemResults(QUERIES)
    tables = _MemTables(_rule_bodies(list(results.stored), now))
    return _cycles(Evaluator(results, tables, AlertingSettings(settle_s=0)), now)


def cost_on_cassandra(repo: Any, tables: Any) -> tuple[float, float]:
    now = math.floor(time.time() / 10) * 10.0
    ids = [
        repo.save_query("FROM * SELECT cpu.util WINDOW 10s COMPUTE avg").id for _ in range(QUERIES)
    ]
    repo.upsert_results(
        WindowResult(q, now - 600 + 10 * k, 10, {"avg": 50.0 + k}, 10, now)
        for q in ids
        for k in range(61)
    )
    for rule_id, body in _rule_bodies(ids, now).items():
        tables.put_rule(rule_id, body, now)
    return _cycles(Evaluator(repo, tables, AlertingSettings(settle_s=0)), now)


def latency(repo: Any, tables: Any, keyspace: str) -> list[float]:
    from alerting.rulebook import Rulebook
    from alerting.service import run
    from launch.alertmanager import command
    from launch.probe import free_port

    port, workdir = free_port(), Path(tempfile.mkdtemp(prefix="bench-am-"))
    am_url = f"http://127.0.0.1:{port}"
    am = subprocess.Popen(
        command(workdir, port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    query = repo.save_query("FROM * SELECT cpu.util WINDOW 1s COMPUTE avg")
    Rulebook(repo, tables).create(
        {"name": "bench", "query_id": query.id, "function": "avg", "thresholds": {"warning": 90}},
        time.time(),
    )
    os.environ["APM_STORAGE_KEYSPACE"] = keyspace
    stop = threading.Event()
    settings = AlertingSettings(
        # 0.45 s does not divide the 1 s windows, so the trials meet every phase of the tick.
        interval_s=0.45,
        settle_s=0,
        alertmanager_url=am_url,
        metrics_port=0,
        lateness_s=30,
    )
    worker = threading.Thread(target=run, args=(settings, stop), daemon=True)
    time.sleep(1.0)
    worker.start()
    out = []
    try:
        for trial in range(TRIALS):
            end = math.floor(time.time()) + 1.0
            time.sleep(max(0.0, end - time.time()))
            repo.upsert_results([WindowResult(query.id, end - 1, 1, {"avg": 95.0}, 10, end)])
            while not any(a["startsAt"].startswith(_iso(end - 1)) for a in _active(am_url)):
                time.sleep(0.02)
                if time.time() - end > 30:
                    raise RuntimeError("the alert did not reach the Alertmanager in 30 s")
            out.append(time.time() - end)
            progress(f"trial {trial + 1}/{TRIALS}: {out[-1] * 1000:.0f} ms")
            repo.upsert_results([WindowResult(query.id, end, 1, {"avg": 10.0}, 10, end + 1)])
            time.sleep(2.5)  # resolved, and the next window starts a new alert
    finally:
        stop.set()
        worker.join(15)
        am.terminate()
        am.wait(15)
    return out


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts))


def _active(url: str) -> list[dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"{url}/api/v2/alerts?active=true", timeout=5) as answer:
            return list(json.loads(answer.read()))
    except OSError:
        return []


def main() -> int:
    from storage.alerts import AlertStore, migrate_alerts
    from storage.repository import Repository
    from storage.schema import migrate
    from storage.settings import StorageSettings

    progress(f"in memory: {RULES} rules over {QUERIES} queries")
    mem_cold, mem_steady = cost_in_memory()
    keyspace = f"bench_alerting_{uuid.uuid4().hex[:8]}"
    base = StorageSettings()
    with Repository.connect(base) as admin:
        migrate(admin.session, keyspace, 1)
        migrate_alerts(admin.session, keyspace)
        try:
            repo = Repository(admin.session, keyspace)
            tables = AlertStore(admin.session, keyspace)
            progress("latency: window end -> Alertmanager")
            lat = latency(repo, tables, keyspace)
            progress(f"on Cassandra: {RULES} rules over {QUERIES} queries")
            cas_cold, cas_steady = cost_on_cassandra(repo, tables)
        finally:
            admin.session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
    rows: list[list[object]] = [
        ["measure", "value"],
        [
            f"window end -> listed by Alertmanager, median of {TRIALS}",
            f"{statistics.median(lat) * 1000:.0f} ms",
        ],
        [f"same, p99 (max of {TRIALS})", f"{percentile(lat, 99) * 1000:.0f} ms"],
        [
            f"one cycle, {RULES} rules / {QUERIES} queries, in memory, steady",
            f"{mem_steady:.2f} s ({mem_steady / RULES * 1e6:.0f} us/rule)",
        ],
        ["same, first cycle (60 backfill windows per rule)", f"{mem_cold:.2f} s"],
        [
            f"one cycle, {RULES} rules / {QUERIES} queries, on Cassandra, steady",
            f"{cas_steady:.2f} s ({cas_steady / RULES * 1e6:.0f} us/rule)",
        ],
        ["same, first cycle", f"{cas_cold:.2f} s"],
    ]
    verdict = "keeps up with" if cas_steady < 10 else "falls behind"
    notes = (
        f"The steady cycle on Cassandra {verdict} 10 s windows ({cas_steady:.1f} s per cycle). "
        "Latency: results written at the window's end, evaluator interval 0.45 s, settle 0, "
        "so under `make run` add the aggregator's freshness (settle_s); not measured under "
        "`make run`'s load nor at 50,000 samples/s. The two first cycles differ in work: in "
        "memory the values cycle through the thresholds (27 transitions per rule over the 60 "
        "backfilled windows), on Cassandra they rise once (2 per rule). Steady: one new window "
        "per rule, 60 open ones compared, one state row written per rule. One process on the "
        "shared 2-core machine, load average 7-11 from other work: read the ratios."
    )
    return publish("alerting", "Alerting: latency and cost per rule", COMMAND, rows, notes)


if __name__ == "__main__":
    sys.exit(main())
