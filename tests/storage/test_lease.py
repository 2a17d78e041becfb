"""The lease on the real Cassandra: one holder at a time, renewed by its holder only, free
again after its TTL or a release."""

from __future__ import annotations

import time
import uuid

import pytest

from storage.lease import Lease

pytestmark = pytest.mark.integration


def test_one_holder_at_a_time_until_the_ttl_or_a_release(cassandra_session, storage_keyspace):
    name = f"lease-{uuid.uuid4().hex[:8]}"
    a = Lease(cassandra_session, storage_keyspace, name, "a", ttl_s=2)
    b = Lease(cassandra_session, storage_keyspace, name, "b", ttl_s=2)
    assert a.acquire() and a.current() == "a"
    assert not b.acquire()
    assert a.acquire()  # renewed by its holder
    # a stops renewing (as after kill -9): the TTL frees the lease and b takes it.
    deadline = time.monotonic() + 30
    while not b.acquire():
        assert time.monotonic() < deadline, "the lease never expired"
        time.sleep(0.2)
    assert b.current() == "b" and not a.acquire()
    a.release()  # not the holder: changes nothing
    assert b.current() == "b"
    b.release()
    assert a.current() is None and a.acquire()
