"""Any text, however broken: the parser answers a Query or a QueryError with a position inside
the text, within a bound on CPU time, and what it accepts round-trips, matches quickly (names
and tag values alike), and is either accepted for storing or refused with a position."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apm.query import MAX_FUNCTIONS, MAX_QUERY_CHARS, MAX_SERVERS, QueryError, accept, parse
from apm.query_select import Selector
from tests.support.cpu import cpu_bound

pytestmark = pytest.mark.unit

GLOB_CHARS = "ab-_.*?[]!"
words = st.one_of(
    st.sampled_from(["FROM", "from", "SELECT", "WINDOW", "COMPUTE", "*", ",", "(", ")"]),
    st.sampled_from(["cpu", "10s", "1m", "0s", "99999999999s", "min", "avg", "p99", "p", "p1e9"]),
    st.sampled_from(["percentile", "percentile(", "50)", "nan", "inf", "1_0", "-1", "1e400"]),
    st.sampled_from(["BY", "by", "server", "TOP", "BOTTOM", "0", "10", "100", "101", "9" * 5000]),
    st.sampled_from(["WHERE", "where", "role:web", "dc:", ":", "dc:eu-*", "Role:x", "server:a"]),
    st.sampled_from(["dc", "env", "a.b_c", "DC", "k:" + "*?" * 40, "x:[", "x:a]", "é:é"]),
    st.text(alphabet=GLOB_CHARS, min_size=1, max_size=10),
    st.text(alphabet=GLOB_CHARS + ":", min_size=1, max_size=10),
    st.text(max_size=8),  # any unicode at all
)
separators = st.sampled_from([" ", "", ", ", "\t", "\n", "  ", "\u00a0"])


@st.composite
def texts(draw: st.DrawFn) -> str:
    """Mostly the query's own shape with parts replaced, so that the parse gets deep; also
    arbitrary token soup and arbitrary text."""
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return draw(st.text(max_size=80))
    if kind == 1:
        parts = draw(st.lists(st.tuples(words, separators), max_size=16))
        return "".join(w + s for w, s in parts)
    entry = st.text(alphabet=GLOB_CHARS + ":", min_size=1, max_size=12)
    servers = draw(st.lists(entry, max_size=3))
    where = draw(st.lists(entry, max_size=2))
    if kind == 4:  # a valid skeleton around tag parts, so that they parse deep and often
        by = draw(st.sampled_from(["", " BY server", " BY dc", " BY dc, env", " BY a.b, dc, a.b"]))
        top = draw(st.sampled_from(["", " TOP 3 BY avg", " BOTTOM 1 BY avg"])) if by else ""
        return (
            f"FROM {', '.join(servers) or '*'}{' WHERE ' + ', '.join(where) if where else ''} "
            f"SELECT cpu WINDOW 10s COMPUTE avg{by}{top}"
        )
    fns = draw(st.lists(words, min_size=0, max_size=3))
    tail = draw(st.lists(st.tuples(words, separators), max_size=6)) if kind == 3 else []
    return (
        f"FROM {', '.join(servers)}{' WHERE ' + ', '.join(where) if where else ''} "
        f"SELECT {draw(words)} WINDOW {draw(words)} "
        f"COMPUTE {', '.join(fns)} " + "".join(w + s for w, s in tail)
    )


def check(text: str) -> None:
    with cpu_bound(1.0):  # about a millisecond when it works
        try:
            q = parse(text)
        except QueryError as exc:
            assert 0 <= exc.position <= len(text), exc
            return
        assert parse(q.text) == q
        re.compile(q.server_regex())
        q.matches("a" * 199 + "b")
        value = "a" * 127 + "b"
        Selector(q).group("a" * 199 + "b", {t.key: value for t in q.tags + q.where})
        assert accept(text) == q  # host tags are evaluated since issue 37


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts())
def test_any_text_parses_or_is_refused_with_a_position_in_bounded_time(text):
    check(text)


@pytest.mark.parametrize(
    ("text", "position"),
    [
        ("FROM ][ SELECT x WINDOW 10s COMPUTE avg", 6),  # looped until MemoryError
        ("FROM a]b[ SELECT x WINDOW 10s COMPUTE avg", 8),
        (f"FROM * SELECT x WINDOW {'9' * 5000}s COMPUTE avg", 23),  # int() raised ValueError
        ("FROM " + "*?" * 33 + "Z SELECT x WINDOW 10s COMPUTE avg", 5 + 2 * 32),  # backtracked
    ],
)
def test_texts_that_hung_or_crashed_are_refused(text, position):
    with cpu_bound(1.0), pytest.raises(QueryError) as info:
        parse(text)
    assert info.value.position == position


def test_limits_refuse_at_the_first_part_past_them():
    with pytest.raises(QueryError) as info:
        parse("FROM * SELECT m WINDOW 1s COMPUTE min" + " " * MAX_QUERY_CHARS)
    assert info.value.position == MAX_QUERY_CHARS
    servers = [f"s{i}" for i in range(MAX_SERVERS + 1)]
    text = f"FROM {', '.join(servers)} SELECT m WINDOW 1s COMPUTE min"
    with pytest.raises(QueryError) as info:
        parse(text)
    assert info.value.position == text.index(f" s{MAX_SERVERS} ") + 1
    assert len(parse(text.replace(f", s{MAX_SERVERS} ", " ")).servers) == MAX_SERVERS
    fns = [f"p{i}" for i in range(1, MAX_FUNCTIONS + 2)]
    text = f"FROM * SELECT m WINDOW 1s COMPUTE {', '.join(fns)}"
    with pytest.raises(QueryError) as info:
        parse(text)
    assert info.value.position == text.index(f"p{MAX_FUNCTIONS + 1}")
    assert len(parse(text.rsplit(",", 1)[0]).functions) == MAX_FUNCTIONS
