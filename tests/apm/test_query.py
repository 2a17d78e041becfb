from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apm.functions import CATALOGUE
from apm.query import Function, Query, QueryError, parse

pytestmark = pytest.mark.unit


def test_parses_every_part():
    q = parse(
        "from web-*, db-1 select cpu.util window 60s compute min, MAX, avg, p99, "
        "percentile(99.9), count, sum"
    )
    assert q == Query(
        ("web-*", "db-1"),
        "cpu.util",
        60,
        (
            Function("min"),
            Function("max"),
            Function("avg"),
            Function("percentile", 99.0),
            Function("percentile", 99.9),
            Function("count"),
            Function("sum"),
        ),
    )
    assert [f.key for f in q.functions] == ["min", "max", "avg", "p99", "p99.9", "count", "sum"]


def test_star_wins_over_names_and_duplicates_collapse():
    q = parse("FROM a, *, b SELECT m WINDOW 1h COMPUTE max, max")
    assert q.servers == ("*",) and q.functions == (Function("max"),) and q.window_seconds == 3600


@pytest.mark.parametrize(
    ("text", "position", "fragment"),
    [
        ("", 0, "empty"),
        ("SELECT x", 0, "expected FROM"),
        ("FROM SELECT m WINDOW 1s COMPUTE min", 5, "before SELECT"),
        ("FROM * SELECT", 13, "expected a metric name"),
        ("FROM * SELECT 9cpu WINDOW 1s COMPUTE min", 14, "must start with a letter"),
        ("FROM * SELECT m WINDOW 10 COMPUTE min", 23, "expected a duration"),
        ("FROM * SELECT m WINDOW 0s COMPUTE min", 23, "between 1s and 1d"),
        ("FROM * SELECT m WINDOW 2d COMPUTE min", 23, "between 1s and 1d"),
        ("FROM * SELECT m WINDOW 1s COMPUTE median", 34, "expected a function"),
        ("FROM * SELECT m WINDOW 1s COMPUTE percentile(100)", 45, "0 < p < 100"),
        ("FROM * SELECT m WINDOW 1s COMPUTE percentile(0)", 45, "0 < p < 100"),
        ("FROM * SELECT m WINDOW 1s COMPUTE percentile 5", 45, "expected '('"),
        ("FROM * SELECT m WINDOW 1s COMPUTE p101", 35, "0 < p < 100"),
        ("FROM * SELECT m WINDOW 1s COMPUTE min max", 38, "unexpected 'max'"),
        ("FROM w$b SELECT m WINDOW 1s COMPUTE min", 6, "'$' is not allowed in a server glob"),
        ("FROM a, web-[z-a] SELECT m WINDOW 1s COMPUTE min", 12, "invalid server glob"),
        ("FROM web-[] SELECT m WINDOW 1s COMPUTE min", 9, "invalid server glob"),
    ],
)
def test_errors_name_position_and_expectation(text, position, fragment):
    with pytest.raises(QueryError) as info:
        parse(text)
    assert info.value.position == position
    assert fragment in str(info.value)


def test_glob_ranges_and_negation_match_like_shell_globs():
    q = parse("FROM web-[a-c], db-[!0-4] SELECT m WINDOW 1s COMPUTE min")
    assert q.matches("web-b") and not q.matches("web-d") and not q.matches("web--")
    assert q.matches("db-7") and not q.matches("db-2")
    assert re.fullmatch(q.server_regex(), "web-a")


def test_server_globs_match_like_shell_globs():
    q = parse("FROM web-*, db-?, cache-[12] SELECT m WINDOW 1s COMPUTE min")
    assert q.matches("web-042") and q.matches("db-7") and q.matches("cache-2")
    assert not q.matches("db-10") and not q.matches("cache-3") and not q.matches("xweb-1")
    assert parse("FROM * SELECT m WINDOW 1s COMPUTE min").matches("anything")


names = st.from_regex(r"[a-z][a-z0-9_.\-]{0,12}", fullmatch=True)
functions = st.one_of(
    st.sampled_from([Function(s.name) for s in CATALOGUE.values() if s.param is None]),
    *[
        st.builds(
            Function,
            st.just(s.name),
            st.floats(s.param[0], s.param[1], exclude_min=True, exclude_max=True),
        )
        for s in CATALOGUE.values()
        if s.param is not None
    ],
)


@given(
    servers=st.lists(
        st.from_regex(r"[a-z0-9][a-z0-9\-*?]{0,8}", fullmatch=True),
        min_size=1,
        max_size=4,
        unique=True,
    ),
    metric=names,
    window=st.integers(1, 86_400),
    fns=st.lists(functions, min_size=1, max_size=5, unique=True),
)
def test_round_trip(servers, metric, window, fns):
    q = Query(tuple(servers), metric, window, tuple(fns))
    assert parse(q.text) == q
    assert parse(q.text).text == q.text


@pytest.mark.parametrize(
    ("text", "by_server", "top"),
    [
        ("FROM web-* SELECT cpu WINDOW 10s COMPUTE avg, p99 BY server", True, None),
        (
            "FROM * SELECT cpu WINDOW 10s COMPUTE avg by SERVER top 10 by AVG",
            True,
            (10, "avg", False),
        ),
        (
            "FROM * SELECT cpu WINDOW 1m COMPUTE max, p99.9 BY server BOTTOM 100 BY p99.9",
            True,
            (100, "p99.9", True),
        ),
        ("FROM * SELECT cpu WINDOW 1m COMPUTE max", False, None),
    ],
)
def test_by_server_and_a_ranking_parse_and_round_trip(text, by_server, top):
    q = parse(text)
    assert q.by_server is by_server
    got = None if q.top is None else (q.top.n, q.top.function.key, q.top.bottom)
    assert got == top
    assert parse(q.text) == q


@pytest.mark.parametrize(
    ("tail", "says"),
    [
        ("BY Host", "expected BY server or a tag key such as dc: tag key 'Host' must match"),
        ("BY dc, server", "BY server is a grouping of its own"),
        ("BY server, dc", "unexpected ',' after BY server"),
        ("BY server TOP 0 BY avg", "from 1 to 100 after TOP, got '0'"),
        ("BY server TOP 101 BY avg", "from 1 to 100 after TOP, got '101'"),
        ("BY server TOP 1e9 BY avg", "got '1e9'"),
        ("BY server BOTTOM -3 BY avg", "got '-3'"),
        ("BY server TOP " + "9" * 5000 + " BY avg", "from 1 to 100"),
        ("BY server TOP 5 BY min", "ranks by one of the computed functions (avg, max), not 'min'"),
        ("BY server TOP 5", "expected BY, got the end of the query"),
        ("BY server TOP 5 BY avg extra", "unexpected 'extra' after TOP 5 BY avg"),
        ("TOP 5 BY avg", "unexpected 'TOP' after the functions; expected BY server, BY a tag"),
        ("BY dc TOP 5 BY min", "ranks by one of the computed functions (avg, max), not 'min'"),
        ("BY dc extra", "unexpected 'extra' after BY dc; expected TOP, BOTTOM or the end"),
    ],
)
def test_a_bad_grouping_is_refused_naming_its_position(tail, says):
    text = f"FROM * SELECT cpu WINDOW 10s COMPUTE avg, max {tail}"
    with pytest.raises(QueryError) as info:
        parse(text)
    assert says in str(info.value)
    assert len("FROM * SELECT cpu WINDOW 10s COMPUTE avg, max ") <= info.value.position <= len(text)
