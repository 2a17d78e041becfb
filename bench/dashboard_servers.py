"""``make bench-dashboard-servers`` (part of ``make bench-dashboard``): what a ``BY server``
query costs the dashboard at 10,000 servers, in-process over real Cassandra (no browser):

- a ``lines`` figure over 24 h: find the newest window (every server's result of it and of
  the one before: 2 x 10,000 rows), list the servers of the range's days, then read the
  MAX_LINES (20) busiest servers' series (20 x 8,640 windows) and build their lines; cold (the
  read cache cleared) and a live refresh (the cache re-reads each series' tail);
- a TOP 10 query's ``lines`` (its newest stored ranking names the 10 servers) and its
  ``table`` panel (that ranking: 11 rows).

Seeded in a private keyspace: 20 servers with 24 h of 10 s windows, 10,000 servers in the
newest two windows, and the newest windows' rankings. Medians of several runs; figures only.
"""

from __future__ import annotations

import logging
import math
import os
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

from apm.query import WindowResult
from apm.ranking import rank
from bench.base import progress, write_section

__all__ = ["main"]

WINDOWS, STEP, RUNS, SERVERS, BUSY = 8640, 10, 5, 10_000, 20


def _seed(repo: Any, now: float) -> tuple[Any, Any]:
    split = repo.save_query("FROM * SELECT bench.cpu WINDOW 10s COMPUTE avg BY server")
    top = repo.save_query("FROM * SELECT bench.cpu WINDOW 10s COMPUTE avg BY server TOP 10 BY avg")
    end = (now // STEP) * STEP
    newest = [end - STEP, end - 2 * STEP]
    for q in (split, top):
        busy = [
            WindowResult(
                q.id,
                end - (WINDOWS - i) * STEP,
                STEP,
                {"avg": 50 + s + 10 * math.sin(2 * math.pi * i / WINDOWS)},
                6,
                now,
                f"busy-{s:02}",
            )
            for s in range(BUSY)
            for i in range(WINDOWS)
        ]
        repo.upsert_results(busy)
        fleet = [
            WindowResult(q.id, at, STEP, {"avg": (k * 7919) % 50}, 6, now, f"host-{k:05}")
            for at in newest
            for k in range(SERVERS)
        ]
        repo.upsert_results(fleet)
        progress(f"wrote {len(busy):,} + {len(fleet):,} per-server windows of {q.id}")
    for at in newest:
        repo.upsert_ranked(rank(top.query, repo.read_window_servers(top.id, at)))
    return split, top


def _median_ms(run: Callable[[], object], before: Callable[[], None] = lambda: None) -> str:
    times = []
    for n in range(RUNS + 1):
        before()
        started = time.perf_counter()
        run()
        if n:  # the first warms the driver's prepared statements
            times.append(time.perf_counter() - started)
    return f"{statistics.median(times) * 1000:,.0f} ms (min {min(times) * 1000:,.0f})"


def main() -> int:
    from dashboard import per_server
    from dashboard.app import build_context
    from dashboard.pages.figures import figure_for
    from dashboard.settings import DashboardSettings
    from storage.repository import Repository
    from storage.settings import StorageSettings

    logging.getLogger("cassandra").setLevel(logging.ERROR)
    keyspace = f"apm_dash_servers_{uuid.uuid4().hex[:8]}"
    repo = Repository.connect(StorageSettings.model_validate({"keyspace": keyspace}))
    try:
        now = time.time()
        split, top = _seed(repo, now)
        ctx = build_context(DashboardSettings(token=uuid.uuid4().hex, port=0), repo=repo)
        assert ctx.cache is not None
        span = (now - 86_400, now)
        fig, drawn = figure_for(ctx, [split], *span)
        assert len(fig["data"]) == BUSY, drawn.notes  # type: ignore[arg-type]
        rows = [["step (one BY server query, 10,000 servers)", "median of 5"]]
        rows.append(
            [
                "newest window: 2 x 10,000 servers' results",
                _median_ms(lambda: per_server.latest(ctx, split, *span)),
            ]
        )
        rows.append(
            [
                "servers of the range's days (list_result_servers)",
                _median_ms(lambda: per_server.listed_servers(ctx, split, *span)),
            ]
        )
        rows.append(
            [
                "lines figure, 24 h, cold: the above + 20 x 8,640 windows read and drawn",
                _median_ms(lambda: figure_for(ctx, [split], *span), ctx.cache.clear),
            ]
        )
        rows.append(
            [
                "the same, a live refresh (read cache warm)",
                _median_ms(lambda: figure_for(ctx, [split], *span)),
            ]
        )
        rows.append(
            [
                "TOP 10 query's lines, 24 h, cold: its newest ranking + 10 x 8,640 windows",
                _median_ms(lambda: figure_for(ctx, [top], *span), ctx.cache.clear),
            ]
        )
        rows.append(
            [
                "TOP 10 table: the newest stored ranking",
                _median_ms(lambda: per_server.newest_ranking(ctx, top, *span)),
            ]
        )
        notes = (
            f"In-process (no browser) over a private keyspace of the running Cassandra: {BUSY} "
            f"servers with 24 h of 10 s windows ({BUSY} x {WINDOWS:,}) and {SERVERS:,} servers "
            "in the newest two windows, per query; rankings of those windows stored with "
            "upsert_ranked. The lines figure draws the MAX_LINES = 20 busiest servers (one "
            "function), downsampled to max_points per series. Machine load average during the "
            f"run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores."
        )
        print(
            write_section(
                "dashboard-servers",
                "Dashboard: a BY server query at 10,000 servers",
                "make bench-dashboard-servers",
                rows,
                notes,
            )
        )
        return 0
    finally:
        repo.session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")  # ours, made above
        repo.close()


if __name__ == "__main__":
    raise SystemExit(main())
