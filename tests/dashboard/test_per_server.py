"""Which servers of a ``BY server`` query are shown, in which order, and what is said about
them: the choice (dashboard.per_server) and the lines it draws (dashboard.pages.figures), over
an in-memory repository."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apm.query import StoredQuery, WindowResult, parse
from apm.ranking import rank
from dashboard import per_server
from dashboard.context import AppContext
from dashboard.pages.figures import figure_for, server_cap
from dashboard.settings import DashboardSettings
from tests.dashboard.fakes import FakeResults, per_server_rows

pytestmark = pytest.mark.unit

NOW = 1_800_000_000.0  # a multiple of 10


def _q(text: str, qid: str = "q") -> StoredQuery:
    return StoredQuery(qid, parse(text))


def _ctx(repo: FakeResults) -> AppContext:
    return AppContext(DashboardSettings(max_points=1200), repo, None, None)  # type: ignore[arg-type]


def _row(server: str, value: float, at: float = NOW - 10) -> WindowResult:
    return WindowResult("q", at, 10, {"avg": value, "max": value}, 1, at, server)


# Bounded: apm.ranking folds "others" with math.fsum, which raises OverflowError on sums past
# the float range (values near 1e308; noted for the ranking's owner).
values = st.one_of(st.floats(-1e12, 1e12), st.just(math.nan), st.sampled_from([1.0, 2.0]))


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.sampled_from([f"s{i}" for i in range(12)]), values, max_size=12),
    st.integers(1, 12),
    st.booleans(),
)
def test_order_is_the_rankings_order(vals: dict[str, float], n: int, bottom: bool) -> None:
    word = "BOTTOM" if bottom else "TOP"
    q = parse(f"FROM * SELECT cpu WINDOW 10s COMPUTE avg, max BY server {word} {n} BY avg")
    rows = [_row(s, v) for s, v in vals.items()]
    ranked = [r.server for r in rank(q, rows) if r.server != "(others)"]
    assert per_server.order(q, rows)[:n] == ranked
    # Every server with a finite value is placed, none without.
    assert len(per_server.order(q, rows)) == sum(1 for v in vals.values() if math.isfinite(v))


def test_choose_filters_orders_and_caps() -> None:
    q = _q("FROM * SELECT cpu WINDOW 10s COMPUTE avg BY server")
    newest = per_server.Latest(NOW - 10, {s: _row(s, v) for s, v in [("web-1", 5), ("web-2", 9)]})
    listed = ["db-1", "web-1", "web-2", "web-3"]  # web-3: in the range, not in the newest windows
    all_of = per_server.choose(q, listed, newest, "*", 20)
    assert all_of.servers == ["web-2", "web-1"]  # db-1, web-3: no newest value, counted
    assert (all_of.matching, all_of.total, all_of.key) == (4, 4, "avg")
    web = per_server.choose(q, listed, newest, "web-*", 2)
    assert web.servers == ["web-2", "web-1"] and (web.matching, web.total) == (3, 4)
    note = per_server.choice_note(q, web, "drawn", "at most 2 lines")
    assert note is not None and "2 of 3 servers drawn (at most 2 lines)" in note
    assert "the highest avg in the newest closed window" in note and "1 not drawn" in note
    assert per_server.filter_note(web, "web-*") == "server filter 'web-*': 3 of its 4 servers match"
    none = per_server.choose(q, listed, newest, "cache-*", 2)
    assert none.servers == [] and per_server.choice_note(q, none, "drawn", "") is None
    assert "none of its 4 servers matches" in str(per_server.filter_note(none, "cache-*"))
    # A TOP query shows its n only, from the servers with a value.
    top = _q("FROM * SELECT cpu WINDOW 10s COMPUTE avg BY server BOTTOM 1 BY avg")
    low = per_server.choose(top, listed, newest, "*", 20)
    assert low.servers == ["web-1"] and low.bottom
    assert "its BOTTOM 1 BY avg: the lowest avg" in str(
        per_server.choice_note(top, low, "drawn", "")
    )
    # No newest window: by name, and it says so.
    assert per_server.choose(top, listed, per_server.Latest(None, {}), "*", 20).servers == [
        "db-1"
    ]  # a TOP query with no newest window: its n, by name
    byname = per_server.choose(q, listed, per_server.Latest(None, {}), "*", 3)
    assert byname.servers == ["db-1", "web-1", "web-2"]
    assert "ordered by name" in str(per_server.choice_note(q, byname, "drawn", "at most 3"))


def test_latest_finds_the_newest_window_and_the_one_before() -> None:
    q = _q("FROM * SELECT cpu WINDOW 10s COMPUTE avg BY server")
    repo = FakeResults([q])
    repo.upsert_results(per_server_rows("q", [NOW - 60, NOW - 50], {"a": 1.0, "b": 2.0}))
    repo.upsert_results([_row("a", 7.0, NOW - 40)])  # the newest window: a only, so far
    got = per_server.latest(_ctx(repo), q, NOW - 3600, NOW)
    assert got.at == NOW - 40
    assert {s: r.values["avg"] for s, r in got.rows.items()} == {"a": 7.0, "b": 3.0}
    # Nothing within PROBES windows of the end: not found (and ordered by name elsewhere).
    later = NOW + 10 * (per_server.PROBES + 1)
    assert per_server.latest(_ctx(repo), q, NOW - 3600, later) == per_server.Latest(None, {})


def test_lines_one_per_server_and_function_capped_and_filtered() -> None:
    q = _q("FROM * SELECT cpu WINDOW 10s COMPUTE avg, max BY server")
    plain = _q("FROM * SELECT cpu WINDOW 10s COMPUTE avg", "p")
    repo = FakeResults([q, plain])
    servers = {f"web-{i:02}": float(i) for i in range(30)}
    repo.upsert_results(per_server_rows("q", [NOW - 30, NOW - 20, NOW - 10], servers))
    repo.upsert_results([WindowResult("p", NOW - 10, 10, {"avg": 1.0}, 1, NOW)])
    fig, drawn = figure_for(_ctx(repo), [q], NOW - 3600, NOW)
    traces = fig["data"]
    assert isinstance(traces, list) and len(traces) == per_server.MAX_LINES
    cap = server_cap(q)
    assert cap == per_server.MAX_LINES // 2
    # The highest avg first: web-29 down to web-20, each with its avg and max.
    assert [t["name"] for t in traces[:2]] == ["web-29 avg", "web-29 max"]
    assert {t["meta"]["server"] for t in traces} == {f"web-{i}" for i in range(20, 30)}
    assert drawn.points == per_server.MAX_LINES * 3 and drawn.windows == cap * 3
    assert drawn.notes == [
        "cpu per server: 10 of 30 servers drawn (at most 20 lines a chart: 10 servers x 2 "
        f"functions), the highest avg in the newest closed window ({_fmt(NOW - 10)}); 20 not drawn"
    ]
    # The filter narrows the servers; a plain query beside it is drawn whole.
    fig, drawn = figure_for(_ctx(repo), [q, plain], NOW - 3600, NOW, "web-0?")
    names = [t["name"] for t in fig["data"]]  # type: ignore[union-attr]
    assert names[0] == f"web-09 avg [{q.id[:8]}]" and names[-1] == "cpu avg [p]"
    assert len(names) == 2 * 10 + 1
    assert drawn.notes[0] == "server filter 'web-0?': 10 of its 30 servers match"
    assert drawn.notes[1].startswith("cpu per server: all 10 servers drawn")
    # Two per-server queries share the chart's lines.
    twin = StoredQuery("q2", q.query)
    repo.upsert_results(r._replace(query_id="q2") for r in list(repo.server_rows.values()))
    fig, drawn = figure_for(_ctx(repo), [q, twin], NOW - 3600, NOW)
    assert len(fig["data"]) == per_server.MAX_LINES  # type: ignore[arg-type]
    assert "5 servers x 2 functions, shared by its 2 per-server queries" in drawn.notes[0]
    fig, drawn = figure_for(_ctx(repo), [q], NOW - 3600, NOW, "db-*")
    assert fig["data"] == [] and drawn.unmatched == 1


def _fmt(ts: float) -> str:
    from apm.query_state import format_time

    return format_time(ts)


def test_a_top_querys_lines_come_from_its_stored_ranking_without_a_filter() -> None:
    q = _q("FROM * SELECT cpu WINDOW 10s COMPUTE avg BY server TOP 2 BY avg")
    repo = FakeResults([q])
    repo.upsert_results(per_server_rows("q", [NOW - 20, NOW - 10], {"a": 1.0, "b": 5.0, "c": 3.0}))
    repo.rank_all(q)
    repo.reads.clear()
    fig, drawn = figure_for(_ctx(repo), [q], NOW - 3600, NOW)
    assert [t["name"] for t in fig["data"]] == ["b", "c"]  # type: ignore[union-attr]
    assert not [r for r in repo.reads if r[0] == "read_window_servers"]  # n + 1 rows read
    assert "2 of 3 servers drawn" in drawn.notes[0] and "its TOP 2 BY avg" in drawn.notes[0]
    # Under a filter the ranking (over all servers) is not the answer: re-ranked among those kept.
    fig, drawn = figure_for(_ctx(repo), [q], NOW - 3600, NOW, "[ac]")
    assert [t["name"] for t in fig["data"]] == ["c", "a"]  # type: ignore[union-attr]
