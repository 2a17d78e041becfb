"""Alerting benchmark (``make bench-alerting``), against the running Cassandra in a keyspace of
its own (dropped after) and Debian's prometheus-alertmanager on a free port:

1. latency from a window's end to the alert listed by the Alertmanager: the window's result is
   written at its end (what an aggregator with zero freshness delay would do), the evaluator
   (``alerting.service.run``, interval 0.45 s, settle 0) picks it up, the dispatcher posts it;
   the Alertmanager's API is polled every 20 ms;
2. the latency of 1. again under the pipeline's load (``--rate``, default 50,000 samples/s;
   bench/alerting_load.py);
3. the cost of the evaluation for 10,000 rules over 1,000 queries, per cycle, per rule and per
   phase, in memory and against Cassandra (bench/alerting_cost.py, its own section;
   ``--cost-only`` runs only this part and 4.);
4. the cost of one rule on a ``BY server`` query over 1,000 and 10,000 servers in memory and
   over 10,000 against Cassandra (bench/alerting_servers.py, its own section).

    .venv/bin/python -m bench.alerting [--rate N] [--cost-only]
"""

from __future__ import annotations

import argparse
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

from alerting.settings import AlertingSettings
from apm.query import WindowResult
from bench import alerting_cost, alerting_servers
from bench.alerting_load import under_load
from bench.base import percentile, progress, publish

__all__ = ["main"]

COMMAND = "make bench-alerting ALERTING_RATE={rate}"
TRIALS = 20


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
    book = Rulebook(repo, tables)
    rule = book.create(
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
            while not any(
                a["labels"].get("apm_rule_id") == rule.id
                and a["startsAt"].startswith(_iso(end - 1))
                for a in _active(am_url)
            ):
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
        book.delete(rule.id)
        tables.delete_current(rule.id)
    return out


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts))


def _active(url: str) -> list[dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"{url}/api/v2/alerts?active=true", timeout=5) as answer:
            return list(json.loads(answer.read()))
    except OSError:
        return []


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.alerting", description=__doc__)
    p.add_argument(
        "--cost-only",
        action="store_true",
        help="only the evaluation's cost (bench/alerting_cost.py): no Alertmanager, no load",
    )
    p.add_argument(
        "--rate",
        type=int,
        default=50_000,
        help="samples/s of the pipeline load the latency is measured under again (0: none)",
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    if args.cost_only:
        command = f"{alerting_cost.MODULE_COMMAND} --cost-only"
        return alerting_cost.main(command) or alerting_servers.main(command, [])
    quiet_load = os.getloadavg()[0]
    from storage.alerts import AlertStore, migrate_alerts
    from storage.repository import Repository
    from storage.schema import migrate
    from storage.settings import StorageSettings

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
            load, loaded = None, []
            if args.rate:
                with under_load(args.rate, seconds=TRIALS * 4 + 60) as load:
                    progress(f"latency under {args.rate:,} samples/s")
                    loaded = latency(repo, tables, keyspace)
        finally:
            admin.session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
    rows: list[list[object]] = [
        ["measure", "value"],
        [
            f"window end -> listed by Alertmanager, median of {TRIALS}",
            f"{statistics.median(lat) * 1000:.0f} ms",
        ],
        [f"same, p99 (max of {TRIALS})", f"{percentile(lat, 99) * 1000:.0f} ms"],
    ]
    if loaded:
        rows += [
            [
                f"same, under the pipeline at {args.rate:,} samples/s, median of {TRIALS}",
                f"{statistics.median(loaded) * 1000:.0f} ms",
            ],
            [f"same, p99 (max of {TRIALS})", f"{percentile(loaded, 99) * 1000:.0f} ms"],
        ]
    under = (
        f"Under load: {load.describe()}. The load is loadgen -> ingest -> Kafka -> aggregator "
        "(local Spark) -> Cassandra on the same machine (bench/alerting_load.py); the probe's "
        "windows are still written at their end, so the figure is the evaluator's and the "
        "dispatcher's part, to which the aggregator's freshness (settle_s) adds. "
        if load is not None
        else "Not measured under load (--rate 0). "
    )
    notes = under + (
        "Latency: results written at the window's end, evaluator interval 0.45 s, settle 0, "
        "so under `make run` add the aggregator's freshness (settle_s). The evaluation's cost "
        "per rule is the next section (bench/alerting_cost.py, run right after). Load average "
        f"{quiet_load:.1f} at the start. One process on the shared 2-core machine with other "
        "work: read the ratios."
    )
    command = COMMAND.format(rate=args.rate)
    publish("alerting", "Alerting: latency", command, rows, notes)
    return alerting_cost.main(command) or alerting_servers.main(command, [])


if __name__ == "__main__":
    sys.exit(main())
