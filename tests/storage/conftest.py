"""Storage fixtures: one migrated keyspace of our own for the session (dropped at the end), and
repositories on it with an injectable clock. Tests isolate themselves by unique ids and names."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.keyspaces import keyspace_name, scratch_keyspace


@pytest.fixture(scope="session")
def storage_keyspace(cassandra_session) -> Iterator[str]:
    with scratch_keyspace(cassandra_session, "storage_test") as keyspace:
        yield keyspace


@pytest.fixture
def fresh_keyspace(cassandra_session) -> Iterator[Callable[[], str]]:
    """Factory for keyspace names that do not exist yet; whatever they become is dropped."""
    made: list[str] = []

    def make() -> str:
        made.append(keyspace_name("storage_test"))
        return made[-1]

    yield make
    for keyspace in made:
        cassandra_session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")


@pytest.fixture
def store_on(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Factory of a table's store for a test parametrized over ``"cassandra"`` and
    ``"memory"``: ``store_on(kind, Real, Memory)`` is ``Real(session, keyspace)`` on the
    shared keyspace (the test is then marked integration) or the stand-in ``Memory()`` held
    to the same contract."""

    def make(kind: str, real: Callable[[Any, str], Any], memory: Callable[[], Any]) -> Any:
        if kind == "memory":
            return memory()
        request.applymarker(pytest.mark.integration)
        session = request.getfixturevalue("cassandra_session")
        return real(session, request.getfixturevalue("storage_keyspace"))

    return make


class FakeClock:
    """A settable wall clock (epoch seconds)."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(time.time())


@pytest.fixture
def make_repo(cassandra_session, storage_keyspace) -> Callable[..., Any]:
    from storage.repository import Repository

    def make(clock: Callable[[], float] = time.time, concurrency: int = 64) -> Repository:
        return Repository(cassandra_session, storage_keyspace, clock=clock, concurrency=concurrency)

    return make


@pytest.fixture
def repo(make_repo, clock):
    return make_repo(clock=clock)


@pytest.fixture
def make_results() -> Callable[..., list]:
    """Factory: ``count`` consecutive windows of one query from ``start``, values derived from
    the index so that every window is distinguishable."""
    from apm.query import WindowResult

    def make(
        query_id: str,
        start: float,
        count: int,
        window_seconds: int = 10,
        updated_at: float | None = None,
    ) -> list[WindowResult]:
        # Cassandra timestamps hold milliseconds.
        stamp = round(updated_at if updated_at is not None else time.time(), 3)
        return [
            WindowResult(
                query_id,
                start + i * window_seconds,
                window_seconds,
                {"min": float(i), "max": 2.0 * i, "p99.9": i + 0.5},
                i + 1,
                stamp,
            )
            for i in range(count)
        ]

    return make
