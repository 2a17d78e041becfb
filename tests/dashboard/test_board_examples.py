"""The example dashboard `apm run` creates: over the example queries, once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from apm.query import StoredQuery, parse
from dashboard.board_examples import EXAMPLE_NAME, example_board, seed_example
from launch.run import EXAMPLE_QUERIES as TEMPLATES
from tests.support.keyspaces import scratch_repository

# As `apm run` fills them in with this host's name.
EXAMPLE_QUERIES = [t.replace("<this host>", "host-1") for t in TEMPLATES]


def _stored(texts: list[str]) -> list[StoredQuery]:
    return [StoredQuery(f"q{i}", parse(t)) for i, t in enumerate(texts)]


@pytest.mark.unit
def test_the_example_covers_every_example_query_in_a_valid_grid() -> None:
    board = example_board(_stored(EXAMPLE_QUERIES))
    assert board.name == EXAMPLE_NAME
    assert {q for p in board.panels for q in p.queries} == {f"q{i}" for i in range(7)}
    assert [p.chart for p in board.panels].count("table") == 2
    # The fleet's CPU split per server, and its top 10 as a table (issue 26).
    split, top = (_stored(EXAMPLE_QUERIES)[i].query for i in (5, 6))
    assert split.by_server and split.top is None
    assert top.top is not None and top.top.n == 10 and not top.top.bottom
    charts = {p.queries: p.chart for p in board.panels}
    assert charts[("q5",)] == "lines" and charts[("q6",)] == "table"
    assert all(p.x + p.w <= 12 for p in board.panels)
    # A missing query's panels are left out, the rest stay.
    partial = example_board([None, *_stored(EXAMPLE_QUERIES)[1:]])
    assert "q0" not in {q for p in partial.panels for q in p.queries}
    assert len(partial.panels) == len(board.panels) - 1


@pytest.fixture
def fresh_repo(stack: Any) -> Iterator[Any]:
    with scratch_repository("apm_dash_ex", hosts=stack.host, port=stack.cassandra_port) as repo:
        yield repo


@pytest.mark.integration
def test_seeding_creates_the_example_once(fresh_repo: Any) -> None:
    from storage.dashboards import DashboardStore

    assert seed_example(fresh_repo, EXAMPLE_QUERIES) is None  # no example query stored
    for text in EXAMPLE_QUERIES:
        fresh_repo.save_query(text)
    board_id = seed_example(fresh_repo, EXAMPLE_QUERIES)
    assert board_id is not None
    assert seed_example(fresh_repo, EXAMPLE_QUERIES) is None  # a dashboard exists: left alone
    stored = DashboardStore(fresh_repo.session, fresh_repo.keyspace).list()
    assert [(b.id, b.body["name"]) for b in stored] == [(board_id, EXAMPLE_NAME)]
    assert len(stored[0].body["panels"]) == 8
