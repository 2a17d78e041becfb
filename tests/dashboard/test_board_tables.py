"""The table and stat panels of per-server queries (dashboard.pages.board_tables) and a panel's
notes (dashboard.pages.board_panels), over an in-memory repository: a TOP query's stored
ranking with its "(others)" row, the missing ranking explained, a plain BY server query's
newest servers capped, the stat naming its server, and the server filter on each."""

from __future__ import annotations

import pytest

from apm.query import StoredQuery, WindowResult, parse
from apm.query_state import format_time
from dashboard import per_server
from dashboard.boards import parse_board
from dashboard.pages.board_panels import panel_view
from dashboard.pages.board_tables import stat_figure, table_figure
from dashboard.states import Evaluated
from tests.dashboard.fakes import FakeResults, per_server_rows
from tests.dashboard.test_per_server import NOW, _ctx

pytestmark = pytest.mark.unit

SPAN = (NOW - 3600, NOW)
TOP = StoredQuery(
    "t", parse("FROM * SELECT cpu WINDOW 10s COMPUTE avg, max BY server TOP 3 BY avg")
)
SPLIT = StoredQuery("s", parse("FROM * SELECT cpu WINDOW 10s COMPUTE avg BY server"))
FLEET = StoredQuery("f", parse("FROM * SELECT cpu WINDOW 10s COMPUTE avg, p99"))


def _columns(fig: dict) -> dict[str, list]:
    table = fig["data"][0]
    return dict(zip(table["header"]["values"], table["cells"]["values"], strict=True))


@pytest.fixture
def repo() -> FakeResults:
    repo = FakeResults([TOP, SPLIT, FLEET])
    servers = {"web-1": 10.0, "web-2": 30.0, "db-1": 20.0, "db-2": 5.0, "db-3": 1.0}
    for qid in ("t", "s"):
        repo.upsert_results(per_server_rows(qid, [NOW - 20, NOW - 10], servers))
    repo.upsert_results([WindowResult("f", NOW - 10, 10, {"avg": 2.5, "p99": 9.0}, 7, NOW)])
    repo.rank_all(TOP)
    return repo


def test_a_top_query_shows_its_newest_ranking_and_others(repo: FakeResults) -> None:
    fig, rows, notes = table_figure(_ctx(repo), [TOP, FLEET], SPAN, "*")
    cols = _columns(fig)
    assert rows == 5
    assert cols["rank"] == [1, 2, 3, 4, ""]
    assert cols["server"] == ["web-2", "db-1", "web-1", "(others)", "all servers"]
    assert cols["avg"] == [31.0, 21.0, 11.0, 4.0, 2.5]  # others: (6 + 2) / 2, same samples
    assert cols["max"][:4] == [32.0, 22.0, 12.0, 7.0] and cols["p99"] == ["", "", "", "", 9.0]
    assert cols["window"][0] == format_time(NOW - 10) and cols["samples"][3] == 6
    assert (
        notes[0]
        == f"cpu TOP 3 BY avg: the ranking of the newest ranked window ({format_time(NOW - 10)})"
    )
    assert "(others) folds the servers after the first 3" in notes[1]
    # Under a filter: the ranked servers it matches, the others row, and what that means.
    fig, rows, notes = table_figure(_ctx(repo), [TOP], SPAN, "db-*")
    assert _columns(fig)["server"] == ["db-1", "(others)"]
    assert notes[-1] == (
        "server filter 'db-*': 1 of the 3 ranked servers match; the ranks are over all the "
        "query's servers"
    )


def test_no_ranking_yet_is_explained(repo: FakeResults) -> None:
    repo.rankings.clear()
    _fig, rows, notes = table_figure(_ctx(repo), [TOP], SPAN, "*")
    assert rows == 0
    assert notes == [
        "cpu TOP 3 BY avg: no ranking stored in the last 10 min of the range yet (the aggregator "
        "ranks each window of the query as it updates it)"
    ]


def test_a_split_query_lists_its_newest_servers_by_value_capped(repo: FakeResults) -> None:
    many = {f"n-{i:02}": float(i) for i in range(per_server.MAX_ROWS + 5)}
    repo.upsert_results(per_server_rows("s", [NOW - 10], many))
    fig, rows, notes = table_figure(_ctx(repo), [SPLIT], SPAN, "*")
    cols = _columns(fig)
    assert rows == per_server.MAX_ROWS
    assert cols["server"][:3] == ["web-2", "n-24", "n-23"] and cols["rank"][:2] == [1, 2]
    assert cols["avg"] == sorted(cols["avg"], reverse=True)
    assert notes == [
        f"cpu per server: 20 of 30 servers listed (at most 20 rows, sorted by value), the "
        f"highest avg in the newest closed window ({format_time(NOW - 10)}); 10 not listed"
    ]
    fig, rows, notes = table_figure(_ctx(repo), [SPLIT], SPAN, "db-*")
    assert _columns(fig)["server"] == ["db-1", "db-2", "db-3"]
    assert notes[0] == "server filter 'db-*': 3 of its 30 servers match"


def test_a_stat_of_a_split_query_names_the_highest_server(repo: FakeResults) -> None:
    fig, cells, notes = stat_figure(_ctx(repo), [TOP, FLEET], SPAN, "*")
    titles = [d["title"]["text"].split("<br>")[0] for d in fig["data"]]
    assert titles == ["cpu avg, highest: web-2", "cpu max, highest: web-2", "cpu avg", "cpu p99"]
    assert [d["value"] for d in fig["data"]] == [31.0, 32.0, 2.5, 9.0]
    assert notes == [
        "cpu per server: each number is the highest newest value among its 5 servers, naming "
        "that server; a table panel lists them"
    ]
    fig, cells, notes = stat_figure(_ctx(repo), [TOP], SPAN, "db-*")
    assert fig["data"][0]["value"] == 21.0 and "among its 3 servers matching 'db-*'" in notes[0]
    fig, cells, notes = stat_figure(_ctx(repo), [TOP], SPAN, "cache-*")
    assert cells == 0 and notes == [
        "server filter 'cache-*': none of the 5 servers in its newest window matches"
    ]


def test_a_panel_says_what_the_filter_did_to_plain_and_split_queries(repo: FakeResults) -> None:
    board = parse_board(
        {
            "name": "b",
            "server_filter": "nothing-*",
            "panels": [{"title": "cpu", "queries": ["s", "f"], "chart": "lines"}],
        },
        {"s", "f"},
    )
    stored = {q.id: q for q in (SPLIT, FLEET)}
    states = {q: Evaluated("evaluated", "fine", NOW) for q in stored}
    servers = {"web-1": NOW, "db-1": NOW}  # the servers that reported (list_servers)
    view = panel_view(_ctx(repo), board, board.panels[0], stored, states, servers, SPAN)
    assert view.notes == [
        f"{FLEET.text}: none of its 2 servers matches 'nothing-*'; not drawn",
        "server filter 'nothing-*': none of its 5 servers matches",
    ]
    assert "no server of its queries matches nothing-*" in str(view.figure)


def test_an_empty_table_panel_says_its_own_reason(repo: FakeResults) -> None:
    repo.rankings.clear()
    body = {"name": "b", "panels": [{"title": "top", "queries": ["t"], "chart": "table"}]}
    board = parse_board(body, {"t"})
    states = {"t": Evaluated("evaluated", "fine", NOW)}
    view = panel_view(_ctx(repo), board, board.panels[0], {"t": TOP}, states, {}, SPAN)
    assert view.points == 0 and "no ranking stored in the last 10 min" in str(view.figure)
