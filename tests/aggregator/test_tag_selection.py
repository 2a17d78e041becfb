"""The JVM operator's host-tag selection and grouping (``io.apm.aggregator.Selection``) against
the Python reference (``apm.query_select``) on the same queries, servers and tags, as
tests/storage/test_server_tables.py does for the shard; and the tag map's bytes
(aggregator/tag_map.py) read by ``io.apm.aggregator.TagTable``, which must answer every window
as ``TagMap.at`` does."""

from __future__ import annotations

import pytest

from aggregator.partials import _selections
from aggregator.plan import queries_frame
from aggregator.tag_map import TagMap
from apm.query import StoredQuery, parse
from apm.query_select import Selector, group_label

pytestmark = pytest.mark.integration

TAIL = "SELECT cpu WINDOW 10s COMPUTE avg"
QUERIES = [
    f"FROM role:web {TAIL}",
    f"FROM role:web {TAIL} BY dc",
    f"FROM role:web, role:api, db-1 WHERE env:prod {TAIL} BY dc, env",
    f"FROM dc:eu-* WHERE env:prod, role:?* {TAIL} BY server",
    f"FROM dc: {TAIL}",  # the servers without dc
    f"FROM dc:?* {TAIL} BY role",
    f"FROM * WHERE env:p*d {TAIL} BY dc",
    f"FROM web-[12] WHERE dc:[!u]* {TAIL} BY env TOP 2 BY avg",
    f"FROM role:*b* {TAIL} BY dc",
]
SERVERS = [
    ("web-1", {"role": "web", "dc": "eu-1", "env": "prod"}),
    ("web-2", {"role": "web", "dc": "us-1", "env": "dev"}),
    ("web-3", {"role": "web", "env": "prod"}),
    ("api-1", {"role": "api", "dc": "eu-2", "env": "prod"}),
    ("db-1", {"role": "db", "dc": "eu-1", "env": "prod"}),
    ("db-2", {"role": "db", "dc": "a,b\\c", "env": "prod"}),
    ("x-1", {}),
    ("x-2", {"role": "", "dc": "", "env": "pod"}),
]


def test_the_jvm_selects_and_groups_as_the_python_reference(spark):
    stored = [StoredQuery(f"q{i}", parse(t)) for i, t in enumerate(QUERIES)]
    java = _selections(spark, queries_frame(spark, stored))
    assert java.size() == len(stored) + 1  # the sentinel first
    checked = 0
    for i, s in enumerate(stored):
        sel, ref = java.get(i + 1), Selector(s.query)
        for server, tags in SERVERS:
            group = ref.group(server, tags)
            if group is None:
                want = None
            elif s.query.by_server:
                want = server
            elif s.query.group_by:
                want = group_label(s.query.group_by, group)
            else:
                want = ""
            assert sel.group(server, dict(tags)) == want, (s.query.text, server)
            checked += want is not None
    assert checked > 20  # the cases select, not only refuse


def test_the_jvm_reads_the_tag_maps_bytes_and_applies_the_same_window_rule(spark):
    m = TagMap()
    m.put("web-1", {"role": "web", "dc": "eu-1"}, 12_000)
    m.put("web-1", {"role": "web", "dc": "eu-2"}, 25_000)
    m.put("db-1", {"dc": "a,b=c"}, 0)
    m.put("gone", {"dc": "x"}, 5_000)
    m.put("gone", None, 31_000)
    table = spark._jvm.io.apm.aggregator.TagTable.decode(bytearray(m.encode()))
    assert table.size() == 3
    for server in ("web-1", "db-1", "gone", "nobody"):
        for width in (1, 5, 10, 60):
            for start in range(0, 70, width):
                assert dict(table.tagsAt(server, start, width)) == m.at(server, start, width)
