"""Alerting fixtures: a migrated keyspace of our own (results and alert tables, dropped at the
end), a repository on a settable clock, and a factory writing one query's windows."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from tests.support.keyspaces import scratch_keyspace

# A fixed, window-aligned moment in the past: tests pass their own `now` to the evaluator.
BASE = 1_763_000_000.0


def _keyspace(cassandra_session) -> Iterator[str]:
    with scratch_keyspace(cassandra_session, "alerting_test", alerts=True) as keyspace:
        yield keyspace


@pytest.fixture(scope="session")
def alert_keyspace(cassandra_session) -> Iterator[str]:
    """One keyspace for the tests that drive the evaluator in-process at moments they choose."""
    yield from _keyspace(cassandra_session)


@pytest.fixture
def own_keyspace(cassandra_session) -> Iterator[str]:
    """A keyspace for one test whose evaluator process runs on the wall clock over every rule
    (the other tests' rules, a year in the past, would be caught up and alert on its lag)."""
    yield from _keyspace(cassandra_session)


@pytest.fixture
def repo(cassandra_session, alert_keyspace):
    from storage.repository import Repository

    return Repository(cassandra_session, alert_keyspace, clock=lambda: BASE)


@pytest.fixture
def tables(cassandra_session, alert_keyspace):
    from storage.alerts import AlertStore

    return AlertStore(cassandra_session, alert_keyspace)


@pytest.fixture
def write_windows(repo) -> Callable[..., None]:
    """Writes ``values`` (None: no row) as consecutive 10 s windows of ``query_id`` from
    ``start``; ``version`` orders rewrites of one window (a later one wins)."""
    from apm.query import WindowResult

    def write(
        query_id: str, start: float, values: Sequence[float | None], version: int = 0
    ) -> None:
        repo.upsert_results(
            WindowResult(query_id, start + 10 * i, 10, {"avg": v, "max": v}, 5, BASE + version)
            for i, v in enumerate(values)
            if v is not None
        )

    return write


@pytest.fixture
def make_rule_body() -> Callable[..., dict[str, Any]]:
    def make(query_id: str, **over: Any) -> dict[str, Any]:
        return {
            "name": "cpu high",
            "query_id": query_id,
            "function": "avg",
            "comparison": ">",
            "thresholds": {"warning": 80},
            "for_s": 20,
            "nodata_windows": 1000,
            **over,
        }

    return make
