"""Host tags in the query language: FROM key:glob, WHERE, BY keys; their errors, bounds and
round trip; and the one refusal (apm.query.accept) of what the aggregator does not evaluate."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apm.query import MAX_SERVERS, Function, Query, QueryError, Top, accept, parse
from apm.query_tags import MAX_CONDITIONS, MAX_GROUP_KEYS, TagGlob
from storage import codec

pytestmark = pytest.mark.unit

TAIL = "SELECT cpu WINDOW 10s COMPUTE avg, p99"


def test_from_takes_tag_entries_unioned_with_server_globs():
    q = parse(f"FROM dc:eu-*, db-1, role:web {TAIL}")
    assert q.servers == ("db-1",)
    assert q.tags == (TagGlob("dc", "eu-*"), TagGlob("role", "web"))
    assert q.where == () and q.group_by == () and not q.by_server
    assert q.entries == ("db-1", "dc:eu-*", "role:web")
    only_tags = parse(f"FROM role:web {TAIL}")
    assert only_tags.servers == () and only_tags.tags == (TagGlob("role", "web"),)


def test_the_issues_example_and_a_ranking_over_tag_groups():
    q = parse("FROM role:web SELECT cpu.util WINDOW 10s COMPUTE avg, p99 BY dc")
    assert q.group_by == ("dc",) and not q.by_server and q.top is None
    q = parse(f"FROM * WHERE env:prod, dc:eu-? {TAIL} by dc, availability.zone BOTTOM 3 BY p99")
    assert q.where == (TagGlob("env", "prod"), TagGlob("dc", "eu-?"))
    assert q.group_by == ("dc", "availability.zone")
    assert q.top == Top(3, Function("percentile", 99.0), bottom=True)


def test_star_wins_over_tag_entries_and_duplicates_collapse():
    q = parse(f"FROM role:web, *, role:web WHERE env:prod, env:prod {TAIL} BY dc, dc")
    assert q.servers == ("*",) and q.tags == ()
    assert q.where == (TagGlob("env", "prod"),) and q.group_by == ("dc",)


def test_tag_value_globs_take_any_printable_character_but_the_separators():
    q = parse(f"FROM team:R&D/é-*, url:http://x:8080/* {TAIL}")
    assert q.tags == (TagGlob("team", "R&D/é-*"), TagGlob("url", "http://x:8080/*"))
    assert q.tags[1].key == "url"  # split at the first ':'
    assert parse(f"FROM dc: {TAIL}").tags == (TagGlob("dc", ""),)  # the empty (or no) value


@pytest.mark.parametrize(
    ("text", "position", "fragment"),
    [
        (f"FROM Role:web {TAIL}", 5, "tag key 'Role' must match [a-z][a-z0-9_.]*"),
        (f"FROM :web {TAIL}", 5, "tag key '' must match"),
        (f"FROM web-1, server:web-* {TAIL}", 12, "tag key 'server' is reserved"),
        (f"FROM {'k' * 65}:x {TAIL}", 5, "at most 64 characters"),
        (f"FROM dc:eu-[2 {TAIL}", 11, "'[' is never closed"),
        (f"FROM dc:eu]-1 {TAIL}", 10, "invalid tag-value glob 'eu]-1': unbalanced"),
        (f"FROM dc:{'a' * 257} {TAIL}", 8 + 256, "at most 256 characters"),
        (f"FROM dc:{'*a' * 33} {TAIL}", 8 + 64, "at most 32 runs of '*'"),
        (f"FROM dc:a\x00b {TAIL}", 9, "'\\x00' is not allowed in a tag-value glob"),
        (f"FROM WHERE env:prod {TAIL}", 5, "before WHERE"),
        (f"FROM * WHERE prod {TAIL}", 13, "expected a tag condition such as env:prod, got 'prod'"),
        (f"FROM * WHERE {TAIL}", 13, "expected a tag condition such as env:prod, got 'SELECT'"),
        (f"FROM * WHERE env:prod env:dev {TAIL}", 22, "expected SELECT, got 'env:dev'"),
        (f"FROM * WHERE server:a {TAIL}", 13, "reserved"),
        (f"FROM * {TAIL} BY DC", 49, "tag key 'DC' must match"),
        (f"FROM * {TAIL} BY dc,", 52, "expected a tag key such as dc, got the end"),
        (f"FROM * {TAIL} BY dc:eu", 49, "tag key 'dc:eu' must match"),
    ],
)
def test_errors_name_position_and_expectation(text, position, fragment):
    with pytest.raises(QueryError) as info:
        parse(text)
    assert info.value.position == position, info.value
    assert fragment in str(info.value)


def test_limits_refuse_at_the_first_part_past_them():
    entries = [f"role:r{i}" for i in range(MAX_SERVERS)]
    assert len(parse(f"FROM {', '.join(entries)} {TAIL}").tags) == MAX_SERVERS
    text = f"FROM {', '.join(entries)}, web-1 {TAIL}"  # tags and servers count together
    with pytest.raises(QueryError) as info:
        parse(text)
    assert info.value.position == text.index("web-1")
    conds = [f"k{i}:v" for i in range(MAX_CONDITIONS + 1)]
    text = f"FROM * WHERE {', '.join(conds)} {TAIL}"
    with pytest.raises(QueryError) as info:
        parse(text)
    assert info.value.position == text.index(conds[-1])
    assert len(parse(text.replace(f", {conds[-1]}", "")).where) == MAX_CONDITIONS
    keys = [f"k{i}" for i in range(MAX_GROUP_KEYS + 1)]
    text = f"FROM * {TAIL} BY {', '.join(keys)}"
    with pytest.raises(QueryError) as info:
        parse(text)
    assert info.value.position == text.rindex(keys[-1])
    assert len(parse(text.replace(f", {keys[-1]}", "")).group_by) == MAX_GROUP_KEYS


keys = st.from_regex(r"[a-z][a-z0-9_.]{0,6}", fullmatch=True).filter(lambda k: k != "server")
values = st.text(
    st.characters(blacklist_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp")).filter(
        lambda c: c.isprintable() and not c.isspace() and c not in ",()[]"
    ),
    max_size=8,
)
tag_globs = st.builds(TagGlob, keys, values)
servers = st.lists(st.from_regex(r"[a-z0-9][a-z0-9\-*?]{0,8}", fullmatch=True), max_size=3)


@given(
    servers=servers,
    tags=st.lists(tag_globs, max_size=3),
    where=st.lists(tag_globs, max_size=3),
    group=st.sampled_from(["none", "server", "keys"]),
    group_by=st.lists(keys, min_size=1, max_size=3),
    top=st.none() | st.tuples(st.integers(1, 100), st.booleans()),
)
def test_round_trip(servers, tags, where, group, group_by, top):
    servers = list(dict.fromkeys(servers)) or ([] if tags else ["*"])
    fns = (Function("avg"), Function("percentile", 99.0))
    q = Query(
        tuple(servers),
        "cpu.util",
        10,
        fns,
        by_server=group == "server",
        top=Top(top[0], fns[1], top[1]) if top and group != "none" else None,
        tags=() if "*" in servers else tuple(dict.fromkeys(tags)),
        where=tuple(dict.fromkeys(where)),
        group_by=tuple(dict.fromkeys(group_by)) if group == "keys" else (),
    )
    assert parse(q.text) == q
    assert parse(q.text).text == q.text


@pytest.mark.parametrize(
    "text",
    [
        f"FROM web-1, role:web {TAIL}",
        f"FROM web-* WHERE env:prod {TAIL}",
        f"FROM web-* {TAIL} BY dc TOP 5 BY avg",
        f"FROM * WHERE env:prod {TAIL} BY dc",
        f"FROM web-*, db-? {TAIL}",
        f"FROM * {TAIL} BY server TOP 5 BY avg",
        f"FROM *, role:web {TAIL} BY server",  # '*' already selects every server
    ],
)
def test_accept_takes_every_query_the_aggregator_evaluates_host_tags_included(text):
    assert accept(text) == parse(text)


LEGACY = [  # texts as stored in Cassandra before tags: the text is the source of truth
    "FROM web-*, db-1 SELECT cpu.util WINDOW 1m COMPUTE min, max, avg, percentile(99.9)",
    "FROM * SELECT cpu WINDOW 10s COMPUTE avg, percentile(99) BY server TOP 10 BY avg",
    "FROM where, select-1 SELECT cpu WINDOW 1m COMPUTE count",
]


@pytest.mark.parametrize("text", LEGACY)
def test_stored_texts_from_before_tags_load_unchanged(text):
    stored = codec.stored_query(("id-1", text, False, None, None, None))
    assert stored.query.text == text
    assert stored.query.tags == () and stored.query.where == () and stored.query.group_by == ()
    assert not stored.query.uses_tags and accept(text) == stored.query
