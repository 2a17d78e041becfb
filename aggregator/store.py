"""What the aggregator's driver needs from storage: the storage contract's Repository satisfies
it, and unit tests pass an in-memory fake. The per-server rows of ``BY server`` queries and their
rankings are not here: the executors write them (aggregator/server_writes.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from apm.query import StoredQuery, WindowResult

__all__ = ["AggregatorStore", "connect_store"]


class AggregatorStore(Protocol):
    def list_queries(self, include_paused: bool = True) -> list[StoredQuery]: ...

    def upsert_results(self, rows: Iterable[WindowResult]) -> int: ...

    def touch_servers(self, last_seen: Mapping[str, float]) -> None: ...

    def touch_metrics(self, last_seen: Mapping[str, float]) -> None: ...

    def put_status(self, component: str, payload: Mapping[str, object]) -> None: ...

    def get_status(self) -> dict[str, dict]: ...


def connect_store(keyspace: str | None = None) -> AggregatorStore:
    """The real Repository, configured by its own ``APM_STORAGE_`` settings; ``keyspace``
    overrides theirs."""
    from storage.repository import Repository
    from storage.settings import StorageSettings

    overrides: dict[str, Any] = {"keyspace": keyspace} if keyspace else {}
    settings = StorageSettings(**overrides)
    return Repository.connect(settings)
