"""Which servers a query selects and in which group, from a server's name and tags: against
examples, against a plain definition (fnmatch, any FROM entry and every WHERE condition), and
in time linear in the values."""

from __future__ import annotations

from fnmatch import fnmatchcase

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apm.query import Function, Query, parse
from apm.query_glob import MAX_GLOB_STARS
from apm.query_select import Selector, group_of
from apm.query_tags import TagGlob
from tests.support.cpu import cpu_bound

pytestmark = pytest.mark.unit

TAIL = "SELECT cpu WINDOW 10s COMPUTE avg"
WEB_EU = {"role": "web", "dc": "eu-1", "env": "prod"}


@pytest.mark.parametrize(
    ("text", "server", "tags", "group"),
    [
        (f"FROM * {TAIL}", "any-1", {}, ()),
        (f"FROM role:web {TAIL}", "web-1", WEB_EU, ()),
        (f"FROM role:web {TAIL}", "db-1", {"role": "db"}, None),
        (f"FROM role:web {TAIL}", "web-1", {}, None),  # no role: the empty value
        (f"FROM dc:eu-*, db-1 {TAIL}", "db-1", {}, ()),  # by name
        (f"FROM dc:eu-*, db-1 {TAIL}", "db-2", {"dc": "eu-2"}, ()),  # by tag
        (f"FROM dc:eu-*, db-1 {TAIL}", "db-2", {"dc": "us-1"}, None),
        (f"FROM * WHERE env:prod, role:web {TAIL}", "w", WEB_EU, ()),
        (f"FROM * WHERE env:prod, role:web {TAIL}", "w", {**WEB_EU, "role": "db"}, None),
        (f"FROM db-1 WHERE env:prod {TAIL}", "db-1", {"env": "dev"}, None),  # WHERE holds too
        (f"FROM * WHERE dc:eu-*, dc:*-1 {TAIL}", "w", WEB_EU, ()),  # both on one key
        (f"FROM * WHERE dc:eu-*, dc:*-2 {TAIL}", "w", WEB_EU, None),
        (f"FROM * WHERE dc: {TAIL}", "w", {"role": "web"}, ()),  # dc: selects "no dc"
        (f"FROM * WHERE dc:?* {TAIL}", "w", {"role": "web"}, None),  # dc:?* needs one
        (f"FROM * WHERE dc:* {TAIL}", "w", {}, ()),  # '*' matches the empty value
        (f"FROM role:web {TAIL} BY dc", "web-1", WEB_EU, ("eu-1",)),
        (f"FROM role:web {TAIL} BY dc", "web-1", {"role": "web"}, ("",)),  # no dc: ""
        (f"FROM * {TAIL} BY dc, role", "w", WEB_EU, ("eu-1", "web")),
        (f"FROM * {TAIL} BY role, dc", "w", {"dc": "eu-1"}, ("", "eu-1")),
        (f"FROM role:web {TAIL} BY server", "web-7", WEB_EU, ("web-7",)),
        (f"FROM * {TAIL} BY dc TOP 3 BY avg", "w", WEB_EU, ("eu-1",)),
        (f"FROM team:R&D/* {TAIL}", "w", {"team": "R&D/ops"}, ()),
        (f"FROM team:a?b {TAIL}", "w", {"team": "a b"}, ()),  # '?' matches a separator
    ],
)
def test_selection_and_group_of_examples(text, server, tags, group):
    q = parse(text)
    assert group_of(q, server, tags) == group
    assert Selector(q).selects(server, tags) == (group is not None)


# Globs over an alphabet where fnmatch and the query's globs agree (no classes).
globs = st.text(alphabet="ab-*?", max_size=6)
server_globs = globs.filter(bool)
values = st.text(alphabet="ab-", max_size=6)
tag_sets = st.dictionaries(st.sampled_from(["k", "j", "l"]), values, max_size=3)
conditions = st.lists(st.builds(TagGlob, st.sampled_from(["k", "j", "l"]), globs), max_size=3)


def definition(q: Query, server: str, tags: dict[str, str]) -> tuple[str, ...] | None:
    """The selection and grouping as the docs state them, sharing nothing with query_select."""
    entry = q.all_servers or any(fnmatchcase(server, g) for g in q.servers)
    entry = entry or any(fnmatchcase(tags.get(t.key, ""), t.glob) for t in q.tags)
    if not entry or not all(fnmatchcase(tags.get(c.key, ""), c.glob) for c in q.where):
        return None
    return (server,) if q.by_server else tuple(tags.get(k, "") for k in q.group_by)


@settings(max_examples=1000)
@given(
    servers=st.lists(server_globs, max_size=2),
    tags=conditions,
    where=conditions,
    group=st.sampled_from([(), ("k",), ("j", "k"), "server"]),
    server=values.filter(bool),
    server_tags=tag_sets,
)
def test_selection_agrees_with_the_definition(servers, tags, where, group, server, server_tags):
    if "*" in servers or not (servers or tags):
        servers, tags = ["*"], []  # as the parser normalises
    q = Query(
        tuple(dict.fromkeys(servers)),
        "m",
        10,
        (Function("avg"),),
        by_server=group == "server",
        tags=tuple(dict.fromkeys(tags)),
        where=tuple(dict.fromkeys(where)),
        group_by=() if group == "server" else tuple(group),
    )
    assert parse(q.text) == q  # a query the language can say
    assert Selector(q).group(server, server_tags) == definition(q, server, server_tags)


WORST = ["*?" * 16 + "Z", "*a" * 16 + "b", "*aaaaaaa" * MAX_GLOB_STARS, "?*" * 16 + "*[!a]" * 15]


@pytest.mark.parametrize("glob", WORST)
def test_the_worst_tag_value_globs_match_in_time_linear_in_the_value(glob):
    q = parse(f"FROM k:{glob} WHERE j:{glob} {TAIL} BY k")
    selector = Selector(q)
    with cpu_bound(5.0):  # the naive regexes of these never finish
        for value in ("a" * 128, "a" * 127 + "b", "ab" * 64, "a" * 127 + "Z"):
            selector.group("s", {"k": value, "j": value})
