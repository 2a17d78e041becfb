"""Per-server series and rankings (storage.servers, storage.rankings, through the Repository).

The contract tests run twice: against the real Cassandra (integration) and against the
in-memory fake that unit tests elsewhere use (tests.support.servers), so the fake keeps the
repository's edges."""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable

import pytest

from apm.query import MAX_TOP, WindowResult
from apm.ranking import OTHERS, Ranked
from tests.support.servers import FakeServerSeries

DAY = 86_400
BASE = 1_700_006_400.0  # a UTC midnight (a multiple of 86,400)
STAMP = 1_700_100_000.123  # whole milliseconds: what a timestamp column gives back


class _Fake(FakeServerSeries):
    def upsert_results(self, rows) -> int:
        plain, written = self.upsert_server_rows(rows)
        assert not plain, "the contract tests write per-server rows only"
        return written


@pytest.fixture(
    params=[
        pytest.param("repository", marks=pytest.mark.integration),
        pytest.param("fake", marks=pytest.mark.unit),
    ]
)
def store(request):
    return request.getfixturevalue("repo") if request.param == "repository" else _Fake()


@pytest.fixture
def qid() -> str:
    return f"q-{uuid.uuid4().hex[:12]}"


def _row(qid: str, server: str, start: float, value: float, stamp: float = STAMP) -> WindowResult:
    return WindowResult(qid, start, 10, {"avg": value, "p99": value + 1}, 3, stamp, server)


def _ranking(qid: str, start: float, servers: list[str], stamp: float = STAMP) -> list[Ranked]:
    return [
        Ranked(qid, start, 10, i + 1, s, {"avg": 100.0 - i}, 3 + i, stamp)
        for i, s in enumerate(servers)
    ]


def test_rows_round_trip_and_one_server_never_reads_another(store, qid):
    rows = [
        _row(qid, s, BASE + 10 * i, 10 * i + k)
        for k, s in enumerate(["a1", "a10"])
        for i in range(5)
    ]
    assert store.upsert_results(reversed(rows)) == 10
    assert list(store.read_server_results(qid, "a1", BASE, BASE + 50)) == rows[:5]
    assert list(store.read_server_results(qid, "a10", BASE + 10, BASE + 30)) == rows[6:8]
    assert list(store.read_server_results(qid, "a2", BASE, BASE + 50)) == []
    assert list(store.read_server_results(f"{qid}x", "a1", BASE, BASE + 50)) == []
    assert list(store.read_window_servers(qid, BASE + 20)) == [rows[2], rows[7]]
    assert list(store.read_window_servers(qid, BASE + 25)) == []
    assert store.list_result_servers(qid, BASE, BASE + 50) == ["a1", "a10"]


def test_a_reupsert_is_idempotent_and_the_newest_version_wins(store, qid):
    new = _row(qid, "a1", BASE, 5.0, STAMP + 10)
    assert store.upsert_results([new, new]) == 1
    assert store.upsert_results([_row(qid, "a1", BASE, 1.0), new]) == 1  # newest in the call
    store.upsert_results([_row(qid, "a1", BASE, 2.0)])  # a later replay of an older version
    assert list(store.read_server_results(qid, "a1", BASE, BASE + 10)) == [new]
    assert list(store.read_window_servers(qid, BASE)) == [new]


def test_list_result_servers_over_a_range_spanning_two_days(store, qid):
    store.upsert_results(
        [
            _row(qid, "day0-late", BASE + DAY - 10, 1.0),
            _row(qid, "day1-early", BASE + DAY, 1.0),
            _row(qid, "day1-late", BASE + 2 * DAY - 10, 1.0),
            _row(qid, "day3", BASE + 3 * DAY, 1.0),
        ]
    )
    span = store.list_result_servers(qid, BASE + DAY - 60, BASE + DAY + 60)
    assert span == ["day0-late", "day1-early", "day1-late"]  # whole days: day1-late too
    assert store.list_result_servers(qid, BASE + DAY, BASE + 2 * DAY) == ["day1-early", "day1-late"]
    assert store.list_result_servers(qid, 0, BASE + 10 * DAY) == [
        "day0-late",
        "day1-early",
        "day1-late",
        "day3",
    ]
    assert store.list_result_servers(qid, BASE + 2 * DAY, BASE + 3 * DAY) == []
    assert store.list_result_servers(qid, BASE + DAY, BASE + DAY) == []  # empty range


def test_a_reranking_with_fewer_rows_leaves_no_stale_rank(store, qid):
    first = _ranking(qid, BASE, ["a1", "b2", "c3", OTHERS])
    assert store.upsert_ranked(reversed(first)) == 1
    assert list(store.read_ranked(qid, BASE, BASE + 10)) == first
    again = _ranking(qid, BASE, ["c3", OTHERS], STAMP + 1)
    assert store.upsert_ranked(again) == 1
    assert list(store.read_ranked(qid, BASE, BASE + 10)) == again
    store.upsert_ranked(first)  # a replay of the older ranking does not come back
    assert list(store.read_ranked(qid, BASE, BASE + 10)) == again


def test_read_ranked_orders_windows_across_hours_and_days(store, qid):
    starts = [BASE + DAY, BASE + 3590, BASE, BASE + 3600, BASE + 2 * DAY + 7200]
    for k, start in enumerate(starts):
        store.upsert_ranked(_ranking(qid, start, [f"s{k}", "t", OTHERS]))
    got = list(store.read_ranked(qid, BASE, BASE + 3 * DAY))
    assert [(r.window_start, r.rank) for r in got] == [
        (start, rank) for start in sorted(starts) for rank in (1, 2, 3)
    ]
    assert [r.window_start for r in store.read_ranked(qid, BASE + 3590, BASE + DAY)] == [
        BASE + 3590
    ] * 3 + [BASE + 3600] * 3
    assert list(store.read_ranked(qid, BASE + 10, BASE + 3590)) == []


def test_a_full_ranking_of_max_top_servers_and_others_is_stored(store, qid):
    names = [f"web-{i:04d}.a-rather-long-datacenter-name.example.com" for i in range(MAX_TOP)]
    ranking = _ranking(qid, BASE, [*names, OTHERS])
    assert store.upsert_ranked(ranking) == 1
    assert list(store.read_ranked(qid, BASE, BASE + 1)) == ranking


_BAD_ROWS: dict[str, tuple[Callable[[str], WindowResult], str]] = {
    "server name": (lambda q: _row(q, "bad name!", BASE, 1.0), "server: server name"),
    "others as a server": (lambda q: _row(q, OTHERS, BASE, 1.0), "server: server name"),
    "server not a string": (lambda q: _row(q, None, BASE, 1.0), "server: server name must be"),  # type: ignore[arg-type]
    "NaN window start": (lambda q: _row(q, "a1", math.nan, 1.0), "window_start must be finite"),
    "infinite value": (lambda q: _row(q, "a1", BASE, math.inf), r"values\['avg'\] must be"),
}


@pytest.mark.parametrize("case", list(_BAD_ROWS))
def test_a_bad_row_is_refused_with_a_clear_error_and_nothing_is_stored(store, qid, case):
    make, message = _BAD_ROWS[case]
    with pytest.raises(ValueError, match=rf"result row 1: {message}"):
        store.upsert_results([_row(qid, "a1", BASE + 10, 1.0), make(qid)])
    assert list(store.read_server_results(qid, "a1", 0, BASE + DAY)) == []
    assert list(store.read_window_servers(qid, BASE + 10)) == []
    assert store.list_result_servers(qid, 0, BASE + DAY) == []


def _bad_rankings(q: str) -> dict[str, tuple[list[Ranked], str]]:
    good = _ranking(q, BASE, ["a1", "b2", OTHERS])
    return {
        "gap": ([good[0], good[2]], r"ranks must be 1 to 2, each once, got \[1, 3\]"),
        "twice": ([*good, good[1]], r"ranks must be 1 to 4"),
        "server twice": ([good[0], good[1]._replace(server="a1")], "a server is ranked twice"),
        "others first": (_ranking(q, BASE, [OTHERS, "a1"]), "'\\(others\\)' must be the last"),
        "too many": (_ranking(q, BASE, [f"s{i}" for i in range(MAX_TOP + 2)]), "at most 101"),
        "bad server": ([good[0]._replace(server="no way")], "ranked row 1: server: server name"),
        "rank 0": ([good[0]._replace(rank=0)], "ranked row 1: rank must be a whole number"),
        "NaN value": ([good[0]._replace(values={"avg": math.nan})], r"ranked row 1: values"),
        "NaN start": ([good[0]._replace(window_start=math.nan)], "ranked row 1: window_start"),
        "not a row": ([("x",)], "ranked row 1: expected a Ranked"),  # type: ignore[list-item]
    }


@pytest.mark.parametrize("case", list(_bad_rankings("q")))
def test_a_bad_ranking_is_refused_and_nothing_is_stored(store, qid, case):
    rows, message = _bad_rankings(qid)[case]
    other = _ranking(qid, BASE + 10, ["z9"])  # a good window in the same call
    with pytest.raises(ValueError, match=message):
        store.upsert_ranked([*other, *rows])
    assert list(store.read_ranked(qid, 0, BASE + DAY)) == []


@pytest.mark.parametrize(
    "read, message",
    [
        (lambda s, q: s.read_server_results(q, "", 0, 10), "server name"),
        (lambda s, q: s.read_server_results(q, "a1", math.nan, 10), "start must be finite"),
        (lambda s, q: s.read_server_results(q, "a1", 0, 10, page_size=0), "page_size"),
        (lambda s, q: s.read_window_servers(q, math.inf), "window_start must be finite"),
        (lambda s, q: s.list_result_servers(q, 0, math.nan), "end must be finite"),
        (lambda s, q: s.read_ranked(q, None, 10), "start must be finite"),
    ],
)
def test_bad_read_arguments_are_refused_when_called(store, qid, read, message):
    with pytest.raises(ValueError, match=message):
        read(store, qid)


# -- the real repository only -------------------------------------------------------------
@pytest.mark.integration
def test_the_plain_series_and_the_per_server_ones_stay_apart(repo, qid):
    plain = WindowResult(qid, BASE, 10, {"avg": 1.0}, 9, STAMP)
    per_server = _row(qid, "a1", BASE, 2.0, STAMP + 5)
    assert repo.upsert_results([plain, per_server]) == 2
    assert list(repo.read_results(qid, BASE, BASE + 10)) == [plain]
    assert list(repo.read_server_results(qid, "a1", BASE, BASE + 10)) == [per_server]
    assert repo.last_result_at(qid) == pytest.approx(STAMP + 5)  # the newest of both
    only_servers = f"{qid}-by-server"
    assert repo.last_result_at(only_servers) is None
    repo.upsert_results([per_server._replace(query_id=only_servers)])
    assert repo.last_result_at(only_servers) == pytest.approx(STAMP + 5)


@pytest.mark.integration
def test_migrate_adds_the_per_server_tables_to_a_keyspace_from_before_them(
    cassandra_session, fresh_keyspace
):
    from storage.repository import Repository
    from storage.schema import migrate, missing_tables
    from storage.server_tables import SERVER_TABLES

    ks = fresh_keyspace()
    migrate(cassandra_session, ks, 7)
    for table in SERVER_TABLES:  # as a keyspace migrated before they existed
        cassandra_session.execute(f"DROP TABLE {ks}.{table}")
    assert missing_tables(cassandra_session, ks) == list(SERVER_TABLES)
    with pytest.raises(LookupError, match="apm storage migrate"):
        Repository(cassandra_session, ks)
    assert migrate(cassandra_session, ks, 7) == [f"table {ks}.{t}" for t in SERVER_TABLES]
    assert migrate(cassandra_session, ks, 7) == []
    repo = Repository(cassandra_session, ks)
    row = _row("q", "a1", BASE, 1.0)
    repo.upsert_results([row])
    assert list(repo.read_server_results("q", "a1", BASE, BASE + 10)) == [row]


@pytest.mark.integration
def test_rows_of_64_functions_and_long_server_names_batch_without_a_cassandra_warning(
    repo, qid, caplog
):
    # Rows this large in one batch of several partitions would pass Cassandra's 5 KiB warning
    # (the driver logs it); every batch here is of one partition, which is exempt.
    values = {f"p99.{i:03d}": i + 0.5 for i in range(64)}
    servers = [f"{i:03d}{'x' * 197}" for i in range(40)]
    rows = [WindowResult(qid, BASE, 10, values, 1, STAMP, s) for s in servers]
    with caplog.at_level("WARNING", logger="cassandra"):
        assert repo.upsert_results(rows) == 40
    assert not [r.getMessage() for r in caplog.records if "threshold" in r.getMessage()]
    assert list(repo.read_window_servers(qid, BASE)) == rows
    assert list(repo.read_server_results(qid, servers[7], BASE, BASE + 10)) == [rows[7]]
    ranking = [Ranked(qid, BASE, 10, i + 1, s, values, 1, STAMP) for i, s in enumerate(servers)]
    assert repo.upsert_ranked(ranking) == 1
    assert list(repo.read_ranked(qid, BASE, BASE + 10)) == ranking


@pytest.mark.integration
def test_a_keyspace_from_before_server_series_is_read_from_both_layouts(
    cassandra_session, fresh_keyspace
):
    from storage import codec
    from storage.repository import Repository
    from storage.schema import bucket_of, migrate
    from storage.server_tables import legacy_series_ddl

    ks = fresh_keyspace()
    migrate(cassandra_session, ks, 7)
    # The layout of the release before: one partition per (query, server, day).
    cassandra_session.execute(legacy_series_ddl(ks))
    put = cassandra_session.prepare(
        f"INSERT INTO {ks}.server_results (query_id, server, bucket, window_start, "
        "window_seconds, vals, samples, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    )
    old = [_row("q", "a1", BASE + 10 * i, float(i)) for i in range(4)]
    for r in old:
        ms = int(r.window_start * 1000)
        cassandra_session.execute(
            put, ("q", "a1", bucket_of(r.window_start), ms, *codec.result_columns(r)[:4])
        )
    repo = Repository(cassandra_session, ks)
    # Written after the upgrade: a refinement of an old window (newer) and a new window; an
    # older replay of another window loses to the row the legacy table holds.
    refined = _row("q", "a1", BASE + 10, 9.0, STAMP + 5)
    later = _row("q", "a1", BASE + 40, 4.0)
    stale = _row("q", "a1", BASE + 20, 7.0, STAMP - 5)
    repo.upsert_results([refined, later, stale])
    got = list(repo.read_server_results("q", "a1", BASE, BASE + 60))
    assert got == [old[0], refined, old[2], old[3], later]
    assert list(repo.read_server_results("q", "a1", BASE + 20, BASE + 30)) == [old[2]]
    assert list(repo.read_server_results("q", "a2", BASE, BASE + 60)) == []
