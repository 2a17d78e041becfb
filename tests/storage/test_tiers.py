"""The rollup tiers' tables against the real Cassandra (storage/tiers.py): partials and tier rows
written idempotently and read back, bad ones refused whole, the tiers' own TTLs migrated."""

from __future__ import annotations

import time

import pytest

from apm.loghist import LogHistogram
from apm.query import WindowResult
from apm.tiers import WindowPartial

pytestmark = pytest.mark.integration

NOW = float(int(time.time() // 3600) * 3600)  # recent: tier reads stop at their retention


def _partial(qid: str, start: float, n: int, updated: float, hist: bytes | None = None):
    values = [float(i) for i in range(1, n + 1)]
    return WindowPartial(
        qid,
        start,
        10,
        n,
        sum(values),
        min(values),
        max(values),
        LogHistogram.of(values).encode() if hist is None else hist,
        updated,
    )


def test_partials_are_written_once_per_window_newest_version_wins(make_repo):
    repo, qid = make_repo(), "q-partials"
    older = [_partial(qid, NOW - 3600 + 10 * i, i + 1, NOW - 60) for i in range(400)]
    assert repo.upsert_partials(older) == 400
    newer = _partial(qid, NOW - 3600, 50, NOW - 30)
    repo.upsert_partials([newer])
    repo.upsert_partials([older[0]])  # a replayed older version changes nothing
    got = repo.read_partials(qid, NOW - 3600, NOW)
    assert len(got) == 360  # [start, end): one hour of 10 s windows
    assert got[0] == newer._replace(updated_at=pytest.approx(NOW - 30))
    assert got[1:] == older[1:360]
    assert LogHistogram.decode(got[5].hist).count == 6  # type: ignore[arg-type]
    assert repo.read_partials(qid, NOW - 3600, NOW + 7200)[-1] == older[-1]  # across hours


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (dict(sum=float("inf")), "sum must be a finite number"),
        (dict(n=-1), "n must be a whole number"),
        (dict(window_seconds=0), "window_seconds"),
        (dict(hist=b"\x07"), "hist: histogram version 7"),
    ],
)
def test_a_bad_partial_writes_nothing(make_repo, bad, message):
    repo, qid = make_repo(), f"q-bad-{message[:4]}"
    good = _partial(qid, NOW - 600, 3, NOW)
    with pytest.raises(ValueError, match=f"partial 1: {message}"):
        repo.upsert_partials([good, good._replace(window_start=NOW - 590, **bad)])
    assert repo.read_partials(qid, NOW - 3600, NOW) == []


def test_tier_rows_are_read_by_tier_and_range(make_repo):
    repo, qid = make_repo(), "q-tiers"
    minutes = [WindowResult(qid, NOW - 7200 + 60 * i, 60, {"p99": i}, i, NOW) for i in range(120)]
    hours = [WindowResult(qid, NOW - 7200 + 3600 * i, 3600, {"p99": -i}, i, NOW) for i in range(2)]
    assert repo.upsert_tier("1m", minutes) == 120
    assert repo.upsert_tier("1h", hours) == 2
    got = list(repo.read_results(qid, NOW - 3600, NOW, tier="1m"))
    assert [(r.window_start, r.window_seconds, r.values) for r in got] == [
        (r.window_start, 60, r.values) for r in minutes[60:]
    ]
    assert [r.values for r in repo.read_results(qid, 0, NOW, tier="1h")] == [
        {"p99": 0.0},
        {"p99": -1.0},
    ]
    assert list(repo.read_results(qid, NOW - 7200, NOW)) == []  # the windows' table
    with pytest.raises(ValueError, match="a 1m tier row is a fleet row of 60 s"):
        repo.upsert_tier("1m", [WindowResult(qid, NOW, 10, {}, 1, NOW)])
    with pytest.raises(ValueError, match="tier must be one of 1m, 1h"):
        list(repo.read_results(qid, 0, NOW, tier="5m"))


def test_a_tier_read_stops_at_the_tiers_retention(make_repo):
    qid = "q-retention"
    make_repo().upsert_tier("1m", [WindowResult(qid, NOW - 60, 60, {"max": 1.0}, 1, NOW)])
    assert len(list(make_repo().read_results(qid, 0, NOW, tier="1m"))) == 1
    later = make_repo(clock=lambda: NOW + 92 * 86_400)  # past 90 days + the day of slack
    assert list(later.read_results(qid, 0, NOW, tier="1m")) == []


def test_each_tier_table_has_its_own_ttl(cassandra_session, fresh_keyspace):
    from storage.schema import migrate, table_ttls
    from storage.settings import StorageSettings

    keyspace = fresh_keyspace()
    migrate(cassandra_session, keyspace, 7)
    ttls = table_ttls(cassandra_session, keyspace)
    assert (ttls["window_partials"], ttls["results_1m"], ttls["results_1h"]) == (
        48 * 3600,
        90 * 86_400,
        730 * 86_400,
    )
    settings = StorageSettings(
        partials_retention_hours=24, tier_1m_retention_days=30, tier_1h_retention_days=365
    )
    changes = migrate(cassandra_session, keyspace, 7, tier_ttl_s=settings.tier_ttl_s)
    assert sorted(changes) == [
        f"ttl {keyspace}.results_1h {730 * 86_400}s -> {365 * 86_400}s",
        f"ttl {keyspace}.results_1m {90 * 86_400}s -> {30 * 86_400}s",
        f"ttl {keyspace}.window_partials {48 * 3600}s -> {24 * 3600}s",
    ]
    assert migrate(cassandra_session, keyspace, 7, tier_ttl_s=settings.tier_ttl_s) == []
    with pytest.raises(ValueError, match="tier TTLs"):
        migrate(cassandra_session, keyspace, 7, tier_ttl_s={"results_1m": 10})
