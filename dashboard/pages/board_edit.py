"""The dashboard page's edits, in one callback (one owner for each output): save a panel (new,
or the one being edited), move a panel earlier or later, remove it, fill the editor to edit
it; apply the server filter and the range (both saved with the dashboard); duplicate; share
and revoke. Every save goes through the BoardBook (a refusal is shown by the field it names,
nothing is stored). Moving and removing lay the panels out again in their order
(:func:`flow`), two half-width panels to a row."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from dash import ALL, Dash, Input, Output, State, callback_context, dcc, html, no_update
from dash.exceptions import PreventUpdate
from flask import request

from dashboard.board_book import BoardBook, NoBoard
from dashboard.boards import GRID_COLUMNS, Board, BoardError, Panel, parse_board
from dashboard.context import AppContext
from dashboard.guard import StorageUnavailable

__all__ = ["flow", "moved", "register", "save_panel"]

Book = Callable[[], BoardBook]
_OUTPUTS = (
    ("d-grid", "children"),
    ("d-msg", "children"),
    ("d-share", "children"),
    ("d-filter-error", "children"),
    ("d-p-error", "children"),
    ("d-p-title", "value"),
    ("d-p-queries", "value"),
    ("d-p-chart", "value"),
    ("d-p-width", "value"),
    ("d-editing", "data"),
    ("d-editor-title", "children"),
)


def flow(panels: list[Panel]) -> list[Panel]:
    """The panels placed left to right, top to bottom, in their order."""
    out, x, y, row_h = [], 0, 0, 0
    for p in panels:
        if x + p.w > GRID_COLUMNS:
            x, y, row_h = 0, y + row_h, 0
        out.append(replace(p, x=x, y=y))
        x, row_h = x + p.w, max(row_h, p.h)
    return out


def save_panel(board: Board, editing: str | None, form: dict[str, Any]) -> Board:
    raw = {
        "id": editing or f"p{uuid.uuid4().hex[:8]}",
        "title": form["title"] or "",
        "queries": form["queries"] or [],
        "chart": form["chart"],
        "w": form["width"],
        "h": 4 if form["chart"] == "lines" else 3,
    }
    panels = [p.to_dict() for p in board.panels]
    at = next((i for i, p in enumerate(panels) if p["id"] == editing), None)
    if at is None:
        panels.append(raw)
    else:
        panels[at] = raw
    body = {**board.body(), "panels": panels}
    try:
        parsed = parse_board(body)
    except BoardError as exc:
        # The editor's panel is the one refused: name its field, not its index.
        raise BoardError(exc.detail, exc.at.split(".", 1)[-1]) from None
    return parsed.with_panels(flow(list(parsed.panels)))


def moved(board: Board, pid: str, by: int) -> Board:
    panels = list(board.panels)
    i = next(k for k, p in enumerate(panels) if p.id == pid)
    j = max(0, min(len(panels) - 1, i + by))
    panels[i], panels[j] = panels[j], panels[i]
    return board.with_panels(flow(panels))


def _share_link(token: str) -> html.Div:
    url = request.host_url.rstrip("/") + "/share/" + token
    return html.Div(
        ["Shared, read-only, no sign-in needed: ", html.A(url, href=url, id="d-share-url")],
        className="ok",
    )


def _act(book: Book, board_id: str, trigger: Any, values: dict[str, Any]) -> dict[str, Any]:
    """What to change on the page: output name -> value."""
    b = book()
    board = b.get(board_id)
    kind = trigger if isinstance(trigger, str) else trigger["type"]
    if kind == "d-p-save":
        saved = b.save(board_id, save_panel(board, values["editing"], values))
        return {
            "d-grid": saved,
            "d-p-error": "",
            "d-editing": None,
            "d-p-title": "",
            "d-p-queries": [],
            "d-editor-title": "Add a panel",
            "d-msg": f"Saved; {len(saved.panels)} panels.",
        }
    if kind in ("d-up", "d-down"):
        return {
            "d-grid": b.save(board_id, moved(board, trigger["panel"], -1 if kind == "d-up" else 1))
        }
    if kind == "d-remove":
        kept = [p for p in board.panels if p.id != trigger["panel"]]
        return {
            "d-grid": b.save(board_id, board.with_panels(flow(kept))),
            "d-msg": "Panel removed.",
        }
    if kind == "d-edit":
        p = next(p for p in board.panels if p.id == trigger["panel"])
        return {
            "d-editing": p.id,
            "d-p-title": p.title,
            "d-p-queries": list(p.queries),
            "d-p-chart": p.chart,
            "d-p-width": 12 if p.w > 6 else 6,
            "d-editor-title": f"Edit panel {p.title or p.id}",
        }
    if kind == "d-filter":
        try:
            changed = parse_board({**board.body(), "server_filter": values["filter"] or "*"})
        except BoardError as exc:
            return {"d-filter-error": exc.detail}
        return {
            "d-grid": b.save(board_id, changed.with_panels(list(board.panels))),
            "d-filter-error": "",
        }
    if kind == "d-range":
        b.save(board_id, replace(board, time_range=values["range"]))
        return {}
    if kind == "d-dup":
        made = b.duplicate(board_id)
        return {
            "d-msg": html.Span(
                [
                    f"Duplicated as {made.name!r}: ",
                    dcc.Link("open it", href=f"/dashboard?id={made.id}"),
                ]
            )
        }
    if kind == "d-share-btn":
        return {"d-share": _share_link(b.share(board_id))}
    if b.revoke(board_id):
        return {"d-share": "Revoked: the link answers 404 now.", "d-msg": ""}
    return {"d-share": "There was no share link to revoke."}


def register(app: Dash, app_ctx: AppContext, book: Book, grid: Callable[[Board], Any]) -> None:
    @app.callback(
        *[Output(i, p) for i, p in _OUTPUTS],
        Input("d-p-save", "n_clicks"),
        Input({"type": "d-up", "panel": ALL}, "n_clicks"),
        Input({"type": "d-down", "panel": ALL}, "n_clicks"),
        Input({"type": "d-edit", "panel": ALL}, "n_clicks"),
        Input({"type": "d-remove", "panel": ALL}, "n_clicks"),
        Input("d-filter", "value"),
        Input("d-range", "value"),
        Input("d-dup", "n_clicks"),
        Input("d-share-btn", "n_clicks"),
        Input("d-revoke", "n_clicks"),
        State("d-id", "data"),
        State("d-p-title", "value"),
        State("d-p-queries", "value"),
        State("d-p-chart", "value"),
        State("d-p-width", "value"),
        State("d-editing", "data"),
        prevent_initial_call=True,
    )
    def edit(*args: Any) -> tuple[Any, ...]:
        trigger = callback_context.triggered_id
        fired = callback_context.triggered[0]["value"] if callback_context.triggered else None
        if trigger is None or (trigger not in ("d-filter", "d-range") and not fired):
            raise PreventUpdate  # buttons rendered anew, not clicked
        board_id, title, queries, chart, width, editing = args[-6:]
        values = {
            "title": title,
            "queries": queries,
            "chart": chart,
            "width": width,
            "editing": editing,
            "filter": args[5],
            "range": args[6],
        }
        try:
            changes = _act(book, board_id, trigger, values)
        except BoardError as exc:
            changes = {"d-p-error": f"{exc.at}: {exc.detail}"}
        except (NoBoard, StorageUnavailable) as exc:
            changes = {
                "d-msg": html.Span(
                    str(exc)
                    if isinstance(exc, StorageUnavailable)
                    else "this dashboard was deleted",
                    className="field-error",
                )
            }
        if isinstance(changes.get("d-grid"), Board):
            changes["d-grid"] = grid(changes["d-grid"])
        return tuple(changes.get(i, no_update) for i, _ in _OUTPUTS)
