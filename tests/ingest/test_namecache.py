"""The validator's caches of checked names stay within their byte budget under a flood of
long distinct names, and /metrics shows their bytes and evictions."""

from __future__ import annotations

import sys
import time

import pytest

from apm.model import MAX_NAME_LEN
from ingest.namecache import ENTRY_BYTES, NameCache
from ingest.validate import Validator

pytestmark = pytest.mark.unit

BUDGET = 256 * 1024


def _long(i: int, prefix: str) -> str:
    return f"{prefix}-{i:08d}-".ljust(MAX_NAME_LEN, "x")


def test_a_flood_of_long_names_stays_within_the_byte_budget():
    """2,000 servers and 2,000 metrics of the longest legal names: ~880 KB of text each,
    against a 256 KB budget (an entry-count bound of 200,000 would have kept them all)."""
    validator = Validator(10_000, 300, 86_400, cache_max_bytes=BUDGET)
    evicted: list[int] = []
    validator.servers.on_evict = evicted.append
    now = time.time()
    for i in range(2_000):
        doc = {"snapshots": [{"server": _long(i, "s"), "ts": now, "metrics": {_long(i, "m"): 1.0}}]}
        assert validator.validate(doc).samples == 1
        for cache in (validator.servers, validator.metrics):
            assert cache.bytes <= BUDGET
    assert evicted and sum(evicted) + len(validator.servers) == 2_000
    # The estimate is not optimistic: the strings it keeps take no more than it counts.
    held = sum(sys.getsizeof(_long(i, "s")) for i in range(len(validator.servers)))
    assert held <= validator.servers.bytes


def test_a_name_seen_again_costs_nothing_more():
    cache = NameCache(10 * (ENTRY_BYTES + 10))
    cache.add("a" * 10)
    cache.add("a" * 10)
    assert len(cache) == 1 and cache.bytes == ENTRY_BYTES + 10


def test_a_budget_smaller_than_one_name_keeps_nothing():
    cache = NameCache(ENTRY_BYTES)
    cache.add("web-1")
    assert len(cache) == 0 and cache.bytes == 0


def test_metrics_show_the_caches(make_client, make_batch):
    client = make_client(names_seen_max_bytes=2 * (ENTRY_BYTES + 16))
    answer = client.post("/v1/metrics", json=make_batch(servers=3, metrics=1))
    assert answer.status_code == 202
    text = client.get("/metrics").text
    assert 'apm_ingest_cache_bytes{cache="metrics"} 103.0' in text  # "test.m0"
    assert 'apm_ingest_cache_evictions_total{cache="servers"} 1.0' in text
