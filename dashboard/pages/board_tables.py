"""The ``stat`` and ``table`` panels' figures: the newest window in the range, with notes that
say what each shows.

- A query over all its servers: one row (one number per function), "all servers".
- A ``TOP n``/``BOTTOM n BY f`` query: the stored ranking of its newest ranked window
  (``read_ranked``): rank, server, each function's value, samples, the window; then the
  "(others)" row folding the rest. Under a server filter, the ranked servers it matches (the
  ranking itself is over all the query's servers, and the panel says so).
- A ``BY server`` query without TOP: each server's newest value, sorted by the first function,
  highest first, at most :data:`dashboard.per_server.MAX_ROWS` rows.
- ``stat`` of a per-server query: per function, the highest server's newest value (the lowest
  for BOTTOM), naming the server.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from apm.query import StoredQuery, WindowResult
from apm.query_state import format_time
from apm.ranking import OTHERS
from dashboard import per_server
from dashboard.context import AppContext
from dashboard.pages.figures import read_windows

__all__ = ["stat_figure", "table_figure"]


class Row(NamedTuple):
    query: StoredQuery
    rank: int | str  # "" for a query over all its servers
    server: str
    values: Mapping[str, float]
    samples: int | None
    at: float  # the window's start


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def _tail(q: StoredQuery, start: float, end: float) -> float:
    """Where the newest window is looked for: the range's last 10 min (or PROBES windows)."""
    return max(start, end - max(per_server.TAIL_S, per_server.PROBES * q.query.window_seconds))


def _newest(app_ctx: AppContext, q: StoredQuery, start: float, end: float) -> WindowResult | None:
    """A plain query's newest window in [start, end): the tail is read first, the whole range
    only when it holds none."""
    tail = _tail(q, start, end)
    windows = read_windows(app_ctx, q.id, tail, end)
    if not windows and tail > start:
        windows = read_windows(app_ctx, q.id, start, end)
    return windows[-1] if windows else None


def _ranked_rows(
    app_ctx: AppContext, q: StoredQuery, span: tuple[float, float], server_filter: str
) -> tuple[list[Row], list[str]]:
    top = q.query.top
    assert top is not None
    ranking = per_server.newest_ranking(app_ctx, q, *span)
    label = f"{q.query.metric} {top.text}"
    if not ranking:
        minutes = (span[1] - _tail(q, *span)) / 60
        return [], [
            f"{label}: no ranking stored in the last {minutes:g} min of the range yet (the "
            "aggregator ranks each window of the query as it updates it)"
        ]
    keep = per_server.matcher(server_filter)
    ranked = [r for r in ranking if r.server != OTHERS]
    shown = [r for r in ranking if r.server == OTHERS or keep is None or keep.fullmatch(r.server)]
    at = format_time(ranking[0].window_start)
    notes = [f"{label}: the ranking of the newest ranked window ({at})"]
    if len(ranked) < len(ranking):
        notes.append(
            f"{label}: {OTHERS} folds the servers after the first {len(ranked)} (count, sum, "
            "min, max and avg only: a percentile of the rest is not kept)"
        )
    if keep is not None:
        kept = sum(1 for r in shown if r.server != OTHERS)
        notes.append(
            f"server filter {server_filter!r}: {kept} of the {len(ranked)} ranked servers "
            "match; the ranks are over all the query's servers"
        )
    rows = [Row(q, r.rank, r.server, r.values, r.samples, r.window_start) for r in shown]
    return rows, notes


def _server_rows(
    app_ctx: AppContext, q: StoredQuery, span: tuple[float, float], server_filter: str
) -> tuple[list[Row], list[str]]:
    newest = per_server.latest(app_ctx, q, *span)
    choice = per_server.choose(q, [], newest, server_filter, per_server.MAX_ROWS)
    notes = [
        n
        for n in (
            per_server.filter_note(choice, server_filter),
            per_server.choice_note(
                q, choice, "listed", f"at most {per_server.MAX_ROWS} rows, sorted by value"
            ),
        )
        if n
    ]
    rows: list[Row] = []
    for i, server in enumerate(choice.servers):
        r = newest.rows[server]
        rows.append(Row(q, i + 1, server, r.values, r.samples, r.window_start))
    return rows, notes


def _rows(
    app_ctx: AppContext, queries: Sequence[StoredQuery], span: tuple[float, float], sf: str
) -> tuple[list[Row], list[str]]:
    rows: list[Row] = []
    notes: list[str] = []
    for q in queries:
        if q.query.top is not None:
            got, said = _ranked_rows(app_ctx, q, span, sf)
        elif q.query.by_server:
            got, said = _server_rows(app_ctx, q, span, sf)
        else:
            w = _newest(app_ctx, q, *span)
            got = [Row(q, "", "all servers", w.values, w.samples, w.window_start)] if w else []
            said = []
        rows += got
        notes += said
    return rows, notes


def table_figure(
    app_ctx: AppContext, queries: Sequence[StoredQuery], span: tuple[float, float], sf: str
) -> tuple[dict, int, list[str]]:
    """A table of the queries' newest windows (see the module), its row count and notes."""
    rows, notes = _rows(app_ctx, queries, span, sf)
    keys: list[str] = []
    for q in queries:
        keys += [f.key for f in q.query.functions if f.key not in keys]
    columns: list[list[object]] = [[], [], [], *([] for _ in keys), [], []]
    for r in rows:
        values = [r.values.get(k) for k in keys]
        cells = [r.query.query.metric, r.rank, r.server, *values, r.samples, format_time(r.at)]
        for column, cell in zip(columns, cells, strict=True):
            column.append("" if cell is None else cell)
    header = ["query", "rank", "server", *keys, "samples", "window"]
    data = [
        {
            "type": "table",
            "header": {"values": header},
            "cells": {"values": columns, "format": ["", "", "", *(".4~g" for _ in keys), "", ""]},
        }
    ]
    layout = {"margin": {"l": 5, "r": 5, "t": 5, "b": 5}}
    return {"data": data, "layout": layout}, len(rows), notes


def _stat_cells(
    app_ctx: AppContext, q: StoredQuery, span: tuple[float, float], sf: str
) -> tuple[list[tuple[str, float, float]], list[str]]:
    if not q.query.by_server:
        w = _newest(app_ctx, q, *span)
        cells = [
            (f"{q.query.metric} {f.key}", w.values[f.key], w.window_start)
            for f in q.query.functions
            if w is not None and w.values.get(f.key) is not None
        ]
        return cells, []
    newest = per_server.latest(app_ctx, q, *span)
    keep = per_server.matcher(sf)
    rows = [r for s, r in newest.rows.items() if keep is None or keep.fullmatch(s)]
    bottom = q.query.top is not None and q.query.top.bottom
    word = "lowest" if bottom else "highest"
    cells = []
    for f in q.query.functions:
        valued = [(r.values[f.key], r) for r in rows if _finite(r.values.get(f.key))]
        if not valued:
            continue
        value, r = (min if bottom else max)(valued, key=lambda v: v[0])
        cells.append((f"{q.query.metric} {f.key}, {word}: {r.server}", value, r.window_start))
    if not rows:
        if newest.rows and keep is not None:
            return cells, [
                f"server filter {sf!r}: none of the {len(newest.rows)} servers in its newest "
                "window matches"
            ]
        return cells, []
    where = "" if sf == "*" else f" matching {sf!r}"
    note = (
        f"{q.query.metric} per server: each number is the {word} newest value among its "
        f"{len(rows)} servers{where}, naming that server; a table panel lists them"
    )
    return cells, [note]


def stat_figure(
    app_ctx: AppContext, queries: Sequence[StoredQuery], span: tuple[float, float], sf: str
) -> tuple[dict, int, list[str]]:
    """One number per query and function (see the module), their count and notes."""
    cells: list[tuple[str, float, float]] = []
    notes: list[str] = []
    for q in queries:
        got, said = _stat_cells(app_ctx, q, span, sf)
        cells += got
        notes += said
    n = max(len(cells), 1)
    data = [
        {
            "type": "indicator",
            "mode": "number",
            "value": value,
            "title": {
                "text": f"{label}<br><span style='font-size:0.7em'>{format_time(at)}</span>",
                "font": {"size": 12},
            },
            "number": {"valueformat": ".4~g"},
            "domain": {"x": [k / n, (k + 1) / n], "y": [0, 1]},
        }
        for k, (label, value, at) in enumerate(cells[:12])
    ]
    layout = {"margin": {"l": 10, "r": 10, "t": 45, "b": 5}}
    return {"data": data, "layout": layout}, len(cells), notes
