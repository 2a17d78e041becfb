"""The dashboard page's edits as logic: the panels' flow, moving, saving a panel from the
editor (refusals name the editor's field), and what the server filter says per query."""

from __future__ import annotations

import pytest

from apm.query import StoredQuery, parse
from dashboard.boards import BoardError, Panel, parse_board
from dashboard.pages.board_edit import flow, moved, save_panel
from dashboard.pages.board_panels import filter_notes

pytestmark = pytest.mark.unit


def _panel(pid: str, w: int = 6, h: int = 4) -> Panel:
    return Panel(pid, pid, ("q1",), w=w, h=h)


def test_flow_places_panels_in_order_two_halves_to_a_row() -> None:
    placed = flow([_panel("a"), _panel("b"), _panel("c", 12), _panel("d", h=3), _panel("e")])
    assert [(p.id, p.x, p.y) for p in placed] == [
        ("a", 0, 0),
        ("b", 6, 0),
        ("c", 0, 4),
        ("d", 0, 8),
        ("e", 6, 8),
    ]


def test_moving_swaps_neighbours_and_stops_at_the_ends() -> None:
    board = parse_board({"name": "b"}).with_panels(flow([_panel("a"), _panel("b"), _panel("c")]))
    assert [p.id for p in moved(board, "c", -1).panels] == ["a", "c", "b"]
    assert [p.id for p in moved(board, "a", -1).panels] == ["a", "b", "c"]
    assert [p.id for p in moved(board, "a", 1).panels] == ["b", "a", "c"]
    assert [(p.x, p.y) for p in moved(board, "a", 1).panels] == [(0, 0), (6, 0), (0, 4)]


def test_saving_from_the_editor_adds_or_replaces_and_names_the_refused_field() -> None:
    board = parse_board({"name": "b"})
    form = {"title": "CPU", "queries": ["q1"], "chart": "stat", "width": 12}
    added = save_panel(board, None, form)
    assert [(p.title, p.chart, p.w, p.h) for p in added.panels] == [("CPU", "stat", 12, 3)]
    edited = save_panel(added, added.panels[0].id, {**form, "title": "CPU now"})
    assert [p.title for p in edited.panels] == ["CPU now"]
    assert edited.panels[0].id == added.panels[0].id
    with pytest.raises(BoardError) as refused:
        save_panel(board, None, {**form, "queries": []})
    assert refused.value.at == "queries" and "1 to 8" in refused.value.detail


def test_the_server_filter_says_what_it_did_to_each_query() -> None:
    web = StoredQuery("w", parse("FROM web-* SELECT cpu WINDOW 10s COMPUTE avg"))
    db = StoredQuery("d", parse("FROM db-* SELECT cpu WINDOW 10s COMPUTE avg"))
    new = StoredQuery("n", parse("FROM new-* SELECT cpu WINDOW 10s COMPUTE avg"))
    servers = {"web-1": 0.0, "web-2": 0.0, "db-1": 0.0}
    assert filter_notes([web, db], "*", servers) == ([web, db], [])
    kept, notes = filter_notes([web, db, new], "web-1", servers)
    assert kept == [web, new]
    assert "1 of its 2 servers match 'web-1'" in notes[0] and "folds in all 2" in notes[0]
    assert "none of its 1 servers matches 'web-1'; not drawn" in notes[1]
    assert "none of its servers has reported yet" in notes[2]
    assert "all 2 of its servers match" in filter_notes([web], "web-*", servers)[1][0]
