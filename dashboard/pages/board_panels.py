"""One dashboard's panels as Plotly figures, for the dashboard page and the signed-out share
view alike: ``lines`` draws like the chart page (:func:`dashboard.pages.figures.figure_for`:
a ``BY server`` query one line per server and function, capped), ``stat`` and ``table`` show
the newest window in the range (:mod:`dashboard.pages.board_tables`: a TOP query's ranking).
Each panel carries notes that say what it shows and why: a query deleted since, a query with no
data yet (its state's reason), which servers a per-server query shows, and what the server
filter did.

The server filter is a glob over server names. A ``BY server`` query's series are per server,
so the filter keeps the servers it matches. A plain query's one series folds in all its
servers, so the filter cannot split it: such a query whose servers (those that reported within
the retention) include none matching the filter is not drawn, and one that includes some is
drawn whole, with a note counting how many match."""

from __future__ import annotations

import re
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from apm.query import StoredQuery
from apm.query_glob import glob_to_regex
from dashboard.boards import Board, Panel
from dashboard.context import AppContext
from dashboard.guard import guarded
from dashboard.pages.board_tables import stat_figure, table_figure
from dashboard.pages.figures import empty_figure, figure_for, fleet_rows
from dashboard.states import Evaluated, QueryStates

__all__ = ["PanelView", "board_views", "filter_notes", "panel_view", "plot_height"]

_READERS = 4  # concurrent reads of a draw: one waits on Cassandra while another decodes


@dataclass
class PanelView:
    figure: dict[str, object]
    notes: list[str] = field(default_factory=list)
    points: int = 0


def _empty(message: str) -> dict[str, object]:
    fig = empty_figure(message, 60)
    layout = fig["layout"]
    assert isinstance(layout, dict)
    layout["margin"] = {"l": 10, "r": 10, "t": 10, "b": 10}
    return fig


def filter_notes(
    queries: list[StoredQuery], server_filter: str, servers: Mapping[str, float]
) -> tuple[list[StoredQuery], list[str]]:
    """The queries a filter keeps, and what it did to each plain query (nothing for ``*``).
    A ``BY server`` query is kept: the filter narrows its servers where it is drawn."""
    if server_filter == "*":
        return queries, []
    wanted = re.compile(glob_to_regex(server_filter))
    kept, notes = [], []
    for q in queries:
        if q.query.by_server:
            kept.append(q)
            continue
        selected = [s for s in servers if q.query.matches(s)]
        both = sum(1 for s in selected if wanted.fullmatch(s))
        label = q.text if len(q.text) <= 60 else q.text[:57] + "..."
        if not selected:
            kept.append(q)
            notes.append(f"{label}: none of its servers has reported yet; shown unfiltered")
        elif not both:
            notes.append(
                f"{label}: none of its {len(selected)} servers matches {server_filter!r}; not drawn"
            )
        elif both == len(selected):
            kept.append(q)
            notes.append(f"{label}: all {both} of its servers match {server_filter!r}")
        else:
            kept.append(q)
            notes.append(
                f"{label}: {both} of its {len(selected)} servers match {server_filter!r}; the "
                f"series still folds in all {len(selected)} (per-server series are not stored "
                "yet)"
            )
    return kept, notes


def _why_empty(queries: list[StoredQuery], states: Mapping[str, Evaluated]) -> str:
    for q in queries:
        e = states.get(q.id)
        if e is not None:
            if e.state == "evaluated":
                return f"no windows in this range; {e.reason}"
            return f"{e.state}: {e.reason}"
    return "no data in this range"


def panel_view(
    app_ctx: AppContext,
    board: Board,
    panel: Panel,
    stored: Mapping[str, StoredQuery],
    states: Mapping[str, Evaluated],
    servers: Mapping[str, float],
    span: tuple[float, float],
) -> PanelView:
    """The figure and notes of ``panel`` over ``span`` (start, end) under the board's filter.
    ``stored``: the stored queries by id (a missing id was deleted)."""
    start, end = span
    notes = [
        f"query {qid} was deleted; edit this panel to remove it or pick another"
        for qid in panel.queries
        if qid not in stored
    ]
    present = [stored[qid] for qid in panel.queries if qid in stored]
    if not present:
        gone = _empty("its queries were deleted; edit or remove this panel")
        return _sized(PanelView(gone, notes), panel)
    shown, filtered = filter_notes(present, board.server_filter, servers)
    notes += filtered
    if not shown:
        none = _empty(f"no server of its queries matches {board.server_filter}")
        return _sized(PanelView(none, notes), panel)
    sf = board.server_filter
    unmatched = 0
    said: list[str] = []
    if panel.chart == "lines":
        fig, drawn = figure_for(app_ctx, shown, start, end, sf)
        points, unmatched = drawn.points, drawn.unmatched
        notes += drawn.notes
        layout = fig["layout"]
        assert isinstance(layout, dict)
        layout["title"] = None
        layout["margin"] = {"l": 45, "r": 10, "t": 10, "b": 30}
        layout["legend"] = {"orientation": "h", "y": -0.2, "font": {"size": 10}}
    else:
        make = stat_figure if panel.chart == "stat" else table_figure
        fig, points, said = make(app_ctx, shown, span, sf)
        notes += said
    if not points:
        # A table's or stat's own reason (no ranking yet, no server matching) comes first.
        why = said[0] if panel.chart != "lines" and said else _why_empty(shown, states)
        if unmatched == len(shown):
            why = f"no server of its queries matches {sf}"
        fig = _empty(why)
    return _sized(PanelView(fig, notes, points), panel)


def plot_height(panel: Panel) -> int:
    """Pixels for a panel's plot: its grid rows (70 px and a 10 px gap each) less its title
    and notes lines, so that both views draw the same size."""
    return max(80, panel.h * 80 - 10 - 80)


def _sized(view: PanelView, panel: Panel) -> PanelView:
    layout = view.figure.setdefault("layout", {})
    assert isinstance(layout, dict)
    layout["height"] = plot_height(panel)
    return view


def _prefetch(app_ctx: AppContext, queries: list[StoredQuery], span: tuple[float, float]) -> None:
    """Reads the lines panels' fleet queries into the read cache concurrently, at the tier
    their panel will read (``fleet_rows``): each read spends much of its time waiting on
    Cassandra, which the others' decoding fills."""
    fleet = [q for q in queries if not q.query.by_server]
    if len(fleet) < 2 or app_ctx.cache is None:
        return
    with ThreadPoolExecutor(min(_READERS, len(fleet))) as pool:
        list(pool.map(lambda q: fleet_rows(app_ctx, q, *span), fleet))


def board_views(
    app_ctx: AppContext, board: Board, states: QueryStates, span: tuple[float, float]
) -> list[PanelView]:
    """Every panel's view: one read of the stored queries, their states and the servers."""
    if not board.panels:
        return []
    g = app_ctx.metrics
    stored = {q.id: q for q in guarded(g, "list_queries", app_ctx.repo.list_queries)}
    wanted = {qid for p in board.panels for qid in p.queries if qid in stored}
    evaluated = states.evaluate([stored[q] for q in sorted(wanted)])
    servers = {} if board.server_filter == "*" else guarded(g, "servers", app_ctx.repo.list_servers)
    lines = {q for p in board.panels if p.chart == "lines" for q in p.queries if q in stored}
    _prefetch(app_ctx, [stored[q] for q in sorted(lines)], span)
    return [panel_view(app_ctx, board, p, stored, evaluated, servers, span) for p in board.panels]
