"""Per-server storage benchmark (issue 26) against the running Cassandra, in a keyspace of its
own (dropped after): per-server upserts of a 10,000-server fleet beside plain ones, one
server's 24 h, one window's 10,000 servers, the servers of a day, and top-100 rankings.

    .venv/bin/python -m bench.storage_servers
"""

from __future__ import annotations

import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterable
from functools import partial

from apm.query import WindowResult
from apm.ranking import OTHERS, Ranked
from bench.base import progress, publish
from bench.stage import cassandra_pids, cpu_seconds
from storage.codec import result_columns
from storage.driver import execute_many
from storage.repository import Repository
from storage.server_tables import legacy_series_ddl, server_shard
from storage.settings import StorageSettings

__all__ = ["main"]

COMMAND = ".venv/bin/python -m bench.storage_servers"
REPEATS = 3
PAIRS = 5  # interleaved runs of the three upserts compared
DAY = 86_400
SERVERS = 10_000
TOP = 100
VALUES = {"min": 1.0, "max": 2.0, "avg": 1.5, "p99": 1.99}


def _fleet(qid: str, start: int, now: float) -> list[WindowResult]:
    """One 10 s window of every server of the fleet."""
    return [
        WindowResult(qid, start, 10, {**VALUES, "avg": i / SERVERS}, 10, now, f"web-{i:05d}")
        for i in range(SERVERS)
    ]


def _ranking(qid: str, start: int, now: float) -> list[Ranked]:
    return [
        Ranked(qid, start, 10, i + 1, f"web-{i:05d}" if i < TOP else OTHERS, VALUES, 10, now)
        for i in range(TOP + 1)
    ]


LAYOUTS = {
    "shard": "server_series (a partition per query, day and shard of 256), batched by partition",
    "server": "a partition per query, server and day (the layout before), one request a row",
    "server10": "the same, unlogged batches of 10 partitions (as that layout was written)",
}
_CASSANDRA = {"cassandra": cassandra_pids()}
# The layout before server_series, as storage.server_tables defines it for upgrades.
_LEGACY_TABLE = "bench_server_results"


def _series_only(repo: Repository, rows: list[WindowResult], layout: str) -> None:
    """The series rows of ``rows`` alone, in ``layout``: "shard" (server_series, batched by
    partition as upsert_results does), "server" (a partition a server, the layout before
    server_series, one request each) or "server10" (the same, unlogged batches of 10
    partitions, as that layout was written).

    "server" and "server10" reproduce writes the product no longer makes (the replica-spread
    batching was removed with the old layout), built here by hand so that the comparison
    keeps measuring them; they are the benchmark's, not a second writer."""
    store = repo._servers  # the comparison needs the statements themselves
    many = {"concurrency": repo.concurrency, "profile": repo.profile}
    if layout == "shard":
        groups: dict[tuple[str, int, int], list[tuple[object, ...]]] = {}
        for r in rows:
            day, shard = int(r.window_start // DAY), server_shard(r.server)
            ms, cols = round(r.window_start * 1000), result_columns(r)
            groups.setdefault((r.query_id, day, shard), []).append(
                (r.query_id, day, shard, r.server, ms, *cols)
            )
        execute_many(repo.session, store._put_series, list(groups.values()), **many)  # type: ignore[arg-type]
        return
    put = repo.session.prepare(
        f"INSERT INTO {repo.keyspace}.{_LEGACY_TABLE} (query_id, server, bucket, "
        "window_start, window_seconds, vals, samples, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?"
    )
    params = [
        (r.query_id, r.server, int(r.window_start // DAY), round(r.window_start * 1000), *cols)
        for r in rows
        for cols in (result_columns(r),)
    ]
    if layout == "server":
        execute_many(repo.session, put, [[p] for p in params], **many)  # type: ignore[arg-type]
        return
    from cassandra.concurrent import execute_concurrent
    from cassandra.query import BatchStatement, BatchType

    batches = []
    for i in range(0, len(params), 10):
        batch = BatchStatement(batch_type=BatchType.UNLOGGED)
        for p in params[i : i + 10]:
            batch.add(put, p)
        batches.append((batch, ()))
    execute_concurrent(
        repo.session, batches, concurrency=repo.concurrency, raise_on_first_error=True
    )


def _timed_cpu(run: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the stack's Cassandra) of ``run``."""
    before = cpu_seconds(_CASSANDRA)["cassandra"]
    wall = _timed(run)
    return wall, cpu_seconds(_CASSANDRA)["cassandra"] - before


def _timed(run: Callable[[], object]) -> float:
    began = time.perf_counter()
    run()
    return time.perf_counter() - began


def _median_s(run: Callable[[], object]) -> float:
    return statistics.median(_timed(run) for _ in range(REPEATS))


def _count(rows: Iterable[object]) -> int:
    return sum(1 for _ in rows)


def main() -> int:
    keyspace = f"bench_servers_{uuid.uuid4().hex[:8]}"
    repo = Repository.connect(StorageSettings.model_validate({"keyspace": keyspace}))
    try:
        today, now = int(time.time() // DAY) * DAY, round(time.time(), 3)
        fleet_q, plain_q, day_q, rank_q = (str(uuid.uuid4()) for _ in range(4))
        repo.session.execute(legacy_series_ddl(keyspace, _LEGACY_TABLE))
        progress(f"upserting windows of {SERVERS} servers, by shard and a partition a server")
        first = _timed(partial(repo.upsert_results, _fleet(fleet_q, today, now)))  # + indexes
        fleet, plain = [], []
        layouts: dict[str, list[tuple[float, float]]] = {name: [] for name in LAYOUTS}
        plain_rows = [
            WindowResult(f"{plain_q}-{i % 100}", today + 10 * (i // 100), 10, VALUES, 10, now)
            for i in range(SERVERS)
        ]
        for k in range(1, PAIRS + 1):  # interleaved, so that the machine's load hits all
            fleet.append(_timed(partial(repo.upsert_results, _fleet(fleet_q, today + 10 * k, now))))
            plain.append(_timed(partial(repo.upsert_results, plain_rows)))
            for j, layout in enumerate(LAYOUTS):
                later = _fleet(fleet_q, today + 10 * (PAIRS * (j + 1) + k), now)
                layouts[layout].append(_timed_cpu(partial(_series_only, repo, later, layout)))
        progress("one server's day: 8,640 windows")
        repo.upsert_results(
            WindowResult(day_q, today - DAY + 10 * i, 10, VALUES, 10, now, "web-00001")
            for i in range(8640)
        )
        day_s = _median_s(
            lambda: _count(repo.read_server_results(day_q, "web-00001", today - DAY, today))
        )
        window_s = _median_s(lambda: _count(repo.read_window_servers(fleet_q, today)))
        list_s = _median_s(lambda: repo.list_result_servers(fleet_q, today - DAY, today + DAY))
        progress("rankings: one hour of 10 s windows at n = 100")
        hour = [r for k in range(360) for r in _ranking(rank_q, today + 10 * k, now)]
        ranked_s = _timed(lambda: repo.upsert_ranked(hour))
        one_s = _median_s(lambda: _count(repo.read_ranked(rank_q, today + 1800, today + 1801)))
        hour_s = _median_s(lambda: _count(repo.read_ranked(rank_q, today, today + 3600)))
    finally:
        repo.session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
        repo.close()
    steady, plain_s = (statistics.median(t) for t in (fleet, plain))
    rows = [
        ["operation", "time", "rate"],
        [
            f"upsert_results, one window of {SERVERS:,} servers, first of the day (indexes)",
            f"{first * 1000:.0f} ms",
            f"{SERVERS / first:,.0f} rows/s",
        ],
        [
            f"same, the next windows (median of {PAIRS})",
            f"{steady * 1000:.0f} ms",
            f"{SERVERS / steady:,.0f} rows/s",
        ],
        *(
            [
                f"{LAYOUTS[name]}: {SERVERS:,} series rows alone, Cassandra CPU "
                f"{statistics.median(c for _, c in runs) / SERVERS * 1e6:.0f} us a row",
                f"{statistics.median(t for t, _ in runs) * 1000:.0f} ms",
                f"{SERVERS / statistics.median(t for t, _ in runs):,.0f} rows/s",
            ]
            for name, runs in layouts.items()
        ),
        [
            f"upsert_results, {SERVERS:,} plain rows (100 queries x 100 windows)",
            f"{plain_s * 1000:.0f} ms",
            f"{SERVERS / plain_s:,.0f} rows/s",
        ],
        [
            "read_server_results, one server's 24 h of 10 s windows (8,640 rows)",
            f"{day_s * 1000:.0f} ms",
            f"{8640 / day_s:,.0f} rows/s",
        ],
        [
            f"read_window_servers, one window of {SERVERS:,} servers",
            f"{window_s * 1000:.0f} ms",
            f"{SERVERS / window_s:,.0f} rows/s",
        ],
        [
            f"list_result_servers, {SERVERS:,} servers over 2 days",
            f"{list_s * 1000:.0f} ms",
            "",
        ],
        [
            f"upsert_ranked, 360 windows x {TOP + 1} rows (one hour, n = {TOP})",
            f"{ranked_s * 1000:.0f} ms",
            f"{360 / ranked_s:,.0f} windows/s",
        ],
        [f"read_ranked, one window ({TOP + 1} rows)", f"{one_s * 1000:.1f} ms", ""],
        [
            f"read_ranked, one hour ({360 * (TOP + 1):,} rows)",
            f"{hour_s * 1000:.0f} ms",
            f"{360 * (TOP + 1) / hour_s:,.0f} rows/s",
        ],
    ]
    notes = (
        f"Median of {REPEATS} runs (the upserts compared: of {PAIRS} interleaved runs; "
        "the first window: one run), local single-node Cassandra 5 (rf 1), one "
        "client process, concurrency 64, 4 functions a row, on the shared 2-core machine: "
        "read the same-run ratios (per-server rows against plain ones) more than the absolute "
        "figures. A per-server row is written twice (its server's series and its window's "
        "partition), plus the day's server list once an hour per server. The series rows "
        "alone, in each layout: Cassandra's CPU time (user + system, /proc) over the rows, "
        "what a layout costs the cores it shares, least moved by other work on them."
    )
    return publish(
        "storage-servers", "Storage: per-server series and rankings", COMMAND, rows, notes
    )


if __name__ == "__main__":
    sys.exit(main())
