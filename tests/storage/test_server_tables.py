"""Where a server's series lives (storage.server_tables.server_shard): the Java writer
(io.apm.aggregator.ServerShard, ServerShardTest) must place every server where the Python
readers look, so both check the same names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage.server_tables import SERVER_SHARDS, server_shard

pytestmark = pytest.mark.unit


def test_the_shards_the_java_writer_computes_too():
    assert [server_shard(s) for s in ("a1", "web-0001", "db-9999", "\u00e9-server")] == [
        35,
        190,
        234,
        141,
    ]


@given(st.text(max_size=64))
def test_every_name_has_a_shard_in_range(server: str):
    assert 0 <= server_shard(server) < SERVER_SHARDS


def test_a_fleet_spreads_over_the_shards():
    counts = [0] * SERVER_SHARDS
    for i in range(10_000):
        counts[server_shard(f"srv-{i:05d}")] += 1
    assert min(counts) > 10 and max(counts) < 80  # ~39 a shard
