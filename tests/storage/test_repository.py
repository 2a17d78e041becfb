"""The repository contract against the real Cassandra."""

from __future__ import annotations

import math
import uuid

import pytest

from apm.query import QueryError, WindowResult, parse

pytestmark = pytest.mark.integration

DAY = 86_400


def _qid() -> str:
    return str(uuid.uuid4())


# -- stored queries ---------------------------------------------------------------------------
def test_save_get_list_update_pause_delete(repo, clock):
    text = "from web-*, db-1 select cpu.user window 5m compute p99, min, percentile(99.9)"
    saved = repo.save_query(text)
    assert saved.query == parse(text) and saved.text == parse(text).text
    assert not saved.paused and saved.created_at == saved.updated_at
    uuid.UUID(saved.id)  # a uuid4 string
    assert repo.get_query(saved.id) == saved

    clock.now += 60
    paused = repo.set_paused(saved.id, True)
    assert paused.paused and paused.created_at == saved.created_at
    assert paused.updated_at is not None and saved.updated_at is not None
    assert (paused.updated_at - saved.updated_at).total_seconds() == pytest.approx(60, abs=0.01)
    ids_all = {q.id for q in repo.list_queries()}
    ids_active = {q.id for q in repo.list_queries(include_paused=False)}
    assert saved.id in ids_all and saved.id not in ids_active

    updated = repo.update_query(saved.id, "FROM * SELECT mem WINDOW 1h COMPUTE avg, count")
    assert updated.query.metric == "mem" and updated.query.window_seconds == 3600
    assert updated.paused  # updating the text keeps the pause
    resumed = repo.set_paused(saved.id, False)
    assert not resumed.paused and resumed.query == updated.query
    assert saved.id in {q.id for q in repo.list_queries(include_paused=False)}

    assert repo.delete_query(saved.id) is True
    assert repo.get_query(saved.id) is None
    assert repo.delete_query(saved.id) is False
    assert saved.id not in {q.id for q in repo.list_queries()}


def test_missing_ids_raise_key_error_and_create_nothing(repo):
    missing = _qid()
    with pytest.raises(KeyError):
        repo.update_query(missing, "FROM * SELECT cpu WINDOW 1s COMPUTE max")
    with pytest.raises(KeyError):
        repo.set_paused(missing, True)
    assert repo.get_query(missing) is None


def test_bad_query_text_is_a_query_error_and_stores_nothing(repo):
    before = {q.id for q in repo.list_queries()}
    with pytest.raises(QueryError) as info:
        repo.save_query("FROM * SELECT cpu WINDOW 10x COMPUTE max")
    assert info.value.position == len("FROM * SELECT cpu WINDOW ")
    kept = repo.save_query("FROM * SELECT cpu WINDOW 10s COMPUTE max")
    with pytest.raises(QueryError):
        repo.update_query(kept.id, "FROM * SELECT cpu WINDOW 10s COMPUTE median")
    assert repo.get_query(kept.id) == kept  # a failed update leaves the query as it was
    assert {q.id for q in repo.list_queries()} - before == {kept.id}


def test_a_query_with_host_tags_is_stored_and_updated(repo):
    text = "FROM dc:eu-*, db-1 SELECT cpu WINDOW 10s COMPUTE max BY role"
    saved = repo.save_query(text)
    assert repo.get_query(saved.id).query == parse(text)
    kept = repo.save_query("FROM *, role:web SELECT cpu WINDOW 10s COMPUTE max")  # '*' wins
    repo.update_query(kept.id, text)
    assert repo.get_query(kept.id).query.group_by == ("role",)


def test_list_queries_is_ordered_by_creation(repo, clock):
    made = []
    for i in range(3):
        clock.now += 1
        made.append(repo.save_query(f"FROM s-{i} SELECT cpu WINDOW 1s COMPUTE sum").id)
    listed = [q.id for q in repo.list_queries() if q.id in made]
    assert listed == made


# -- results ----------------------------------------------------------------------------------
def test_read_spans_buckets_in_order_with_half_open_bounds(repo, make_results):
    qid = _qid()
    start = 20_000 * DAY - 3600  # an hour before a day boundary; windows of 1h over 3 days
    rows = make_results(qid, start, 72, window_seconds=3600)
    assert repo.upsert_results(rows) == 72
    got = list(repo.read_results(qid, start, start + 72 * 3600))
    assert got == rows
    lo, hi = rows[5].window_start, rows[40].window_start
    assert list(repo.read_results(qid, lo, hi)) == rows[5:40]
    assert list(repo.read_results(qid, lo + 0.001, hi + 0.001)) == rows[6:41]
    assert list(repo.read_results(qid, hi, lo)) == []
    assert list(repo.read_results(_qid(), start, start + 72 * 3600)) == []


@pytest.mark.parametrize("page_size", [1, 7, 5000])
def test_paging_returns_every_window_once(repo, make_results, page_size):
    qid = _qid()
    rows = make_results(qid, 20_100 * DAY - 200, 50, window_seconds=10)
    repo.upsert_results(rows)
    assert list(repo.read_results(qid, 0, 30_000 * DAY, page_size=page_size)) == rows


def test_upsert_is_idempotent_and_the_newest_version_wins_in_any_order(repo, make_results):
    qid = _qid()
    start = 20_200 * DAY
    old = make_results(qid, start, 4, updated_at=1_000_000.0)
    new = [r._replace(values={"min": -1.0}, samples=99, updated_at=2_000_000.0) for r in old]
    repo.upsert_results(new)
    repo.upsert_results(old)  # a replay of an older version arrives late: ignored
    repo.upsert_results(new)  # the same version again: no change
    assert list(repo.read_results(qid, start, start + DAY)) == new
    # Both versions of a window in one call: the newest is written, counted once.
    mixed = [new[0]._replace(updated_at=3_000_000.0, samples=7), old[0]]
    assert repo.upsert_results(mixed) == 1
    assert next(iter(repo.read_results(qid, start, start + 1))).samples == 7


def test_last_result_at_is_the_newest_windows_updated_at(repo, make_results, clock):
    qid = _qid()
    assert repo.last_result_at(qid) is None
    today = (clock.now // DAY) * DAY
    rows = make_results(qid, today - 2 * DAY, 3, window_seconds=DAY, updated_at=clock.now - 50)
    repo.upsert_results(rows)
    # A late refinement of an older window is newer in time but not the newest window.
    repo.upsert_results([rows[0]._replace(updated_at=clock.now)])
    assert repo.last_result_at(qid) == pytest.approx(clock.now - 50, abs=0.001)


@pytest.mark.parametrize(
    "bad",
    [
        {"window_start": math.nan},
        {"window_start": -10.0},
        {"window_seconds": 0},
        {"samples": -1},
        {"values": {"p99": math.inf}},
        {"values": {"": 1.0}},
        {"query_id": ""},
        {"updated_at": 0.0},
    ],
)
def test_a_bad_row_is_rejected_and_nothing_of_its_call_is_written(repo, make_results, bad):
    qid = _qid()
    rows = make_results(qid, 20_300 * DAY, 3)
    rows[1] = rows[1]._replace(**bad)
    with pytest.raises(ValueError, match="result row 1"):
        repo.upsert_results(rows)
    assert list(repo.read_results(qid, 0, 30_000 * DAY)) == []


def test_rows_expire_with_the_retention(repo, cassandra_session, storage_keyspace, make_results):
    qid = _qid()
    row = make_results(qid, 20_400 * DAY, 1)[0]
    repo.upsert_results([row])
    ttl = (
        cassandra_session.execute(
            f"SELECT TTL(samples) AS ttl FROM {storage_keyspace}.results "
            "WHERE query_id = %s AND bucket = 20400",
            (qid,),
        )
        .one()
        .ttl
    )
    assert 29 * DAY < ttl <= 30 * DAY


def test_read_at_starts_spans_buckets_and_chunks(repo, make_results):
    """Exact starts over three days, more than one IN chunk in a bucket, starts asked twice,
    out of order, or with no window: each stored window once, ascending."""
    qid = _qid()
    start = 20_200 * DAY - 600  # windows of 60 s over three day boundaries
    rows = make_results(qid, start, 3 * 1440 + 20, window_seconds=60)
    repo.upsert_results(rows)
    wanted = rows[::7]  # 620 windows: 3 buckets of more than IN_CHUNK starts
    asked = [w.window_start for w in reversed(wanted)] + [wanted[3].window_start, start - 60]
    assert list(repo.read_results_at(qid, asked)) == wanted
    assert list(repo.read_results_at(qid, [])) == []
    assert list(repo.read_results_at(_qid(), [start])) == []
    for bad in ([math.nan], [-1.0]):
        with pytest.raises(ValueError):
            repo.read_results_at(qid, bad)


def test_read_results_rejects_bad_arguments(repo):
    for kwargs in (
        {"start": math.nan, "end": 1.0},
        {"start": 0.0, "end": math.inf},
        {"start": 0.0, "end": 1.0, "page_size": 0},
    ):
        with pytest.raises(ValueError):
            repo.read_results(_qid(), **kwargs)


def test_many_windows_of_many_queries_in_one_call(repo, make_results):
    ids = [_qid() for _ in range(20)]
    rows: list[WindowResult] = []
    for qid in ids:
        rows += make_results(qid, 20_500 * DAY - 500, 100, window_seconds=10)
    assert repo.upsert_results(rows) == len(rows)
    for qid in ids:
        assert list(repo.read_results(qid, 0, 30_000 * DAY)) == [
            r for r in rows if r.query_id == qid
        ]


# -- servers and status -----------------------------------------------------------------------
def test_server_last_seen_only_moves_forward(repo):
    a, b = f"web-{uuid.uuid4().hex[:8]}", f"db-{uuid.uuid4().hex[:8]}"
    repo.touch_servers({a: 1_700_000_100.5, b: 1_700_000_000.0})
    repo.touch_servers({a: 1_700_000_050.0})  # an older sighting from a late batch
    servers = repo.list_servers()
    assert servers[a] == 1_700_000_100.5 and servers[b] == 1_700_000_000.0
    with pytest.raises(ValueError, match="server"):
        repo.touch_servers({f"ok-{uuid.uuid4().hex[:6]}": 1.0, "bad name": 1.0})
    with pytest.raises(ValueError, match="last_seen"):
        repo.touch_servers({a: math.nan})
    assert repo.list_servers()[a] == 1_700_000_100.5


def test_metric_last_seen_only_moves_forward_and_refuses_bad_rows(repo):
    m = f"cpu.{uuid.uuid4().hex[:8]}"
    repo.touch_metrics({m: 1_700_000_100.5})
    repo.touch_metrics({m: 1_700_000_050.0})  # a late batch's older sample
    assert repo.list_metrics()[m] == 1_700_000_100.5
    with pytest.raises(ValueError, match="metric"):
        repo.touch_metrics({"9bad": 1.0})
    with pytest.raises(ValueError, match="last_seen"):
        repo.touch_metrics({m: math.inf})


def test_a_query_is_active_from_its_creation_its_resumption_or_a_new_metric(repo, clock):
    created = clock.now
    q = repo.save_query("FROM * SELECT cpu WINDOW 10s COMPUTE avg")
    assert q.active_from == pytest.approx(created, abs=1e-3)
    clock.now += 10
    repo.update_query(q.id, "FROM web-* SELECT cpu WINDOW 1m COMPUTE avg, max")
    assert repo.get_query(q.id).active_from == pytest.approx(created, abs=1e-3)  # same metric
    clock.now += 10
    repo.set_paused(q.id, False)  # resuming an active query changes nothing
    assert repo.get_query(q.id).active_from == pytest.approx(created, abs=1e-3)
    repo.set_paused(q.id, True)
    clock.now += 10
    resumed = repo.set_paused(q.id, False)
    assert not resumed.paused and resumed.active_from == pytest.approx(clock.now, abs=1e-3)
    clock.now += 10
    moved = repo.update_query(q.id, "FROM * SELECT mem WINDOW 10s COMPUTE avg")
    assert moved.active_from == pytest.approx(clock.now, abs=1e-3)
    with pytest.raises(KeyError):
        repo.set_paused(str(uuid.uuid4()), False)
    with pytest.raises(KeyError):
        repo.update_query(str(uuid.uuid4()), "FROM * SELECT mem WINDOW 10s COMPUTE avg")


def test_status_round_trips_json_with_its_time(repo, clock):
    component = f"aggregator-{uuid.uuid4().hex[:6]}"
    payload = {"batch_ms": {"p50": 120.5}, "lag": {"apm.metric.cpu": 3}, "late": 0}
    repo.put_status(component, payload)
    got = repo.get_status()[component]
    assert got == {**payload, "updated_at": pytest.approx(clock.now, abs=0.001)}
    clock.now += 5
    repo.put_status(component, {"late": 1})
    assert repo.get_status()[component] == {
        "late": 1,
        "updated_at": pytest.approx(clock.now, abs=0.001),
    }
    for bad in ({"x": math.nan}, {"x": object()}, ["not", "a", "mapping"]):
        with pytest.raises(ValueError, match=component):
            repo.put_status(component, bad)
    with pytest.raises(ValueError, match="component"):
        repo.put_status("", {})
