"""How bulk writes are cut into batches (storage.driver), with a fake session and token map:
rows of one replica set together, at most BATCH_PARTITIONS and about BATCH_BYTES a batch."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from storage.driver import BATCH_BYTES, BATCH_PARTITIONS, spread_chunks

pytestmark = pytest.mark.unit


class _Statement:
    def bind(self, params: tuple) -> SimpleNamespace:
        return SimpleNamespace(params=params, routing_key=params[0].encode())


class _TokenMap:
    """Two replicas: keys starting with "a" live on 10.0.0.1, the others on 10.0.0.2."""

    token_class = SimpleNamespace(from_key=lambda key: key)

    def get_replicas(self, keyspace: str, token: bytes) -> list[SimpleNamespace]:
        return [SimpleNamespace(endpoint="10.0.0.1" if token.startswith(b"a") else "10.0.0.2")]


def _session(token_map: object) -> SimpleNamespace:
    return SimpleNamespace(cluster=SimpleNamespace(metadata=SimpleNamespace(token_map=token_map)))


def _params(chunks: list[list[SimpleNamespace]]) -> list[list[tuple]]:
    return [[bound.params for bound in chunk] for chunk in chunks]


def test_rows_are_batched_by_replicas_ten_partitions_at_most():
    rows = [(f"{'ab'[i % 2]}{i}", {"avg": 1.0}) for i in range(25)]
    chunks = _params(spread_chunks(_session(_TokenMap()), _Statement(), rows, "ks"))
    assert [len(c) for c in chunks] == [BATCH_PARTITIONS, 3, BATCH_PARTITIONS, 2]
    assert all(len({p[0][0] for p in chunk}) == 1 for chunk in chunks)  # one replica a batch
    assert sorted(p for chunk in chunks for p in chunk) == sorted(rows)


def test_large_rows_go_fewer_a_batch_and_a_huge_one_alone():
    many = {f"p99.{i:03d}": 1.0 for i in range(64)}  # ~1.5 KB estimated
    rows = [(f"a{i}", many) for i in range(5)] + [("a-huge", {"x" * (2 * BATCH_BYTES): 1.0})]
    chunks = _params(spread_chunks(_session(_TokenMap()), _Statement(), rows, "ks"))
    assert [len(c) for c in chunks] == [2, 2, 1, 1]
    assert chunks[-1] == [rows[-1]]


def test_without_a_token_map_every_row_is_one_group():
    rows = [(f"{'ab'[i % 2]}{i}", 1) for i in range(12)]
    chunks = _params(spread_chunks(_session(None), _Statement(), rows, "ks"))
    assert chunks == [rows[:BATCH_PARTITIONS], rows[BATCH_PARTITIONS:]]
