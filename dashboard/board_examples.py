"""The example dashboard ``apm run`` (``make run``) creates over its example queries
(``launch.run``): the fleet's CPU, split per server (a line per server, the busiest drawn), its
top 10 servers as a table, the web tier's RPC latency, the API and DB RPC counts, this host's
CPU and memory as single stats, and a table of the newest CPU figures."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from apm.query import StoredQuery, parse
from dashboard.boards import Board, parse_board

__all__ = ["EXAMPLE_NAME", "example_board", "seed_example"]

EXAMPLE_NAME = "Example: the fleet"


def example_board(queries: Sequence[StoredQuery | None]) -> Board:
    """The example over ``queries`` (the example queries in their order: fleet CPU, web RPC
    latency, API/DB RPC count, this host's CPU, this host's memory, CPU per server, the top 10
    CPU); panels whose query is missing are left out."""
    ids = [q.id if q else "" for q in queries] + [""] * 7
    fleet, latency, count, host_cpu, host_mem, per_server, top = ids[:7]
    wanted: list[tuple[str, list[str], str, int]] = [
        ("Fleet CPU (min, max, avg, p99)", [fleet], "lines", 12),
        ("Fleet CPU per server (avg; the busiest drawn)", [per_server], "lines", 6),
        ("Top 10 CPU: the newest window's ranking", [top], "table", 6),
        ("Web tier RPC latency", [latency], "lines", 6),
        ("API and DB RPC count", [count], "lines", 6),
        ("This host: CPU now", [host_cpu], "stat", 6),
        ("This host: memory now", [host_mem], "stat", 6),
        ("CPU, newest window: the fleet and this host", [fleet, host_cpu], "table", 12),
    ]
    panels: list[dict[str, Any]] = []
    x = y = 0
    for title, qids, chart, w in wanted:
        qids = [q for q in qids if q]
        if not qids:
            continue
        h = 4 if chart != "stat" else 3
        if x + w > 12:
            x, y = 0, y + 4
        panels.append(
            {"title": title, "queries": qids, "chart": chart, "x": x, "y": y, "w": w, "h": h}
        )
        x += w
    body = {"name": EXAMPLE_NAME, "panels": panels, "time_range": "1h", "refresh_seconds": 5}
    return parse_board(body, {q.id for q in queries if q})


def seed_example(repo: Any, texts: Sequence[str]) -> str | None:
    """Creates the example dashboard over the stored queries whose text is one of ``texts``
    unless a dashboard exists already; its id, or None when nothing was created."""
    from storage.dashboards import DashboardStore

    store = DashboardStore(repo.session, repo.keyspace)
    if store.list():
        return None
    by_text = {q.text: q for q in repo.list_queries()}
    found = [by_text.get(parse(t).text) for t in texts]
    if not any(found):
        return None
    return str(store.create(example_board(found).body(), time.time()).id)
