"""apm.query_state: which of the five states a query is in, in which order they win, and what
the reason says. Jobs are built from status payloads through ``live_jobs``, as the dashboard
and the CLI build them from ``Repository.get_status()``."""

from __future__ import annotations

import zlib
from datetime import UTC, datetime
from typing import Any

import pytest

from apm.query import StoredQuery, parse
from apm.query_state import (
    QUIET_AFTER_S,
    STALE_AFTER_S,
    STATES,
    Job,
    JobScope,
    live_jobs,
    parse_shard,
    query_state,
    query_states,
    shard_of,
)

pytestmark = pytest.mark.unit

NOW = 1_763_800_000.0  # 2025-11-22 08:26:40 UTC
METRIC = "disk.io.write_bytes"


def _stored(
    metric: str = METRIC,
    *,
    window: str = "10s",
    paused: bool = False,
    active_ago: float | None = 5.0,
    servers: str = "*",
) -> StoredQuery:
    since = None if active_ago is None else datetime.fromtimestamp(NOW - active_ago, UTC)
    return StoredQuery(
        id="q1",
        query=parse(f"FROM {servers} SELECT {metric} WINDOW {window} COMPUTE avg"),
        paused=paused,
        created_at=since,
        updated_at=since,
        active_since=since,
    )


def _payload(
    metrics: list[Any] | None = None, shard: Any = None, reads: Any = None, age: float = 2.0
) -> dict[str, Any]:
    return {
        "scope": {"metrics": metrics or [], "shard": shard},
        "reads": [METRIC] if reads is None else reads,
        "updated_at": NOW - age,
    }


def _jobs(**status: dict[str, Any]) -> list[Job]:
    return live_jobs(status, NOW)


def _state(
    stored: StoredQuery | None = None,
    jobs: Any = None,
    *,
    last_result_at: float | None = None,
    seen: float | None = None,
) -> tuple[str, str]:
    got = query_state(
        stored or _stored(),
        now=NOW,
        jobs=_jobs(aggregator=_payload()) if jobs is None else jobs,
        last_result_at=last_result_at,
        metric_last_seen=seen,
    )
    assert got.state in STATES
    return got.state, got.reason


def _at(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


# --- each state ------------------------------------------------------------------------------


def test_a_just_created_covered_query_is_waiting_for_its_first_window():
    state, reason = _state()
    assert state == "waiting"
    assert "first 10s window" in reason and f"aggregator reads {METRIC}" in reason


def test_a_result_written_since_it_became_active_means_evaluated():
    state, reason = _state(last_result_at=NOW - 3, seen=NOW - 1)
    assert state == "evaluated"
    assert f"written at {_at(NOW - 3)} (3s ago)" in reason and "by aggregator" in reason


def test_paused():
    assert _state(_stored(paused=True)) == ("paused", "paused: resume it to evaluate it again")


def test_no_job_at_all_is_not_covered_and_says_to_start_one():
    state, reason = _state(jobs=[])
    assert state == "not-covered"
    assert "no aggregator is running" in reason and "apm aggregator run" in reason


def test_a_metrics_job_that_leaves_the_metric_out_is_named_in_the_reason():
    state, reason = _state(jobs=_jobs(**{"aggregator-host": _payload(["cpu.util", "mem.util"])}))
    assert state == "not-covered"
    assert reason == (
        f"no running aggregator covers {METRIC}: aggregator-host (metrics cpu.util, mem.util)"
    )


def test_a_quiet_metric_is_no_data_and_the_reason_says_when_the_last_sample_was():
    last = NOW - 600
    state, reason = _state(_stored(active_ago=3600), seen=last)
    assert state == "no-data"
    assert METRIC in reason and "in the last 5m" in reason
    assert f"the last one was at {_at(last)} (10m ago)" in reason


def test_quiet_starts_just_after_quiet_after_s():
    stored = _stored(active_ago=3600)
    assert _state(stored, seen=NOW - QUIET_AFTER_S)[0] == "waiting"
    assert _state(stored, seen=NOW - QUIET_AFTER_S - 1)[0] == "no-data"


# --- precedence: paused > not-covered > no-data > evaluated > waiting -------------------------


def test_paused_wins_over_everything():
    stored = _stored(paused=True, active_ago=3600)
    assert _state(stored, jobs=[], last_result_at=NOW - 1, seen=NOW - 3000)[0] == "paused"


def test_not_covered_wins_over_no_data_and_evaluated():
    stored = _stored(active_ago=3600)
    assert _state(stored, jobs=[], last_result_at=NOW - 1, seen=NOW - 3000)[0] == "not-covered"


def test_no_data_wins_over_evaluated():
    stored = _stored(active_ago=3600)
    assert _state(stored, last_result_at=NOW - 400, seen=NOW - 400)[0] == "no-data"


def test_evaluated_wins_over_waiting():
    assert _state(last_result_at=NOW - 1)[0] == "evaluated"
    assert _state(last_result_at=None)[0] == "waiting"


# --- jobs: shards, staleness, malformed payloads --------------------------------------------


def _metric_in_shard(shard: int, n: int, prefix: str) -> str:
    return next(m for i in range(10_000) if shard_of(m := f"{prefix}.{i}", n) == shard)


def test_shard_of_is_crc32_mod_n_and_stable():
    assert shard_of("cpu.util", 7) == zlib.crc32(b"cpu.util") % 7
    assert {shard_of(f"m.{i}", 4) for i in range(200)} == {0, 1, 2, 3}


def test_shard_coverage_follows_shard_of():
    in0, in1 = _metric_in_shard(0, 2, "a"), _metric_in_shard(1, 2, "b")
    jobs = _jobs(
        **{
            "aggregator-0": _payload(shard=[0, 2], reads=[in0, in1]),
            "aggregator-1": _payload(shard=[1, 2], reads=[in0, in1]),
        }
    )
    for metric, owner in ((in0, "aggregator-0"), (in1, "aggregator-1")):
        state, reason = _state(_stored(metric), jobs)
        assert state == "waiting" and f"{owner} reads {metric}" in reason
    # Shard 1 is down: its metrics are not covered, and the reason names what does run.
    only0 = _jobs(**{"aggregator-0": _payload(shard=[0, 2])})
    assert _state(_stored(in0), only0)[0] == "waiting"
    state, reason = _state(_stored(in1), only0)
    assert state == "not-covered" and reason.endswith("aggregator-0 (shard 0/2)")


def test_metrics_and_shard_both_restrict():
    in0, in1 = _metric_in_shard(0, 3, "c"), _metric_in_shard(1, 3, "d")
    scope = JobScope(frozenset({in0, in1}), (0, 3))
    assert scope.covers(in0) and not scope.covers(in1) and not scope.covers("other")
    assert scope.describe() == f"metrics {', '.join(sorted([in0, in1]))} and shard 0/3"
    assert JobScope.from_json(scope.to_json()) == scope


def test_a_stale_job_is_ignored():
    status = {"aggregator": _payload(age=STALE_AFTER_S + 1)}
    assert live_jobs(status, NOW) == []
    state, reason = _state(jobs=live_jobs(status, NOW))
    assert state == "not-covered" and "no aggregator is running" in reason
    assert [j.identity for j in live_jobs({"aggregator": _payload(age=STALE_AFTER_S)}, NOW)] == [
        "aggregator"
    ]


def test_only_aggregator_rows_with_a_usable_updated_at_are_jobs():
    status: dict[str, Any] = {
        "ingest": _payload(),
        "aggregator-a": {**_payload(), "updated_at": None},
        "aggregator-b": {**_payload(), "updated_at": "now"},
        "aggregator-c": {**_payload(), "updated_at": float("nan")},
        "aggregator-d": {**_payload(), "updated_at": True},
        "aggregator-e": "not a payload",
        "aggregator-f": _payload(reads=["x", 5, None]),
        "aggregator-g": _payload(reads="x"),
    }
    jobs = live_jobs(status, NOW)
    assert [(j.identity, j.reads) for j in jobs] == [("aggregator-f", ("x",)), ("aggregator-g", ())]


@pytest.mark.parametrize(
    "scope",
    [
        None,
        "every",
        [],
        {},
        {"metrics": "cpu"},
        {"metrics": None, "shard": None},
        {"shard": [2, 2]},
        {"shard": [3, 2]},
        {"shard": [-1, 2]},
        {"shard": [True, 2]},
        {"shard": "0/2"},
        {"shard": [0]},
        {"shard": [0, 2, 4]},
        {"shard": [0.0, 2]},
    ],
)
def test_a_malformed_scope_reads_as_every_metric(scope: Any):
    assert JobScope.from_json(scope) == JobScope()
    jobs = _jobs(aggregator={**_payload(), "scope": scope})
    assert _state(jobs=jobs)[0] == "waiting"


def test_a_scope_keeps_its_valid_parts():
    assert JobScope.from_json({"metrics": ["a", 5, None], "shard": [1, 4]}) == JobScope(
        frozenset({"a"}), (1, 4)
    )
    assert JobScope.from_json({"metrics": ["a"], "shard": "bad"}) == JobScope(frozenset({"a"}))


def test_the_reason_lists_every_job_even_when_jobs_is_an_iterator():
    jobs = _jobs(
        **{"aggregator-a": _payload(["other"]), "aggregator-b": _payload(shard=[0, 1], reads=[])}
    )
    narrow = [jobs[0]]
    got = query_state(
        _stored(), now=NOW, jobs=iter(narrow), last_result_at=None, metric_last_seen=None
    )
    assert got.state == "not-covered"
    assert "aggregator-a (metrics other)" in got.reason and "no aggregator is running" not in (
        got.reason
    )


@pytest.mark.parametrize(("text", "expected"), [("0/2", (0, 2)), (" 3 / 4 ", (3, 4)), ("", None)])
def test_parse_shard(text: str, expected: Any):
    assert parse_shard(text) == expected


@pytest.mark.parametrize("text", ["2/2", "1", "a/b", "-1/2", "1/0"])
def test_parse_shard_refuses(text: str):
    with pytest.raises(ValueError, match="i/n"):
        parse_shard(text)


# --- "since it became active" ----------------------------------------------------------------


def test_a_metric_never_seen_waits_one_window_plus_the_grace_then_is_no_data():
    grace_end = 60 + 30
    assert _state(_stored(window="1m", active_ago=grace_end - 1))[0] == "waiting"
    state, reason = _state(_stored(window="1m", active_ago=grace_end + 1))
    assert state == "no-data"
    assert (
        f"no sample of {METRIC} has arrived since the query became active at "
        f"{_at(NOW - grace_end - 1)} (91s ago)" in reason
    )
    assert "is anything sending this metric?" in reason


def test_a_sample_from_before_it_became_active_is_not_counted():
    """A metric last seen an hour ago by an earlier query: a new query on it starts waiting,
    not no-data, and after the grace its reason says when the earlier sample was."""
    old = NOW - 3600
    state, reason = _state(_stored(active_ago=5), seen=old)
    assert state == "waiting" and "first 10s window" in reason
    state, reason = _state(_stored(active_ago=600), seen=old)
    assert state == "no-data"
    assert f"since the query became active at {_at(NOW - 600)} (10m ago)" in reason
    assert f"the last one before was at {_at(old)}" in reason


def test_a_result_from_before_it_became_active_is_not_evaluated():
    """Resumed (or given another metric) a minute ago: the result from before does not count."""
    stored = _stored(active_ago=20)
    assert _state(stored, last_result_at=NOW - 7200)[0] == "waiting"
    assert _state(stored, last_result_at=NOW - 2, seen=NOW - 1)[0] == "evaluated"


def test_samples_arriving_but_no_window_after_the_grace_says_what_to_check():
    state, reason = _state(_stored(active_ago=600, servers="web-*"), seen=NOW - 2)
    assert state == "waiting"
    assert "samples of" in reason and "FROM web-*" in reason and "apm aggregator status" in reason


def test_a_covering_job_that_does_not_read_the_metric_yet_is_waited_for():
    jobs = _jobs(aggregator=_payload(reads=["cpu.util"]))
    for active_ago in (5, 600):
        state, reason = _state(_stored(active_ago=active_ago), jobs)
        assert state == "waiting"
        assert reason.startswith(f"waiting for aggregator, whose scope covers {METRIC}")


def test_the_job_that_reads_the_metric_is_the_one_named():
    jobs = _jobs(**{"aggregator-a": _payload(reads=[]), "aggregator-b": _payload()})
    assert "aggregator-b reads" in _state(jobs=jobs)[1]
    assert "by aggregator-b" in _state(jobs=jobs, last_result_at=NOW - 1)[1]


def test_without_an_activation_time_a_never_seen_metric_keeps_waiting():
    assert _state(_stored(active_ago=None))[0] == "waiting"
    assert _state(_stored(active_ago=None), seen=NOW - 1000)[0] == "no-data"
    assert _state(_stored(active_ago=None), last_result_at=NOW - 1000)[0] == "evaluated"


@pytest.mark.parametrize(
    ("ago", "text"),
    [
        (0.2, "1s ago"),
        (119, "119s ago"),
        (600, "10m ago"),
        (2 * 3600 + 300, "2h 5m ago"),
        (3 * 86_400 + 4 * 3600, "3d 4h ago"),
    ],
)
def test_ages_read_well(ago: float, text: str):
    assert _state(last_result_at=NOW - ago, stored=_stored(active_ago=10**6))[1].endswith(
        f"({text})"
    )


def test_query_states_reads_status_and_sightings_once_and_each_last_result():
    from dataclasses import replace

    quiet = replace(_stored("quiet.metric", active_ago=7200), id="q2")
    asked: list[str] = []

    def last(qid: str) -> float | None:
        asked.append(qid)
        return NOW - 3 if qid == "q1" else None

    got = query_states(
        [_stored(), quiet],
        now=NOW,
        status={"aggregator": _payload(reads=[METRIC, "quiet.metric"])},
        metrics_seen={METRIC: NOW - 1, "quiet.metric": NOW - 3600},
        last_result_at=last,
    )
    assert asked == ["q1", "q2"]
    assert got["q1"][0].state == "evaluated" and got["q1"][1] == NOW - 3
    assert got["q2"][0].state == "no-data" and got["q2"][1] is None
