"""The dashboard model's one validator: bounded, every refusal a BoardError naming the field,
never anything else, whatever JSON arrives (hypothesis)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.boards import (
    MAX_PANELS,
    BoardError,
    export_json,
    parse_board,
)

pytestmark = pytest.mark.unit

KNOWN = {"q1", "q2", "q3"}


def _board(**extra: object) -> dict[str, object]:
    return {
        "name": "web tier",
        "panels": [
            {"title": "cpu", "queries": ["q1"], "chart": "lines"},
            {"title": "p99", "queries": ["q2", "q3"], "chart": "stat", "x": 6, "w": 6},
            {"title": "top", "queries": ["q1"], "chart": "table", "y": 4, "w": 12},
        ],
        "time_range": "6h",
        "refresh_seconds": 5,
        "server_filter": "web-*",
        **extra,
    }


def _refused(raw: object, **kw: object) -> BoardError:
    with pytest.raises(BoardError) as caught:
        parse_board(raw, KNOWN, **kw)  # type: ignore[arg-type]
    return caught.value


def test_a_board_parses_with_defaults_for_what_is_left_out() -> None:
    board = parse_board(_board(), KNOWN)
    assert [p.chart for p in board.panels] == ["lines", "stat", "table"]
    assert [p.id for p in board.panels] == ["p1", "p2", "p3"]
    assert board.panels[1].queries == ("q2", "q3") and board.server_filter == "web-*"
    bare = parse_board({"name": " x "}, KNOWN)
    assert (bare.name, bare.panels, bare.time_range, bare.server_filter) == ("x", (), "1h", "*")


def test_export_then_import_gives_the_same_board_under_another_name() -> None:
    board = parse_board(_board(), KNOWN)
    exported = json.loads(json.dumps(export_json(board)))
    again = parse_board(exported, KNOWN, importing=True, name="copy")
    assert again.name == "copy" and again.panels == board.panels
    assert again.body() | {"name": board.name} == board.body()
    # Without importing=True the export's own key is refused.
    assert _refused(exported).at == "body"


@pytest.mark.parametrize(
    ("change", "at", "words"),
    [
        ({"name": ""}, "name", "must not be empty"),
        ({"name": "x" * 201}, "name", "at most 200"),
        ({"name": "a\nb"}, "name", "printable"),
        ({"time_range": "2h"}, "time_range", "one of"),
        ({"time_range": []}, "time_range", "one of"),
        ({"refresh_seconds": True}, "refresh_seconds", "whole number"),
        ({"refresh_seconds": 3601}, "refresh_seconds", "whole number"),
        ({"server_filter": "web-[1"}, "server_filter", "never closed"),
        ({"server_filter": "a b"}, "server_filter", "not allowed"),
        ({"colour": "red"}, "body", "unknown field"),
        ({"panels": {}}, "panels", "must be a list"),
        ({"panels": [{"queries": ["gone"]}]}, "panels[0].queries[0]", "no stored query 'gone'"),
        ({"panels": [{"queries": []}]}, "panels[0].queries", "1 to 8"),
        ({"panels": [{"queries": ["q1"], "chart": "pie"}]}, "panels[0].chart", "one of"),
        ({"panels": [{"queries": ["q1"], "x": 8, "w": 6}]}, "panels[0].w", "x + w"),
        ({"panels": [{"queries": ["q1"], "h": 0}]}, "panels[0].h", "whole number"),
        ({"panels": [{"queries": ["q1"], "id": "a b"}]}, "panels[0].id", "panel id"),
        ({"panels": [{"queries": ["q1"], "id": "a"}] * 2}, "panels[1].id", "two panels"),
        ({"panels": ["x"]}, "panels[0]", "JSON object"),
    ],
)
def test_bad_input_is_refused_naming_the_field(change: dict, at: str, words: str) -> None:
    err = _refused(_board(**change))
    assert err.at == at and words in err.detail, (err.at, err.detail)


def test_ten_thousand_panels_are_refused_by_count_before_any_is_read() -> None:
    # Panels that would each be refused: the count is checked first.
    err = _refused(_board(panels=[None] * 10_000))
    assert err.at == "panels" and f"at most {MAX_PANELS} panels" in err.detail
    assert "10000" in err.detail
    assert len(parse_board(_board(panels=[{"queries": ["q1"]}] * MAX_PANELS), KNOWN).panels) == 50


def test_unknown_query_ids_pass_only_when_not_checked() -> None:
    raw = _board(panels=[{"queries": ["elsewhere"]}])
    assert parse_board(raw).panels[0].queries == ("elsewhere",)  # a stored body, read back
    assert _refused(raw).at == "panels[0].queries[0]"


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=40,
)
_fields = st.fixed_dictionaries(
    {},
    optional={
        "name": _json | st.text(max_size=30),
        "panels": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    k: _json | st.sampled_from(["q1", "lines", "table", ["q1"], 3, 12])
                    for k in ("id", "title", "queries", "chart", "x", "y", "w", "h")
                },
            )
            | _json,
            max_size=4,
        )
        | _json,
        "time_range": _json | st.sampled_from(["1h", "24h"]),
        "refresh_seconds": _json,
        "server_filter": _json | st.sampled_from(["*", "web-*"]),
        "apm_dashboard": _json,
    },
)


@settings(max_examples=300, deadline=None)
@given(raw=_json | _fields, importing=st.booleans())
def test_any_json_is_a_board_or_a_board_error(raw: object, importing: bool) -> None:
    try:
        board = parse_board(raw, KNOWN, importing=importing)
    except BoardError as err:
        assert err.detail and err.at
        return
    # Whatever was accepted is bounded and reads back as itself.
    assert len(board.panels) <= MAX_PANELS and 1 <= len(board.name) <= 200
    assert parse_board(json.loads(json.dumps(board.body())), KNOWN) == board
