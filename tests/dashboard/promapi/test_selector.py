"""The read API's PromQL subset (dashboard.promapi.selector): selectors with the four matcher
kinds on the documented labels, constants for Grafana's health check, and for anything else a
SelectorError with a position; over arbitrary text it only ever parses or refuses, in time
bounded by the length cap."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.promapi.selector import (
    LABELS,
    MAX_EXPR_CHARS,
    MAX_MATCHERS,
    Constant,
    Matcher,
    Selector,
    SelectorError,
    parse_expr,
    parse_selector,
)
from tests.support.cpu import cpu_bound

pytestmark = pytest.mark.unit

NAME = Matcher("__name__", "=", "apm_query")


def _pairs(sel: Selector | Constant) -> list[tuple[str, str, str]]:
    assert isinstance(sel, Selector)
    return [(m.label, m.op, m.value) for m in sel.matchers]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("apm_query", [("__name__", "=", "apm_query")]),
        (
            ' apm_query { id = "q-1" , fn =~ "p9.*", } ',
            [("__name__", "=", "apm_query"), ("id", "=", "q-1"), ("fn", "=~", "p9.*")],
        ),
        (
            "{__name__=\"apm_query\", metric!~'cpu\\\\..*', window!=`1m`}",
            [("__name__", "=", "apm_query"), ("metric", "!~", r"cpu\..*"), ("window", "!=", "1m")],
        ),
        ('{id="a\\"b\\u00e9\\x41\\101\\n"}', [("id", "=", 'a"béAA\n')]),
        ("{id=`raw\\n`}", [("id", "=", "raw\\n")]),
    ],
)
def test_selectors(text: str, expected: list[tuple[str, str, str]]) -> None:
    assert _pairs(parse_expr(text)) == expected


@pytest.mark.parametrize(
    ("text", "value"),
    [("1+1", 2.0), ("2 * 3 - 4 / 2", 4.0), ("-1.5e1", -15.0), ("1/0", float("inf")), (".5", 0.5)],
)
def test_constants(text: str, value: float) -> None:
    assert parse_expr(text) == Constant(value)


def test_constant_nan_from_zero_over_zero() -> None:
    got = parse_expr("0/0")
    assert isinstance(got, Constant) and got.value != got.value


@pytest.mark.parametrize(
    ("text", "words", "at"),
    [
        ("rate(apm_query[5m])", "functions such as rate()", 0),
        ("sum(apm_query)", "functions such as sum()", 0),
        ("apm_query[5m]", "unexpected '['", 9),
        ('apm_query{id="x"} offset 5m', "unexpected 'o'", 18),
        ("apm_query + 1", "unexpected '+'", 10),
        ("up", "unknown metric 'up'", 0),
        ("{}", "non-empty matcher", 0),
        ('{id=~".*"}', "non-empty matcher", 0),
        ('apm_query{name="x"}', "stored queries have no names", 10),
        ('apm_query{host="x"}', "unknown label 'host'", 10),
        ('apm_query{__name__="apm_query"}', "set twice", 10),
        ('apm_query{id=~"(x"}', "invalid regular expression", 14),
        ('apm_query{id=="x"}', "quoted string", 13),
        ('apm_query{id="x}', "unterminated", 13),
        ('apm_query{id="\\q"}', "unknown escape", 14),
        ("apm_query{id='\\\"'}", "unknown escape", 14),
        ('apm_query{id="x" fn="p99"}', "expected ',' or '}'", 17),
        ('apm_query{id<"x"}', "expected one of", 12),
        ("1 +", "expected a number", 3),
        ("1 + apm_query", "expected a number", 4),
        ("", "expected a selector", 0),
    ],
)
def test_outside_the_subset(text: str, words: str, at: int) -> None:
    with pytest.raises(SelectorError) as caught:
        parse_expr(text)
    assert words in caught.value.detail
    assert caught.value.position == at, caught.value


def test_caps() -> None:
    with pytest.raises(SelectorError, match="at most"):
        parse_expr('apm_query{id=~"' + "a" * MAX_EXPR_CHARS + '"}')
    many = ",".join(f'id!="{i}"' for i in range(MAX_MATCHERS + 1))
    with pytest.raises(SelectorError, match=f"at most {MAX_MATCHERS} matchers"):
        parse_selector("apm_query{" + many + "}")


def test_selector_matches_labels() -> None:
    sel = parse_selector('apm_query{fn=~"p9.*", metric!="mem", window!~"1[mh]"}')
    base = {"__name__": "apm_query", "id": "q", "fn": "p99", "metric": "cpu", "window": "10s"}
    assert sel.matches(base)
    assert not sel.matches({**base, "fn": "avg"})
    assert not sel.matches({**base, "metric": "mem"})
    assert not sel.matches({**base, "window": "1h"})


matchers = st.tuples(
    st.sampled_from([label for label in LABELS if label != "__name__"]),
    st.sampled_from(["=", "!=", "=~", "!~"]),
    st.text(max_size=20),
)


@settings(max_examples=300)
@given(st.lists(matchers, min_size=0, max_size=6), st.sampled_from(['"', "'", "`"]))
def test_rendered_selectors_parse_back(pairs: list[tuple[str, str, str]], quote: str) -> None:
    """Any matcher values, quoted as Grafana would (JSON-style escapes), read back the same;
    a regex value outside the subset is a SelectorError, never another exception."""

    def render(value: str) -> str:
        if quote == '"':
            return json.dumps(value, ensure_ascii=False)
        if quote == "'":
            return (
                "'"
                + json.dumps(value, ensure_ascii=False)[1:-1]
                .replace('\\"', '"')
                .replace("'", "\\'")
                + "'"
            )
        return "`" + value + "`"

    if quote == "`":
        pairs = [(label, op, v.replace("`", "")) for label, op, v in pairs]
    text = "apm_query{" + ", ".join(f"{label}{op}{render(v)}" for label, op, v in pairs) + "}"
    try:
        got = parse_selector(text)
    except SelectorError as exc:
        assert "regular expression" in exc.detail
        return
    assert _pairs(got)[1:] == pairs


selectorish = st.text(alphabet="apm_query{}()[]\"'`,!~=.*|\\ 0123456789+-/eExu_:\n", max_size=80)


@settings(max_examples=500)
@given(st.one_of(st.text(max_size=200), selectorish))
def test_any_text_parses_or_is_a_selector_error(text: str) -> None:
    try:
        got = parse_expr(text)
    except SelectorError as exc:
        assert 0 <= exc.position <= max(len(text), MAX_EXPR_CHARS)
        assert exc.detail
        return
    assert isinstance(got, Selector | Constant)


@pytest.mark.parametrize(
    "text",
    [
        'apm_query{id=~"' + "(a*)*" * 2000 + 'b"}',
        'apm_query{id=~"' + "(" * 5000 + '"}',
        "1" + "+1" * 8000,
        "-" * 16_000 + "1",
        '{id="' + "\\u00e9" * 2700 + '"}',
        "apm_query{" + 'id="x",' * 2000 + "}",
    ],
)
def test_adversarial_text_is_answered_quickly(text: str) -> None:
    with cpu_bound(1.0), contextlib.suppress(SelectorError):
        parse_expr(text[:MAX_EXPR_CHARS])
