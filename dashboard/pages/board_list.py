"""The dashboards page (``/dashboards``): the saved dashboards with their panel count and share
state, a form to create one, a form to import an exported one under a new name, and a
duplicate and a delete button per dashboard. Every write goes through the BoardBook, so a
refusal reads as the API's 422 does: the field, then why."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from dash import ALL, Dash, Input, Output, State, callback_context, dcc, html
from dash.exceptions import PreventUpdate

from dashboard.board_book import BoardBook, NoBoard
from dashboard.boards import BoardError
from dashboard.context import AppContext
from dashboard.guard import StorageUnavailable
from dashboard.pages.common import WRITES, banner, labelled, navbar

__all__ = ["layout", "register"]

Book = Callable[[], BoardBook]


def _rows(book: Book) -> tuple[list[Any], str | None]:
    try:
        boards = book().list()
    except StorageUnavailable as exc:
        return [], str(exc)
    if not boards:
        return [
            html.P("No dashboards yet: create one below.", id="l-empty", className="hint")
        ], None
    head = html.Tr([html.Th(h) for h in ("Dashboard", "Panels", "Share link", "")])
    body = [
        html.Tr(
            id=f"l-row-{b.id}",
            children=[
                html.Td(dcc.Link(b.name, href=f"/dashboard?id={b.id}")),
                html.Td(str(len(b.panels))),
                html.Td("shared (read-only link)" if b.shared else "not shared"),
                html.Td(
                    [
                        html.Button("Duplicate", id={"type": "l-dup", "board": b.id}),
                        html.Button(
                            "Delete", id={"type": "l-del", "board": b.id}, className="danger"
                        ),
                    ],
                    className=WRITES,
                ),
            ],
        )
        for b in boards
    ]
    return [html.Table([html.Thead(head), html.Tbody(body)], id="l-table")], None


def layout(app_ctx: AppContext, book: Book) -> html.Div:
    rows, problem = _rows(book)
    return html.Div(
        [
            navbar("dashboards"),
            banner(problem),
            html.Div(
                className="card", children=[html.H3("Dashboards"), html.Div(rows, id="l-list")]
            ),
            html.Div(id="l-result", className="result"),
            html.Div(
                className=f"row {WRITES}",
                children=[
                    html.Div(
                        className="card",
                        children=[
                            html.H3("New dashboard"),
                            labelled("Name", dcc.Input(id="l-name", placeholder="web tier")),
                            html.Button("Create", id="l-create", className="primary"),
                        ],
                    ),
                    html.Div(
                        className="card",
                        children=[
                            html.H3("Import"),
                            html.P(
                                "Paste an exported dashboard (its Export link gives the JSON); "
                                "its panels must name queries stored here.",
                                className="hint",
                            ),
                            labelled(
                                "Name (empty: the exported name)", dcc.Input(id="l-import-name")
                            ),
                            dcc.Textarea(
                                id="l-import-json", style={"width": "100%", "height": 120}
                            ),
                            html.Button("Import", id="l-import"),
                        ],
                    ),
                ],
            ),
        ]
    )


def _refusal(exc: Exception) -> html.Div:
    if isinstance(exc, BoardError):
        text = f"refused ({exc.at}): {exc.detail}"
    elif isinstance(exc, NoBoard):
        text = "that dashboard no longer exists"
    else:
        text = str(exc)
    return html.Div(text, className="field-error", id="l-error")


def _done(text: str, board_id: str) -> html.Div:
    return html.Div(
        [html.Span(text + " "), dcc.Link("open it", href=f"/dashboard?id={board_id}")],
        className="ok",
        id="l-ok",
    )


def _act(book: Book, trigger: Any, name: str | None, raw: str | None) -> html.Div:
    if trigger == "l-create":
        made = book().create({"name": name or ""})
        return _done(f"Created {made.name!r}.", made.id)
    if trigger == "l-import":
        try:
            doc = json.loads(raw or "")
        except (ValueError, RecursionError):
            raise BoardError("the pasted text is not JSON", "body") from None
        made = book().create(doc, importing=True, name=name or None)
        return _done(f"Imported as {made.name!r} with {len(made.panels)} panels.", made.id)
    if trigger["type"] == "l-dup":
        made = book().duplicate(trigger["board"])
        return _done(f"Duplicated as {made.name!r}.", made.id)
    book().delete(trigger["board"])
    return html.Div("Deleted.", className="ok", id="l-ok")


def register(app: Dash, app_ctx: AppContext, book: Book) -> None:
    @app.callback(
        Output("l-result", "children"),
        Output("l-list", "children"),
        Input("l-create", "n_clicks"),
        Input("l-import", "n_clicks"),
        Input({"type": "l-dup", "board": ALL}, "n_clicks"),
        Input({"type": "l-del", "board": ALL}, "n_clicks"),
        State("l-name", "value"),
        State("l-import-name", "value"),
        State("l-import-json", "value"),
        prevent_initial_call=True,
    )
    def act(*args: Any) -> tuple[Any, Any]:
        name, import_name, raw = args[-3:]
        trigger = callback_context.triggered_id
        if trigger is None or not callback_context.triggered[0]["value"]:
            raise PreventUpdate  # buttons rendered anew, not clicked
        try:
            message = _act(book, trigger, import_name if trigger == "l-import" else name, raw)
        except (BoardError, NoBoard, StorageUnavailable) as exc:
            message = _refusal(exc)
        rows, problem = _rows(book)
        return message, rows if problem is None else [banner(problem)]
