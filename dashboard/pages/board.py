"""The dashboard page (``/dashboard?id=...``): the saved dashboard's panels on a 12-column
grid, drawn from stored results (:mod:`dashboard.pages.board_panels`) over one shared time
range, redrawn live; the server filter; and the edits (:mod:`dashboard.pages.board_edit`):
add, edit, move, remove a panel, duplicate, share and revoke. Each panel says what it shows
and why under its chart; an empty dashboard says how to fill it."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

from dash import ALL, Dash, Input, Output, State, callback_context, dcc, html, no_update

from dashboard.board_book import BoardBook, NoBoard
from dashboard.boards import CHARTS, RANGES, Board
from dashboard.context import AppContext
from dashboard.guard import StorageUnavailable, guarded
from dashboard.pages import board_edit
from dashboard.pages.board_panels import board_views, plot_height
from dashboard.pages.common import WRITES, banner, labelled, navbar
from dashboard.states import QueryStates

__all__ = ["grid", "layout", "register"]

Book = Callable[[], BoardBook]


def _panel_box(board: Board, i: int) -> html.Div:
    p = board.panels[i]
    key = {"panel": p.id}
    return html.Div(
        className="d-panel card",
        id=f"d-panel-{p.id}",
        style={"gridColumn": f"{p.x + 1} / span {p.w}", "gridRow": f"{p.y + 1} / span {p.h}"},
        children=[
            html.Div(
                className="d-panel-head",
                children=[
                    html.B(p.title or "(untitled)", className="d-title"),
                    html.Span(f" {p.chart}", className="hint"),
                    html.Span(
                        className=f"d-panel-tools {WRITES}",
                        children=[
                            html.Button("↑", id={"type": "d-up", **key}, title="move earlier"),
                            html.Button("↓", id={"type": "d-down", **key}, title="move later"),
                            html.Button("Edit", id={"type": "d-edit", **key}),
                            html.Button(
                                "Remove", id={"type": "d-remove", **key}, className="danger"
                            ),
                        ],
                    ),
                ],
            ),
            dcc.Graph(
                id={"type": "d-graph", **key},
                config={"displaylogo": False, "displayModeBar": False},
                style={"height": f"{plot_height(p)}px"},
            ),
            html.Div(id={"type": "d-notes", **key}, className="d-notes hint"),
        ],
    )


def grid(board: Board) -> list[Any]:
    if not board.panels:
        return [
            html.P(
                "This dashboard has no panels yet: add one with the form above (a title, one "
                "or more stored queries, a chart type).",
                id="d-empty",
                className="hint",
            )
        ]
    return [_panel_box(board, i) for i in range(len(board.panels))]


def _share_line(board: Board) -> str:
    if not board.shared:
        return "Not shared. A share link opens a read-only view of this dashboard, signed out."
    return "Shared: a read-only link is live (Share again to replace it, Revoke to end it)."


def _controls(board: Board, every: float) -> html.Div:
    return html.Div(
        className="card",
        children=[
            labelled(
                "Range (every panel)",
                dcc.RadioItems(
                    id="d-range", value=board.time_range, inline=True, options=list(RANGES)
                ),
            ),
            labelled(
                "Server filter (a glob such as web-*; Enter applies and saves it)",
                dcc.Input(id="d-filter", value=board.server_filter, debounce=True),
            ),
            html.Div(id="d-filter-error", className="field-error"),
            html.Div(
                "A per-server (BY server) query shows only the servers the filter matches. A "
                "plain query's one series folds in all its servers: the filter hides such a "
                "query when none of its servers match and cannot split it. Each panel says "
                "what it did.",
                className="hint",
            ),
            dcc.Checklist(
                id="d-live",
                options=[{"label": f"live, every {every:g} s", "value": "live"}],
                value=["live"] if board.refresh_seconds else [],
                inline=True,
            ),
        ],
    )


def _actions(board: Board) -> html.Div:
    return html.Div(
        className="card",
        children=[
            html.Button("Duplicate", id="d-dup", className=WRITES),
            html.A(
                "Export JSON",
                href=f"/api/dashboards/{board.id}/export",
                id="d-export",
                download=f"{board.id}.json",
            ),
            html.Div(
                [
                    html.Button("Share", id="d-share-btn"),
                    html.Button("Revoke link", id="d-revoke", className="danger"),
                ],
                className=f"field {WRITES}",
            ),
            html.Div(_share_line(board), id="d-share", className="hint"),
            html.Div(id="d-msg", className="result"),
        ],
    )


def _editor(options: list[dict[str, str]]) -> html.Div:
    return html.Div(
        className=f"card {WRITES}",
        children=[
            html.B("Add a panel", id="d-editor-title"),
            labelled("Title", dcc.Input(id="d-p-title")),
            labelled("Queries", dcc.Dropdown(id="d-p-queries", multi=True, options=options)),
            html.Div(
                "" if options else "No stored queries yet: create one on the Queries page first.",
                className="hint",
            ),
            dcc.RadioItems(id="d-p-chart", value="lines", inline=True, options=list(CHARTS)),
            dcc.RadioItems(
                id="d-p-width",
                value=6,
                inline=True,
                options=[{"label": "half width", "value": 6}, {"label": "full", "value": 12}],
            ),
            html.Button("Save panel", id="d-p-save", className="primary"),
            html.Div(id="d-p-error", className="field-error"),
        ],
    )


def layout(app_ctx: AppContext, book: Book, search: str) -> html.Div:
    board_id = (parse_qs(search.lstrip("?")).get("id") or [""])[0]
    try:
        board = book().get(board_id)
        queries = guarded(app_ctx.metrics, "list_queries", app_ctx.repo.list_queries)
    except NoBoard:
        return html.Div(
            [
                navbar("dashboards"),
                html.H2("No such dashboard", id="d-missing"),
                dcc.Link("back to the dashboards", href="/dashboards"),
            ]
        )
    except StorageUnavailable as exc:
        return html.Div([navbar("dashboards"), banner(str(exc))])
    options = [{"label": q.text, "value": q.id} for q in sorted(queries, key=lambda q: q.text)]
    every = app_ctx.settings.clamp_refresh(board.refresh_seconds or None)
    return html.Div(
        [
            navbar("dashboards"),
            dcc.Store(id="d-id", data=board.id),
            dcc.Store(id="d-editing", data=None),
            html.H2(board.name, id="d-name"),
            html.Div(
                className="row",
                children=[_controls(board, every), _actions(board), _editor(options)],
            ),
            dcc.Interval(id="d-tick", interval=every * 1000, disabled=not board.refresh_seconds),
            html.Div(grid(board), id="d-grid", className="d-grid"),
            html.Div(id="d-status", className="hint"),
        ]
    )


def register(app: Dash, app_ctx: AppContext, book: Book) -> None:
    states = QueryStates(
        app_ctx.repo,
        app_ctx.metrics,
        app_ctx.clock,
        max(10.0, app_ctx.settings.refresh_floor_seconds),
    )
    board_edit.register(app, app_ctx, book, grid)

    @app.callback(Output("d-tick", "disabled"), Input("d-live", "value"))
    def live(value: list[str] | None) -> bool:
        return not value

    @app.callback(
        Output({"type": "d-graph", "panel": ALL}, "figure"),
        Output({"type": "d-notes", "panel": ALL}, "children"),
        Output("d-status", "children"),
        Input("d-grid", "children"),
        Input("d-range", "value"),
        Input("d-tick", "n_intervals"),
        State("d-id", "data"),
    )
    def draw(_grid: Any, choice: str, _tick: Any, board_id: str) -> tuple[Any, Any, str]:
        started = time.perf_counter()
        wanted = [o["id"]["panel"] for o in callback_context.outputs_list[0]]
        try:
            board = book().get(board_id)
            end = app_ctx.clock()
            views = board_views(app_ctx, board, states, (end - RANGES.get(choice, 3600), end))
        except (StorageUnavailable, NoBoard) as exc:
            keep = [no_update] * len(wanted)
            return keep, keep, f"could not refresh, showing the last data: {exc}"
        by_id = {p.id: v for p, v in zip(board.panels, views, strict=True)}
        figures = [by_id[w].figure if w in by_id else no_update for w in wanted]
        notes = [[html.Div(n) for n in by_id[w].notes] if w in by_id else no_update for w in wanted]
        points = sum(v.points for v in views)
        elapsed = (time.perf_counter() - started) * 1000
        return figures, notes, f"{len(views)} panels, {points} points drawn in {elapsed:.0f} ms"
