"""Line charts from stored windows, for the chart page and the dashboards' ``lines`` panels: a
query's one series per function, or, for a ``BY server`` query, one per server and function,
at most :data:`dashboard.per_server.MAX_LINES` lines, chosen (and explained in the notes) by
:mod:`dashboard.per_server`. Missing windows are gaps, not lines; each series is downsampled
to the settings' ``max_points``. A fleet query reads the coarsest rollup tier its range fits
(:func:`fleet_rows`, :mod:`dashboard.tiered`); the hover and a note say which
(:mod:`dashboard.pages.traces`)."""

from __future__ import annotations

import textwrap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial

from apm.query import StoredQuery, WindowResult
from apm.tier_choice import choose_tier, resolution_label
from apm.tiers import tiers_of
from dashboard import per_server
from dashboard.context import AppContext
from dashboard.guard import guarded
from dashboard.pages.traces import COLORS, DASHES, SERVER_COLORS, hover, trace
from dashboard.series import build_series
from dashboard.tiered import Read, Tiered, read_tiered

__all__ = [
    "Drawn",
    "chart_points",
    "empty_figure",
    "figure_for",
    "fleet_rows",
    "read_windows",
    "server_cap",
]

_READERS = 4  # one server's read waits on Cassandra while another's decodes


@dataclass
class Drawn:
    """What a figure drew: windows read, points drawn, and what it says about per-server
    queries (which servers are drawn, what the server filter kept)."""

    windows: int = 0  # rows read: windows and rollup tier rows alike
    points: int = 0
    notes: list[str] = field(default_factory=list)
    unmatched: int = 0  # per-server queries none of whose servers the filter matches


def empty_figure(message: str, width: int = 100) -> dict[str, object]:
    """A figure that is only ``message``: why there is nothing to draw."""
    # Plotly does not wrap annotations: long reasons are broken into lines here.
    text = "<br>".join(textwrap.wrap(message, width)) or message
    return {
        "data": [],
        "layout": {
            "annotations": [{"text": text, "showarrow": False, "xref": "paper", "yref": "paper"}],
            "xaxis": {"visible": False},
            "yaxis": {"visible": False},
        },
    }


def read_windows(
    app_ctx: AppContext, query_id: str, start: float, end: float, server: str = ""
) -> list[WindowResult]:
    """A query's series (``server``: one server's series of a ``BY server`` query)."""
    if app_ctx.cache is not None:
        return app_ctx.cache.read(query_id, start, end, server)
    if server:
        return list(app_ctx.repo.read_server_results(query_id, server, start, end))
    return list(app_ctx.repo.read_results(query_id, start, end))


def _fleet_read(app_ctx: AppContext, query_id: str, cached: bool) -> Read:
    """A fleet series' reader for ``dashboard.tiered``: its windows (``tier`` None) or a
    rollup tier's rows, through the read cache when ``cached`` and there is one."""

    def read(tier: str | None, start: float, end: float) -> list[WindowResult]:
        def run() -> list[WindowResult]:
            if cached and app_ctx.cache is not None:
                return app_ctx.cache.read(query_id, start, end, tier=tier)
            if tier is None:
                return list(app_ctx.repo.read_results(query_id, start, end))
            return list(app_ctx.repo.read_results(query_id, start, end, tier=tier))

        return guarded(app_ctx.metrics, "read_results", run)

    return read


def fleet_rows(app_ctx: AppContext, q: StoredQuery, start: float, end: float) -> Tiered:
    """A fleet query's rows over [start, end) at the tier its range needs (dashboard.tiered)."""
    read, past = _fleet_read(app_ctx, q.id, True), _fleet_read(app_ctx, q.id, False)
    return read_tiered(read, q, start, end, chart_points(app_ctx), past)


def chart_points(app_ctx: AppContext) -> int:
    """The rows a chart wants: one a pixel column of its min/max downsampling
    (``max_points // 2`` columns), so a tier with fewer rows than that is too coarse."""
    return max(1, app_ctx.settings.max_points // 2)


def server_cap(q: StoredQuery, shared: int = 1) -> int:
    """How many servers of a per-server query fit in its share of MAX_LINES lines (one line
    per function; ``shared``: the per-server queries of the chart split the lines evenly)."""
    return max(1, per_server.MAX_LINES // (len(q.query.functions) * max(1, shared)))


def _plain(
    app_ctx: AppContext,
    q: StoredQuery,
    span: tuple[float, float],
    qn: int,
    overlay: bool,
    drawn: Drawn,
) -> list[dict]:
    got = fleet_rows(app_ctx, q, *span)
    series = build_series(q, got.rows, app_ctx.settings.max_points, got.steps)
    traces = []
    for fn, (key, s) in enumerate(series.items()):
        drawn.points += s.points
        label = f"{q.query.metric} {key}" + (f" [{q.id[:8]}]" if overlay else "")
        color = COLORS[(qn * 4 + fn) % len(COLORS)]
        meta = {"query_id": q.id, "function": key, "tier": got.tier or "windows"}
        line = trace(label, s, color, DASHES[qn % 4], meta)
        traces.append(hover(line, [got.label_at(x) for x in s.x]))
    drawn.windows += len(got.rows)
    if (note := got.note()) is not None:
        drawn.notes.append(f"{q.text}: {note}" if overlay else note)
    return traces


def _per_server(
    app_ctx: AppContext,
    q: StoredQuery,
    span: tuple[float, float],
    overlay: bool,
    drawn: Drawn,
    server_filter: str,
    shared: int,
) -> list[dict]:
    listed = per_server.listed_servers(app_ctx, q, *span)
    cap = server_cap(q, shared)
    ranking = []
    if q.query.top is not None and server_filter == "*" and listed:
        ranking = per_server.newest_ranking(app_ctx, q, *span)
    if ranking:
        choice = per_server.ranked_choice(q, ranking, listed, cap)
    else:
        newest = per_server.latest(app_ctx, q, *span) if listed else per_server.Latest(None, {})
        choice = per_server.choose(q, listed, newest, server_filter, cap)
    nfn = len(q.query.functions)
    words = f"at most {per_server.MAX_LINES} lines a chart" + (
        f": {cap} servers x {nfn} functions" if nfn > 1 else ""
    )
    if shared > 1:
        words += f", shared by its {shared} per-server queries"
    drawn.notes += [
        n
        for n in (
            per_server.filter_note(choice, server_filter),
            per_server.choice_note(q, choice, "drawn", words),
        )
        if n
    ]
    if choice.total and not choice.matching:
        drawn.unmatched += 1
    shown = resolution_label(q.query.window_seconds, None)
    start, end = span
    if choose_tier(start, end, chart_points(app_ctx), tiers_of(q.query.window_seconds)):
        # A fleet series of this range would show a rollup tier; say why this one does not.
        drawn.notes.append(
            f"{q.query.metric} per server: showing {shown} (per-server series have no "
            "rollup tiers yet)"
        )

    def one(server: str) -> list[WindowResult]:
        read = partial(read_windows, app_ctx, q.id, *span, server)
        return guarded(app_ctx.metrics, "read_server_results", read)

    with ThreadPoolExecutor(max(1, min(_READERS, len(choice.servers)))) as pool:
        series_of = list(pool.map(one, choice.servers))
    traces = []
    for i, (server, windows) in enumerate(zip(choice.servers, series_of, strict=True)):
        drawn.windows += len(windows)
        series = build_series(q, windows, app_ctx.settings.max_points)
        for fn, (key, s) in enumerate(series.items()):
            drawn.points += s.points
            label = server + (f" {key}" if nfn > 1 else "") + (f" [{q.id[:8]}]" if overlay else "")
            color = SERVER_COLORS[i % len(SERVER_COLORS)]
            meta = {"query_id": q.id, "function": key, "server": server, "tier": "windows"}
            traces.append(hover(trace(label, s, color, DASHES[fn % 4], meta), [shown] * len(s.x)))
    return traces


def figure_for(
    app_ctx: AppContext,
    queries: list[StoredQuery],
    start: float,
    end: float,
    server_filter: str = "*",
) -> tuple[dict[str, object], Drawn]:
    """The figure for ``queries`` over [start, end), and what it drew. ``server_filter`` (a
    glob) narrows the per-server queries' servers; a plain query's series folds in all its
    servers whatever the filter (the dashboard says so: ``board_panels.filter_notes``)."""
    traces: list[dict[str, object]] = []
    drawn = Drawn()
    overlay = len(queries) > 1
    shared = sum(1 for q in queries if q.query.by_server)
    for qn, q in enumerate(queries):
        if q.query.by_server:
            span = (start, end)
            traces += _per_server(app_ctx, q, span, overlay, drawn, server_filter, shared)
            continue
        traces += _plain(app_ctx, q, (start, end), qn, overlay, drawn)
    title = queries[0].text if len(queries) == 1 else f"{len(queries)} queries overlaid"
    fig: dict[str, object] = {
        "data": traces,
        "layout": {
            "title": {"text": title, "font": {"size": 14}},
            "uirevision": "keep",
            "xaxis": {"type": "date", "range": [start * 1000, end * 1000]},
            "yaxis": {"rangemode": "normal"},
            "legend": {"orientation": "h", "y": -0.15},
            "margin": {"l": 50, "r": 20, "t": 40, "b": 40},
        },
    }
    return fig, drawn
