"""Per-server series and rankings against the real Cassandra (storage.servers,
storage.rankings, through the Repository)."""

from __future__ import annotations

import math
import uuid

import pytest

from apm.query import WindowResult
from apm.ranking import OTHERS, Ranked

pytestmark = pytest.mark.integration

DAY = 86_400
BASE = 1_700_006_400.0  # a UTC midnight (a multiple of 86,400)
STAMP = 1_700_100_000.123


def _qid() -> str:
    return f"q-{uuid.uuid4().hex[:12]}"


def _row(qid: str, server: str, start: float, value: float, stamp: float = STAMP) -> WindowResult:
    return WindowResult(qid, start, 10, {"avg": value, "p99": value + 1}, 3, stamp, server)


def _ranking(qid: str, start: float, servers: list[str], stamp: float = STAMP) -> list[Ranked]:
    return [
        Ranked(qid, start, 10, i + 1, s, {"avg": 100.0 - i}, 3, stamp)
        for i, s in enumerate(servers)
    ]


def test_per_server_rows_round_trip_apart_from_the_plain_series(repo):
    qid = _qid()
    rows = [
        _row(qid, s, BASE + 10 * i, 10 * i + k)
        for k, s in enumerate(["a1", "b2"])
        for i in range(5)
    ]
    assert repo.upsert_results(rows) == 10
    got = list(repo.read_server_results(qid, "a1", BASE, BASE + 50))
    assert got == [r for r in rows if r.server == "a1"]
    assert list(repo.read_server_results(qid, "b2", BASE + 10, BASE + 30)) == rows[6:8]
    assert list(repo.read_results(qid, BASE, BASE + 50)) == []  # no "" series
    window = list(repo.read_window_servers(qid, BASE + 20))
    assert window == [rows[2], rows[7]]
    assert repo.list_result_servers(qid, BASE, BASE + 50) == ["a1", "b2"]
    assert repo.last_result_at(qid) == pytest.approx(STAMP, abs=1e-3)


def test_a_reupsert_is_idempotent_and_an_older_version_never_wins(repo):
    qid = _qid()
    new = [_row(qid, "a1", BASE, 5.0, STAMP + 10)]
    assert repo.upsert_results(new) == 1
    assert repo.upsert_results(new) == 1
    repo.upsert_results([_row(qid, "a1", BASE, 1.0, STAMP)])  # a replay of an older version
    assert list(repo.read_server_results(qid, "a1", BASE, BASE + 10)) == new
    assert list(repo.read_window_servers(qid, BASE)) == new


def test_a_reranking_with_fewer_rows_leaves_no_stale_rank(repo):
    qid = _qid()
    first = _ranking(qid, BASE, ["a1", "b2", "c3", OTHERS])
    assert repo.upsert_ranked(first) == 1
    assert list(repo.read_ranked(qid, BASE, BASE + 10)) == first
    again = _ranking(qid, BASE, ["c3", OTHERS], STAMP + 1)
    assert repo.upsert_ranked(again) == 1
    assert list(repo.read_ranked(qid, BASE, BASE + 10)) == again


@pytest.mark.parametrize(
    "bad, message",
    [
        (lambda q: _row(q, "bad name!", BASE, 1.0), "server"),
        (lambda q: _row(q, "a1", math.nan, 1.0), "window_start"),
    ],
)
def test_a_bad_row_is_refused_and_nothing_is_stored(repo, bad, message):
    qid = _qid()
    with pytest.raises(ValueError, match=rf"result row 1: {message}"):
        repo.upsert_results([_row(qid, "a1", BASE, 1.0), bad(qid)])
    assert list(repo.read_server_results(qid, "a1", 0, BASE + DAY)) == []
    assert repo.list_result_servers(qid, 0, BASE + DAY) == []
