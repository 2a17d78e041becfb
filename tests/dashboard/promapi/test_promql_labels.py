"""``label_replace`` and ``label_join`` against hand-computed label sets (Prometheus'
semantics: the regex anchored by concatenation, Go's ``$`` expansion, an empty result deletes
the label, no match leaves the series alone), Prometheus' errors before anything is read, the
duplicate-labelset error at one step and the merge of series that end alike at different
steps; and, by hypothesis, the captures equal Python's ``re`` on patterns both accept, while
any regex text, replacement and label value is an answer or ExecutionError within bounded
CPU (RE2: no backtracking)."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.promapi.evaluate import Deadline
from dashboard.promapi.promql_labels import expand, relabel, relabeller
from dashboard.promapi.promql_parse import parse_promql
from dashboard.promapi.promql_rows import SAME_LABELSET, ExecutionError
from dashboard.promapi.promql_tree import Relabel
from dashboard.promapi.regex import MAX_PATTERN_CHARS
from dashboard.promapi.selector import SelectorError
from tests.dashboard.promapi.test_regex import patterns, values
from tests.support.cpu import cpu_bound

pytestmark = pytest.mark.unit

FOREVER = Deadline(math.inf, lambda: 0.0)
LABELS = {"__name__": "apm_query", "id": "q1", "fn": "p99", "server": "web-12"}


def _replace(dst: str, replacement: str, src: str, regex: str, labels: Any = None) -> Any:
    return relabeller("label_replace", (dst, replacement, src, regex))(labels or LABELS)


SAME = None  # the series as it was (no match)


@pytest.mark.parametrize(
    ("args", "changes"),
    [  # changes: each label's new value, None where it is deleted
        (("host", "$1", "server", "(.*)-.*"), {"host": "web"}),
        (("host", "${1}x", "server", "(.*)-(.*)"), {"host": "webx"}),
        (("host", "$1x", "server", "(.*)-(.*)"), {"host": None}),  # the group "1x": none
        (("n", "$2$1", "server", "web-(\\d)(\\d)"), {"n": "21"}),
        (("n", "$name", "server", "web-(?P<name>\\d+)"), {"n": "12"}),
        (("n", "${name}!", "server", "web-(?P<name>\\d+)"), {"n": "12!"}),
        (("n", "$$1 costs $", "server", "(.*)"), {"n": "$1 costs $"}),  # $$ and a bare $
        (("n", "${1", "server", "(.*)"), {"n": "${1"}),  # malformed: kept as text
        (("n", "$0", "server", "web"), SAME),  # anchored at both ends
        (("n", "$0", "server", "eb-12"), SAME),
        (("n", "$0", "server", "web-12"), {"n": "web-12"}),
        (("n", "$01", "server", "(web)-12"), {"n": None}),  # a leading zero: a name, none
        (("n", "$9", "server", "(.*)"), {"n": None}),  # no such group: empty
        (("fn", "", "fn", ".*"), {"fn": None}),  # an empty result deletes dst
        (("fn", "$1", "fn", "p(5)?.*"), {"fn": None}),  # an unmatched group is empty
        (("x", "yes", "absent", ""), {"x": "yes"}),  # an absent label's value is ""
        (("__name__", "renamed", "id", "q.*"), {"__name__": "renamed"}),
        (("x", "$1", "server", "a)|(web-12"), {"x": "web-12"}),  # ^(?:a)|(web-12)$, as Go
        (("x", "$1", "server", "(?i)(WEB)-12"), {"x": "web"}),
        (("x", "$1", "server", "(.)é?"), SAME),
    ],
)
def test_label_replace(args: tuple[str, str, str, str], changes: dict[str, str | None]) -> None:
    want = dict(LABELS)
    for name, value in (changes or {}).items():
        want.pop(name, None)
        if value is not None:
            want[name] = value
    assert _replace(*args) == want


def test_captures_count_characters_not_bytes() -> None:
    labels = {"s": "ééa-b"}
    assert _replace("d", "$1|$2", "s", "(é+a)-(.)", labels)["d"] == "ééa|b"


def test_label_join() -> None:
    join = relabeller("label_join", ("both", "/", "id", "absent", "fn"))
    assert join(LABELS) == {**LABELS, "both": "q1//p99"}
    assert relabeller("label_join", ("id", ",", "nothing"))(LABELS) == {
        k: v for k, v in LABELS.items() if k != "id"
    }  # "" deletes dst
    assert "id" not in relabeller("label_join", ("id", ","))(LABELS)  # no source: ""


@pytest.mark.parametrize(
    ("query", "words"),
    [
        (
            'label_replace(apm_query, "a-b", "x", "s", "y")',
            "invalid destination label name in label_replace(): a-b",
        ),
        ('label_replace(apm_query, "", "x", "s", "y")', "invalid destination label name"),
        (
            'label_replace(apm_query, "d", "x", "s", "(")',
            "invalid regular expression in label_replace(): (",
        ),
        ('label_replace(apm_query, "d", "x", "s", "a(?=b)")', "RE2: invalid perl operator"),
        ('label_replace(apm_query, "d", "x", "s", "\\\\C")', "any byte"),
        ('label_replace(apm_query, "d", "x", "s", "\\\\p{L}{1000}")', "too large"),
        (
            'label_join(apm_query, "d", ",", "a", "b-c")',
            "invalid source label name in label_join(): b-c",
        ),
        (
            'label_join(apm_query, "1d", ",", "a")',
            "invalid destination label name in label_join(): 1d",
        ),
    ],
)
def test_prometheus_errors_before_any_read(query: str, words: str) -> None:
    with pytest.raises(ExecutionError) as caught:
        parse_promql(query)
    assert words in str(caught.value)


def test_a_pattern_past_the_cap_is_refused() -> None:
    long = "a" * (MAX_PATTERN_CHARS + 1)
    with pytest.raises(ExecutionError, match="at most"):
        relabeller("label_replace", ("d", "x", "s", long))


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ('label_replace(apm_query, "d", "x", "s")', "expected 5 argument"),
        ('label_join(apm_query, "d")', "expected at least 3 argument"),
        ('label_replace(1, "d", "x", "s", "y")', "expected type vector"),
        ('label_join(apm_query, "d", ",", 1)', "expected type string"),
    ],
)
def test_bad_calls_are_parse_errors(query: str, words: str) -> None:
    with pytest.raises(SelectorError, match=words):
        parse_promql(query)


def test_parsed_with_its_arguments() -> None:
    node = parse_promql('label_join(sum by (id, fn) (apm_query), "d", "-", "id", "fn")')
    assert isinstance(node, Relabel) and node.args == ("d", "-", "id", "fn")
    node = parse_promql('label_replace(apm_query, ("d"), (("x")), "s", ".*")')
    assert isinstance(node, Relabel) and node.args == ("d", "x", "s", ".*")


def test_same_labels_at_one_step_is_prometheus_error_and_at_others_one_series() -> None:
    rows: list[Any] = [({"a": "1", "b": "x"}, [1.0, None]), ({"a": "1", "b": "y"}, [None, 2.0])]
    merged = relabel("label_replace", ("b", "", "b", ".*"), rows, (2, 100, FOREVER))
    assert merged == [({"a": "1"}, [1.0, 2.0])]
    rows[1] = ({"a": "1", "b": "y"}, [3.0, 2.0])
    with pytest.raises(ExecutionError, match=SAME_LABELSET):
        relabel("label_replace", ("b", "", "b", ".*"), rows, (2, 100, FOREVER))


def test_values_are_kept_and_empty_rows_dropped() -> None:
    rows: list[Any] = [({"a": "1"}, [math.nan, -1.5]), ({"a": "2"}, [None, None])]
    got = relabel("label_join", ("c", "+", "a", "a"), rows, (2, 100, FOREVER))
    assert len(got) == 1 and got[0][0] == {"a": "1", "c": "1+1"} and got[0][1][1] == -1.5
    assert math.isnan(got[0][1][0])


def test_expand_is_gos() -> None:
    spans = [(0, 5), (0, 2), (-1, -1)]
    assert expand("<$1|$2|$3|${1}0|$10|$$|$>", "ab-cd", spans, {}) == "<ab|||ab0||$|$>"
    assert expand("$x_1.", "ab-cd", spans, {"x_1": 1}) == "ab."
    assert expand("$é", "ab", [(0, 2), (0, 1)], {"é": 1}) == "a"  # names are Unicode words
    assert expand("${01}", "ab", [(0, 2), (0, 1)], {"01": 1}) == "a"  # a name, not 1


@settings(max_examples=300, deadline=None)
@given(patterns, st.lists(values, min_size=1, max_size=4))
def test_captures_equal_pythons_re_where_both_accept(pattern: str, subjects: list[str]) -> None:
    try:
        python = re.compile(f"^(?:{pattern})\\Z".replace("$", r"\Z"), re.ASCII)
    except re.error:
        return
    template = "|".join(f"${{{i}}}" for i in range(python.groups + 1))
    replace = relabeller("label_replace", ("d", template + "#", "s", pattern))
    for subject in subjects:
        found = python.search(subject)
        got = replace({"s": subject})
        if found is None:
            assert got == {"s": subject}, (pattern, subject)
        else:
            want = "|".join(found.group(i) or "" for i in range(python.groups + 1))
            assert got["d"] == want + "#", (pattern, subject)


any_text = st.text(max_size=80)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(any_text, st.text(alphabet="ab()[]{}|*+?.^$\\-,0123456789:CQEpP<>=!", max_size=60)),
    st.text(alphabet="$ab{}12_é", max_size=20),
    st.one_of(any_text, st.text(alphabet="ab-é\n", max_size=2000)),
)
def test_any_regex_replacement_and_value_answer_or_refuse_within_bounds(
    regex: str, replacement: str, value: str
) -> None:
    with cpu_bound(2.0):
        try:
            replace = relabeller("label_replace", ("d", replacement, "s", regex))
        except ExecutionError as exc:
            assert str(exc).startswith("invalid regular expression in label_replace(): ")
            return
        got = replace({"s": value, "t": "u"})
    assert {k: v for k, v in got.items() if k != "d"} == {"s": value, "t": "u"}
    assert isinstance(got.get("d", "x"), str) and got.get("d", "x")  # set, or deleted


@pytest.mark.parametrize("pattern", ["(a+)+b", "(a|a)*c", "(.*)*x", "((a?){30}){1,30}b"])
def test_backtracking_bombs_stay_linear(pattern: str) -> None:
    replace = relabeller("label_replace", ("d", "$1", "s", pattern))
    with cpu_bound(1.0):
        assert replace({"s": "a" * 20_000}) == {"s": "a" * 20_000}
