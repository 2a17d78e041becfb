"""`apm storage migrate` and `apm query ...` end to end through the real Cassandra."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest

from apm.cli import main

pytestmark = pytest.mark.integration

DAY = 86_400


@pytest.fixture
def apm(capsys, monkeypatch, storage_keyspace, stack):
    """Runs ``apm ARGS`` in-process against the test keyspace: (exit code, stdout, stderr)."""
    monkeypatch.setenv("APM_STORAGE_KEYSPACE", storage_keyspace)
    monkeypatch.setenv("APM_STORAGE_HOSTS", stack.host)
    monkeypatch.setenv("APM_STORAGE_PORT", str(stack.cassandra_port))

    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_add_list_pause_resume_delete(apm):
    code, out, _ = apm("query", "add", "FROM web-* SELECT cpu WINDOW 1m COMPUTE avg, p99")
    assert code == 0
    qid = out.strip()
    uuid.UUID(qid)
    code, out, _ = apm("query", "list")
    lines = out.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith(qid))
    assert lines[at].split()[1] != "paused"
    assert lines[at].endswith("FROM web-* SELECT cpu WINDOW 1m COMPUTE avg, percentile(99)")
    assert lines[at + 1].startswith("    ")  # the reason, under it

    assert apm("query", "pause", qid)[0] == 0
    _, out, _ = apm("query", "list", "--json")
    listed = {row["id"]: row for row in map(json.loads, out.splitlines())}
    assert listed[qid]["paused"] is True
    assert qid not in apm("query", "list", "--active")[1]
    assert apm("query", "resume", qid)[0] == 0
    assert qid in apm("query", "list", "--active")[1]

    assert apm("query", "delete", qid) == (0, f"deleted {qid}\n", "")
    code, _, err = apm("query", "delete", qid)
    assert code == 1 and f"no query with id '{qid}'" in err
    code, _, err = apm("query", "pause", qid)
    assert code == 1 and "no query with id" in err


def test_list_shows_each_querys_state_and_why(apm, monkeypatch, fresh_keyspace, cassandra_session):
    """In a keyspace of its own, so that no other test's aggregator status row counts."""
    import time

    from apm.query import WindowResult
    from storage.repository import Repository

    keyspace = fresh_keyspace()
    assert apm("storage", "migrate", "--keyspace", keyspace)[0] == 0
    monkeypatch.setenv("APM_STORAGE_KEYSPACE", keyspace)
    now = time.time()
    repo = Repository(cassandra_session, keyspace)
    ids = {}
    for name in ("uncovered", "paused", "quiet", "done", "new"):
        maker = (
            Repository(cassandra_session, keyspace, clock=lambda: now - 900)
            if name == "quiet"
            else repo
        )  # active for 15 minutes
        ids[name] = maker.save_query(f"FROM * SELECT m.{name} WINDOW 10s COMPUTE avg").id

    def listed() -> dict[str, tuple[str, str]]:
        code, out, err = apm("query", "list")
        assert code == 0, err
        lines = out.splitlines()
        assert len(lines) == 2 * len(ids)
        got = {}
        for head, reason in zip(lines[::2], lines[1::2], strict=True):
            qid, state, text = head.split(maxsplit=2)
            assert text.startswith("FROM * SELECT m.") and reason.startswith("    ")
            got[qid] = (state, reason.strip())
        return got

    assert {s for s, _ in listed().values()} == {"not-covered"}
    assert listed()[ids["new"]][1].startswith("no aggregator is running")

    repo.set_paused(ids["paused"], True)
    covered = [f"m.{n}" for n in ("paused", "quiet", "done", "new")]
    repo.put_status(
        "aggregator-cli", {"scope": {"metrics": covered, "shard": None}, "reads": covered}
    )
    repo.touch_metrics({"m.quiet": now - 600, "m.done": now})
    repo.upsert_results(
        [WindowResult(ids["done"], (now // 10) * 10 - 10, 10, {"avg": 1.0}, 2, time.time())]
    )
    got = listed()
    assert {name: got[qid][0] for name, qid in ids.items()} == {
        "uncovered": "not-covered",
        "paused": "paused",
        "quiet": "no-data",
        "done": "evaluated",
        "new": "waiting",
    }
    assert got[ids["uncovered"]][1] == (
        "no running aggregator covers m.uncovered: "
        "aggregator-cli (metrics m.done, m.new, m.paused, "
        "m.quiet)"
    )
    assert "no sample of m.quiet in the last 5m" in got[ids["quiet"]][1]
    assert got[ids["done"]][1].startswith("evaluated by aggregator-cli; last result written at")
    assert got[ids["new"]][1] == (
        "waiting for its first 10s window to close; aggregator-cli reads m.new"
    )

    code, out, _ = apm("query", "list", "--json")
    assert code == 0
    rows = {row["id"]: row for row in map(json.loads, out.splitlines())}
    assert {rows[qid]["state"] for qid in ids.values()} == {
        "not-covered",
        "paused",
        "no-data",
        "evaluated",
        "waiting",
    }
    assert rows[ids["quiet"]]["reason"] == got[ids["quiet"]][1]
    assert ids["paused"] not in apm("query", "list", "--active")[1]


def test_bad_query_text_exits_2_naming_the_position(apm):
    code, out, err = apm("query", "add", "FROM * SELECT cpu WINDOW 1m COMPUTE median")
    assert code == 2 and out == ""
    assert "at position 36" in err and "expected a function" in err


def test_a_query_with_host_tags_is_stored(apm):
    text = "FROM role:web SELECT cpu WINDOW 1m COMPUTE avg BY dc"
    code, out, err = apm("query", "add", text)
    assert code == 0 and out.strip(), err
    assert text in apm("query", "list")[1]


def test_results_as_json_between_epoch_or_iso_times(apm, make_repo, make_results):
    code, out, _ = apm("query", "add", "FROM * SELECT mem WINDOW 10s COMPUTE min, max")
    qid = out.strip()
    start = 20_600 * DAY - 30
    rows = make_results(qid, start, 9)
    make_repo().upsert_results(rows)

    code, out, err = apm(
        "query", "results", qid, "--from", str(start + 10), "--to", str(start + 60), "--json"
    )
    assert code == 0, err
    got = [json.loads(line) for line in out.splitlines()]
    assert [g["window_start"] for g in got] == [r.window_start for r in rows[1:6]]
    assert [g["values"] for g in got] == [r.values for r in rows[1:6]]
    assert [g["samples"] for g in got] == [r.samples for r in rows[1:6]]

    iso = datetime.fromtimestamp(start, UTC).isoformat().replace("+00:00", "Z")
    code, out, _ = apm("query", "results", qid, "--from", iso, "--to", str(start + 1000))
    assert code == 0 and len(out.splitlines()) == len(rows)
    assert datetime.fromtimestamp(start, UTC).isoformat() in out.splitlines()[0]

    code, _, err = apm("query", "results", qid, "--from", str(start + 60), "--to", str(start))
    assert code == 2 and "--from" in err
    code, _, err = apm("query", "results", str(uuid.uuid4()), "--from", "0", "--to", "now")
    assert code == 1 and "no query with id" in err


def test_results_of_a_by_server_query_need_a_server_and_list_them(apm, make_repo):
    code, out, _ = apm("query", "add", "FROM web-* SELECT cpu WINDOW 10s COMPUTE avg BY server")
    from apm.query import WindowResult

    qid = out.strip()
    start, stamp = 20_600 * DAY, 20_600 * DAY + 100.5
    make_repo().upsert_results(
        WindowResult(qid, start + 10 * i, 10, {"avg": i + k}, 1, stamp, f"web-{k}")
        for i in range(3)
        for k in range(2)
    )
    span = ("--from", str(start), "--to", str(start + 30))
    code, _, err = apm("query", "results", qid, *span)
    assert code == 2 and "give --server NAME" in err and "web-0, web-1" in err
    code, out, err = apm("query", "results", qid, *span, "--server", "web-1", "--json")
    assert code == 0, err
    got = [json.loads(line) for line in out.splitlines()]
    assert [(g["server"], g["values"]["avg"]) for g in got] == [
        ("web-1", i + 1.0) for i in range(3)
    ]
    code, _, err = apm("query", "results", qid, *span, "--server", "no such!")
    assert code == 2 and "--server: server name" in err


def test_results_of_a_by_tag_query_need_a_series_and_list_the_groups(apm, make_repo):
    code, out, _ = apm("query", "add", "FROM role:web SELECT cpu WINDOW 10s COMPUTE avg BY dc")
    from apm.query import WindowResult

    qid = out.strip()
    start, stamp = 20_601 * DAY, 20_601 * DAY + 100.5
    make_repo().upsert_results(
        WindowResult(qid, start + 10 * i, 10, {"avg": i + k}, 1, stamp, label)
        for i in range(3)
        for k, label in enumerate(["dc=", "dc=eu\\,1"])
    )
    span = ("--from", str(start), "--to", str(start + 30))
    code, _, err = apm("query", "results", qid, *span)
    assert code == 2 and "give --series KEY=VALUE" in err and "dc=, dc=eu\\,1" in err
    code, out, err = apm("query", "results", qid, *span, "--series", "dc=eu\\,1", "--json")
    assert code == 0, err
    got = [json.loads(line) for line in out.splitlines()]
    assert [(g["series"], g["values"]["avg"]) for g in got] == [
        ("dc=eu\\,1", i + 1.0) for i in range(3)
    ]
    code, _, err = apm("query", "results", qid, *span, "--series", "eu-1")
    assert code == 2 and "--series: a group is named key=value" in err


def test_migrate_creates_a_keyspace_and_reports_nothing_to_do_next_time(
    apm, fresh_keyspace, cassandra_session
):
    from storage.schema import missing_tables

    keyspace = fresh_keyspace()
    code, out, _ = apm("storage", "migrate", "--keyspace", keyspace, "--retention-days", "5")
    assert code == 0 and f"table {keyspace}.results" in out
    assert missing_tables(cassandra_session, keyspace) == []
    code, out, _ = apm("storage", "migrate", "--keyspace", keyspace, "--retention-days", "5")
    assert code == 0 and "created" not in out
    code, _, err = apm("storage", "migrate", "--keyspace", "bad-name")
    assert code == 2 and "keyspace" in err


def test_an_unreachable_cassandra_is_a_clear_error(apm, monkeypatch):
    import socket

    with socket.socket() as sock:  # a port that nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("APM_STORAGE_PORT", str(port))
    monkeypatch.setenv("APM_STORAGE_CONNECT_TIMEOUT_S", "2")
    code, out, err = apm("query", "list")
    assert code == 1 and out == "" and "storage unavailable" in err
    # Bad query text is reported as such even with no Cassandra to talk to.
    code, _, err = apm("query", "add", "FROM * SELECT cpu WINDOW 1m")
    assert code == 2 and "expected COMPUTE" in err


def test_results_at_a_resolution_read_a_tier_and_say_which(apm, make_repo):
    import time

    from apm.query import WindowResult

    code, out, _ = apm("query", "add", "FROM * SELECT mem WINDOW 10s COMPUTE max")
    qid = out.strip()
    hour = float(int(time.time() // 3600) * 3600 - 3600)  # recent: within the tiers' retention
    repo = make_repo()
    repo.upsert_results([WindowResult(qid, hour, 10, {"max": 1.0}, 1, hour + 20)])
    repo.upsert_tier("1m", [WindowResult(qid, hour, 60, {"max": 2.0}, 6, hour + 70)])
    repo.upsert_tier("1h", [WindowResult(qid, hour, 3600, {"max": 3.0}, 360, hour + 3700)])
    span = ("--from", str(hour), "--to", str(hour + 3600))
    for resolution, tier, value in (("1m", "1m", 2.0), ("1h", "1h", 3.0)):
        code, out, err = apm("query", "results", qid, *span, "--resolution", resolution, "--json")
        assert code == 0, err
        assert f"the {tier} rollup tier" in err
        got = [json.loads(line) for line in out.splitlines()]
        assert [(g["values"]["max"], g["tier"]) for g in got] == [(value, tier)]
    code, out, err = apm("query", "results", qid, *span, "--resolution", "10s")
    assert code == 0 and "max=1" in out and "the query's 10s windows" in err
    code, _, err = apm("query", "results", qid, *span, "--resolution", "5m")
    assert code == 2 and f"query {qid} has 10s, 1m, 1h" in err
    code, _, err = apm("query", "results", qid, *span, "--resolution", "soon")
    assert code == 2 and "--resolution: resolution 'soon' is not" in err
