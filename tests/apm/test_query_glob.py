"""Server globs: the compiled regex matches exactly what a plain glob matcher matches, in time
linear in the name, in Python here and in Java (aggregator/jvm SelectionTest, whose regexes
are checked below to be this module's output)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apm.query import Function, Query, QueryError, parse
from apm.query_glob import (
    MAX_GLOB_CHARS,
    MAX_GLOB_STARS,
    SERVER_GLOB,
    TAG_VALUE_GLOB,
    GlobError,
    check,
    glob_to_regex,
)
from tests.support.cpu import cpu_bound

pytestmark = pytest.mark.unit

JAVA_TEST = (
    Path(__file__).parents[2] / "aggregator/jvm/src/test/java/io/apm/aggregator/SelectionTest.java"
)


def reference(glob: str, name: str) -> bool:
    """Shell-glob matching by plain recursion over (glob offset, name offset), memoised: the
    definition the regexes must agree with, sharing no code with apm.query_glob."""

    def in_class(body: str, ch: str) -> bool:
        k = 0
        while k < len(body):
            if k + 2 < len(body) and body[k + 1] == "-":
                if body[k] <= ch <= body[k + 2]:
                    return True
                k += 3
            else:
                if body[k] == ch:
                    return True
                k += 1
        return False

    @cache
    def at(i: int, j: int) -> bool:
        if i == len(glob):
            return j == len(name)
        if glob[i] == "*":
            return at(i + 1, j) or (j < len(name) and at(i, j + 1))
        if j == len(name):
            return False
        if glob[i] == "[":
            end = glob.index("]", i + 1)
            body = glob[i + 1 : end]
            negate = body.startswith("!")
            member = in_class(body[1:] if negate else body, name[j])
            return member != negate and at(end + 1, j + 1)
        return glob[i] in ("?", name[j]) and at(i + 1, j + 1)

    return at(0, 0)


def query(*globs: str) -> Query:
    return Query(globs, "m", 10, (Function("min"),))


# Globs over a small alphabet, so that they match often; names over the same letters.
atoms = st.sampled_from(
    ["a", "b", "-", "*", "**", "?", "[ab]", "[!a]", "[a-b]", "[-a]", "[!-]", "[--a]", "[a-b-c]"]
)
globs = st.lists(atoms, max_size=10).map("".join).filter(bool)
names = st.text(alphabet="ab-c", max_size=12)


@settings(max_examples=1000)
@given(glob=globs, name=names)
def test_a_glob_matches_exactly_what_a_plain_glob_matcher_matches(glob, name):
    want = reference(glob, name)
    q = query(glob)
    assert q.matches(name) == want
    # Spark's RLIKE is Java's find(): the anchors must hold under search too.
    assert (re.search(q.server_regex(), name) is not None) == want


@settings(max_examples=300)
@given(several=st.lists(globs, min_size=1, max_size=4, unique=True), name=names)
def test_several_globs_match_what_any_of_them_matches(several, name):
    q = query(*several)
    assert q.matches(name) == any(reference(g, name) for g in several)


def test_the_shell_examples():
    q = parse("FROM web-*, db-?, cache-[12], x[!0-4]y SELECT m WINDOW 1s COMPUTE min")
    for name in ("web-", "web-042", "db-7", "cache-2", "x5y", "xay"):
        assert q.matches(name), name
    for name in ("web", "xweb-1", "db-10", "db-", "cache-3", "x3y", "x5yy", "Web-1"):
        assert not q.matches(name), name


WORST = [
    "*?" * 16 + "Z",  # the review's example: the naive regex backtracks for years
    "*a" * 16 + "b",
    "*" + "a" * 40 + "b*",
    "*aaaaaaa" * MAX_GLOB_STARS,  # the longest glob with the most stars
    "?*" * 16 + "*[!a]" * 15,
]


@pytest.mark.parametrize("glob", WORST)
def test_the_worst_globs_match_in_time_linear_in_the_name(glob):
    assert len(glob) <= MAX_GLOB_CHARS
    q = parse(f"FROM {glob} SELECT m WINDOW 1s COMPUTE min")
    with cpu_bound(5.0):  # each is about 10 ms here; the naive regexes never finish
        for name in ("a" * 200, "a" * 199 + "b", "ab" * 100, "a" * 100 + "Z"):
            q.matches(name)
            re.search(q.server_regex(), name)
    for name in ("a" * 30, "a" * 29 + "b", "ab" * 15, "a" * 29 + "Z"):
        assert q.matches(name) == reference(glob, name), name


@settings(max_examples=100, deadline=None)
@given(parts=st.lists(st.sampled_from(["*", "*?", "*a", "?*", "a", "*[a]"]), min_size=6))
def test_any_accepted_glob_matches_a_long_name_in_bounded_time(parts):
    glob = "".join(parts) + "Z"  # matches no name below: a failed match tries the most
    try:
        q = parse(f"FROM {glob} SELECT m WINDOW 1s COMPUTE min")
    except QueryError:
        return  # too long, or too many stars
    with cpu_bound(2.0):
        assert not q.matches("a" * 200)
        assert not q.matches("a" * 199 + "b")


@pytest.mark.parametrize(
    ("glob", "offset", "fragment"),
    [
        ("][", 1, "never closed"),
        ("a[b", 1, "never closed"),
        ("a]", 1, "unbalanced"),
        ("a" * (MAX_GLOB_CHARS + 1), MAX_GLOB_CHARS, "at most 256 characters"),
        ("*a" * (MAX_GLOB_STARS + 1), 2 * MAX_GLOB_STARS, "at most 32 runs of '*'"),
        ("web-[!]", 4, "invalid class"),
        ("web$", 3, "'$' is not allowed"),
    ],
)
def test_a_refused_glob_names_its_position(glob, offset, fragment):
    text = f"FROM web-1, {glob} SELECT m WINDOW 1s COMPUTE min"
    with cpu_bound(2.0), pytest.raises(QueryError) as info:
        parse(text)
    assert info.value.position == len("FROM web-1, ") + offset
    assert fragment in info.value.detail


def test_runs_of_stars_count_once_and_keep_the_text():
    q = parse("FROM **a*** SELECT m WINDOW 1s COMPUTE min")
    assert q.servers == ("**a***",) and q.matches("xay") and not q.matches("xy")
    assert glob_to_regex("**a***") == glob_to_regex("*a*")


def test_the_java_test_runs_exactly_the_regexes_of_this_module():
    pairs = re.findall(r'\{"([^"]*)", "((?:[^"\\]|\\.)*)"\}', JAVA_TEST.read_text())
    assert len(pairs) >= 10
    for glob, java_regex in pairs:
        assert glob_to_regex(glob) == java_regex.replace("\\\\", "\\"), glob
    assert {glob for glob, _ in pairs} >= set(WORST[:4])


@pytest.mark.parametrize(
    ("glob", "kind", "offset"),
    [
        ("web-é", SERVER_GLOB, 4),
        ("eu:1", SERVER_GLOB, 2),
        ("a b", TAG_VALUE_GLOB, 1),
        ("a,b", TAG_VALUE_GLOB, 1),
        ("f(x)", TAG_VALUE_GLOB, 1),
        ("a\u200bb", TAG_VALUE_GLOB, 1),  # a format character: no tag value holds one
    ],
)
def test_each_kind_of_glob_refuses_the_characters_it_cannot_hold(glob, kind, offset):
    with pytest.raises(GlobError) as info:
        check(glob, kind)
    assert info.value.offset == offset and kind.name in info.value.message


def test_a_tag_value_glob_holds_what_a_tag_value_may_hold_and_matches_it_literally():
    for glob in ("R&D/é-*", "http://x:8080/*", "a.b+c$^{2}|d"):
        check(glob, TAG_VALUE_GLOB)
    regex = glob_to_regex("a.b+c$^{2}|d", TAG_VALUE_GLOB)
    assert re.fullmatch(regex, "a.b+c$^{2}|d") and not re.fullmatch(regex, "aXb+c$^{2}|d")
