"""The label matchers' regular expressions (dashboard.promapi.regex, on RE2): the same
whole-value matches as Python's re (ASCII classes, as RE2) on generated patterns both accept,
the literal-alternation fast path the same as RE2, time linear in the value whatever the
pattern, and RegexError (never another exception) for anything refused."""

from __future__ import annotations

import re

import pytest
import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.promapi.regex import (
    MAX_PATTERN_CHARS,
    MAX_PROGRAM,
    RegexError,
    compile_regex,
)
from tests.support.cpu import cpu_bound

pytestmark = pytest.mark.unit

_LEAVES = st.sampled_from(
    [
        *("a", "b", "-", "é", r"\.", ".", "[ab]", "[^a]", "[a-c]", "[.-]", r"[\d-]", "[^-]"),
        *(r"\d", r"\w", r"\s", r"\D", r"\W", r"\b", "^", "$", "(?i:A)", "(?s:.)"),
    ]
)


def _wrap(kind: str, inner: str) -> str:
    return f"(?:{inner}){kind}" if kind else f"({inner})"


patterns = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3).map("".join),
        st.lists(inner, min_size=2, max_size=3).map(lambda xs: "(?:" + "|".join(xs) + ")"),
        st.tuples(
            st.sampled_from(["", "*", "+", "?", "{2}", "{1,2}", "{0,}", "*?", "+?"]), inner
        ).map(lambda t: _wrap(*t)),
    ),
    max_leaves=8,
)
values = st.text(alphabet="ab-.1 \n_éA", max_size=8)


@settings(max_examples=400)
@given(patterns, st.lists(values, min_size=1, max_size=5))
def test_same_whole_value_matches_as_python_re(pattern: str, subjects: list[str]) -> None:
    try:
        # Python's $ also matches before a final newline; RE2's (without (?m)) is \z.
        python = re.compile(pattern.replace("$", r"\Z"), re.ASCII)
    except re.error:
        return
    try:
        ours = compile_regex(pattern)
    except RegexError:  # only a limit may refuse what both engines' syntax shares
        pytest.fail(f"refused {pattern!r}")
    for subject in subjects:
        assert ours.matches(subject) == bool(python.fullmatch(subject)), (pattern, subject)


words = st.lists(st.text(alphabet="ab.|()\\-é_ *$", max_size=6), min_size=1, max_size=6)


@settings(max_examples=300)
@given(words, st.sampled_from(["{}", "({})", "(?:{})"]), st.lists(values, max_size=4))
def test_literal_alternations_match_as_re2(
    alternatives: list[str], frame: str, subjects: list[str]
) -> None:
    """Grafana's multi-value variables: regex-escaped values joined by | are a set lookup
    that answers as RE2 does."""
    pattern = frame.format("|".join(re.escape(w) for w in alternatives))
    compiled = compile_regex(pattern)
    assert compiled._literals is not None, pattern
    for subject in [*subjects, *alternatives]:
        assert compiled.matches(subject) == (re2.fullmatch(pattern, subject) is not None)


any_text = st.lists(
    st.one_of(st.characters(), st.sampled_from(["\ud800", "\udfff", "\\C", "\\Q", "\\E"])),
    max_size=100,
).map("".join)


@settings(max_examples=300)
@given(
    st.one_of(any_text, st.text(alphabet="ab()[]{}|*+?.^$\\-,0123456789:CQEpP<>=!", max_size=60))
)
def test_any_text_compiles_or_is_a_regex_error(text: str) -> None:
    try:
        compiled = compile_regex(text)
    except RegexError as exc:
        assert str(exc) and len(str(exc)) < 200
        return
    compiled.matches("ab" * 20)
    compiled.matches("\ud800 é")


@pytest.mark.parametrize(
    "pattern",
    ["(a+)+b", "(a|a)*c", "(.*)*x", "(a*)*b", "((a?){30}){1,30}b", "(?:a|aa)+b", "(a|aa)*$b"],
)
def test_patterns_that_blow_up_a_backtracker_stay_linear(pattern: str) -> None:
    value = "a" * 20_000  # Python's re needs far beyond the age of the universe for some
    with cpu_bound(1.0):
        assert not compile_regex(pattern).matches(value)


@pytest.mark.parametrize(
    ("pattern", "value", "expected"),
    [
        ("web-.*", "web-1", True),
        ("web-.*", "xweb-1", False),  # anchored, as in Prometheus
        ("web-.", "web-1x", False),
        ("^p9.*$", "p99", True),
        ("p50|p99", "p99", True),
        ("p50|p99", "p50x", False),
        ("(p50|p99)", "p95", False),
        (r"cpu\.util", "cpu.util", True),
        (r"cpu\.util", "cpuXutil", False),
        ("[^0-9]+", "abc", True),
        (r"\D+", "abc", True),
        (r"\d", "٣", False),  # ASCII, as in RE2 and Go
        ("a.b", "a\nb", False),  # '.' is not a newline (Prometheus 2.x)
        ("(?i)P99", "p99", True),  # RE2's flags, as Prometheus accepts them
        (r"\pL+", "naïve", True),
        ("a^b", "ab", False),
        (r"\Q.*\E", ".*", True),
        (r"\Q.*\E", "ab", False),
        (r"\QA\C\E", "A\\C", True),  # quoted: not the byte escape
    ],
)
def test_examples(pattern: str, value: str, expected: bool) -> None:
    assert compile_regex(pattern).matches(value) is expected


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        ("a(?=b)", "invalid perl operator"),
        (r"(a)\1", "invalid escape"),
        ("a**", "bad repetition"),
        ("*a", "no argument for repetition"),
        ("a{2,1}", "invalid repetition size"),
        ("a{1001}", "invalid repetition size"),
        ("(a", "missing )"),
        ("a)|(b", "unexpected )"),  # refused, not wrapped into ^(?:a)|(b)$
        ("[a", "missing ]"),
        ("[z-a]", "invalid character class range"),
        ("\\", "trailing \\"),
        (r"a\C", r"\C"),
        ("\ud800+", "not valid Unicode"),  # a bare literal is a set lookup: accepted
        (r"\p{L}{1000}", "too large"),
        ("x" * 16_000 + ".*", f"more than {MAX_PROGRAM}"),
        ("x" * (MAX_PATTERN_CHARS + 1), "at most"),
        ("(" * 5000, "missing )"),
    ],
)
def test_refused_with_a_clear_error(pattern: str, words: str) -> None:
    # max_mem bounds the work of a refusal
    with cpu_bound(1.0), pytest.raises(RegexError, match=re.escape(words)) as caught:
        compile_regex(pattern)
    assert len(str(caught.value)) < 200  # RE2 quotes the pattern; kept short


def test_literal_alternations_are_a_set_lookup() -> None:
    ids = [f"0000000{i}-aaaa-bbbb-cccc-dddddddddddd" for i in range(400)]
    compiled = compile_regex("(" + "|".join(ids) + ")")  # past MAX_PROGRAM through RE2
    assert compiled._literals is not None
    assert compiled.matches(ids[123]) and not compiled.matches(ids[123] + "x")
    for pattern in ["(a)|(b)", "a|b*", r"a\d", "(?i:a|b)"]:
        assert compile_regex(pattern)._literals is None, pattern
    assert compile_regex("(a)|(b)").matches("b")


def test_a_pattern_at_the_cap_is_accepted() -> None:
    assert compile_regex("a" * MAX_PATTERN_CHARS).matches("a" * MAX_PATTERN_CHARS)
