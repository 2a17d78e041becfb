"""Storage benchmark against the running Cassandra, in a keyspace of its own (dropped after):
result upserts (batched per partition vs one request per row), range reads, last_result_at.

    .venv/bin/python -m bench.storage
"""

from __future__ import annotations

import statistics
import sys
import time
import uuid
from collections.abc import Callable

from apm.query import WindowResult
from bench.base import progress, publish
from storage.driver import execute_many
from storage.repository import Repository
from storage.schema import bucket_of
from storage.settings import StorageSettings

__all__ = ["main"]

COMMAND = ".venv/bin/python -m bench.storage"
REPEATS = 3
DAY = 86_400


def _rows(queries: list[str], start: int, count: int, window: int) -> list[WindowResult]:
    now = time.time()
    return [
        WindowResult(
            q,
            start + i * window,
            window,
            {"min": float(i), "max": i + 1.0, "avg": i + 0.5, "p99": i + 0.9},
            100,
            now,
        )
        for q in queries
        for i in range(count)
    ]


def _median_s(run: Callable[[], object]) -> float:
    times = []
    for _ in range(REPEATS):
        began = time.perf_counter()
        run()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def main() -> int:
    keyspace = f"bench_storage_{uuid.uuid4().hex[:8]}"
    repo = Repository.connect(StorageSettings.model_validate({"keyspace": keyspace}))
    try:
        today = int(time.time() // DAY) * DAY
        queries = [str(uuid.uuid4()) for _ in range(100)]
        batch = _rows(queries, today, 200, 1)  # 100 queries x 200 one-second windows
        progress(f"upserting {len(batch)} rows x {REPEATS} (batched per partition)")
        batched = _median_s(lambda: repo.upsert_results(batch))
        params = [
            [
                (
                    r.query_id,
                    bucket_of(r.window_start),
                    round(r.window_start * 1000),
                    r.window_seconds,
                    r.values,
                    r.samples,
                    round(r.updated_at * 1000),
                    round(r.updated_at * 1e6),
                )
            ]
            for r in batch
        ]
        progress(f"upserting {len(batch)} rows x {REPEATS} (one request per row)")
        single = _median_s(
            lambda: execute_many(
                repo.session,
                repo._cql.upsert,
                params,
                concurrency=repo.concurrency,
                profile=repo.profile,
            )
        )
        day_q, month_q = str(uuid.uuid4()), str(uuid.uuid4())
        repo.upsert_results(_rows([day_q], today - DAY, 8640, 10))  # one day of 10s windows
        repo.upsert_results(_rows([month_q], today - 29 * DAY, 720, 3600))  # 30 days of 1h
        progress("reading ranges")
        day_s = _median_s(lambda: sum(1 for _ in repo.read_results(day_q, today - DAY, today)))
        month_s = _median_s(
            lambda: sum(1 for _ in repo.read_results(month_q, today - 29 * DAY, today + DAY))
        )
        wide_s = _median_s(lambda: sum(1 for _ in repo.read_results(month_q, 0, 2e9)))
        last_s = _median_s(lambda: repo.last_result_at(month_q))
    finally:
        repo.session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
        repo.close()
    rows = [
        ["operation", "median", "rate"],
        [
            f"upsert_results, {len(batch)} rows of 100 queries (batched per partition)",
            f"{batched * 1000:.0f} ms",
            f"{len(batch) / batched:,.0f} rows/s",
        ],
        [
            "same rows, one INSERT request per row",
            f"{single * 1000:.0f} ms",
            f"{len(batch) / single:,.0f} rows/s",
        ],
        [
            "read_results, 1 day of 10s windows (8,640 rows, 1 bucket)",
            f"{day_s * 1000:.0f} ms",
            f"{8640 / day_s:,.0f} rows/s",
        ],
        [
            "read_results, 30 days of 1h windows (720 rows, 30 buckets)",
            f"{month_s * 1000:.0f} ms",
            f"{720 / month_s:,.0f} rows/s",
        ],
        [
            "read_results, same query over 1970..2033 (bucket index)",
            f"{wide_s * 1000:.0f} ms",
            f"{720 / wide_s:,.0f} rows/s",
        ],
        ["last_result_at", f"{last_s * 1000:.1f} ms", ""],
    ]
    notes = (
        f"Median of {REPEATS} runs, local single-node Cassandra 5 (rf 1), one client "
        "process, concurrency 64, on the shared 2-core machine while other benchmarks and "
        "tests run: read the ratios more than the absolute figures."
    )
    return publish("storage", "Storage: Cassandra repository", COMMAND, rows, notes)


if __name__ == "__main__":
    sys.exit(main())
