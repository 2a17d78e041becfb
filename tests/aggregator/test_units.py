"""Pure logic of the aggregator: settings, shards, result assembly, lag arithmetic."""

from __future__ import annotations

import pytest

from aggregator.evaluate import to_results
from aggregator.lag import checkpoint_offsets, lag_per_topic, parse_source_offsets
from aggregator.settings import STATE_LAYOUT, AggregatorSettings
from apm.query import parse
from apm.query_state import JobScope, parse_shard, shard_of

pytestmark = pytest.mark.unit


def test_shard_parsing_and_stable_hash():
    assert parse_shard("") is None
    assert parse_shard("1/3") == (1, 3)
    for bad in ("3/3", "-1/2", "a/b", "1", "1/0"):
        with pytest.raises(ValueError, match="i/n"):
            parse_shard(bad)
    assert shard_of("cpu", 4) == __import__("zlib").crc32(b"cpu") % 4
    counts = [0, 0]
    for i in range(200):
        counts[shard_of(f"metric{i}", 2)] += 1
    assert min(counts) > 50  # both shards get work


def test_settings_validate_and_name_the_job(tmp_path):
    s = AggregatorSettings(metrics="cpu, mem", checkpoint_dir=tmp_path)
    assert s.scope == JobScope(frozenset({"cpu", "mem"}))
    assert s.identity == "aggregator-metrics-cpu_mem"
    assert s.checkpoint == tmp_path / s.identity / STATE_LAYOUT
    assert AggregatorSettings(shard="1/4").identity == "aggregator-shard-1-of-4"
    with pytest.raises(ValueError, match="metric name"):
        AggregatorSettings(metrics="cpu,9bad")
    with pytest.raises(ValueError, match="i/n"):
        AggregatorSettings(shard="4/4")
    with pytest.raises(ValueError, match="positive"):
        AggregatorSettings(trigger_seconds=0)


def test_env_is_read_and_explicit_arguments_win(monkeypatch):
    monkeypatch.setenv("APM_AGGREGATOR_ALLOWED_LATENESS_SECONDS", "120")
    monkeypatch.setenv("APM_AGGREGATOR_TRIGGER_SECONDS", "5")
    s = AggregatorSettings(trigger_seconds=1.5)
    assert (s.allowed_lateness_seconds, s.trigger_seconds) == (120, 1.5)


def test_results_hold_exactly_the_querys_functions_in_order():
    import numpy as np
    from datasketches import kll_doubles_sketch

    from aggregator.quantiles import levels, percentiles

    values = [4.0, 1.0, 9.0, 3.0, 5.0, 6.0, 2.0]
    sketch = kll_doubles_sketch(10_000)
    for v in values:
        sketch.update(v)
    q = parse("FROM * SELECT cpu WINDOW 10s COMPUTE p99, count, percentile(12.5), max")
    row = {
        "query_id": "q",
        "server": "",  # the query's one series (evaluate splits the series column)
        "window_seconds": 10,
        "window_start": 1_700_000_000,
        "n": 7,
        "min": 1.0,
        "max": 9.0,
        "sum": 30.0,
        "avg": 30 / 7,
        # As evaluate hands it over: the executors' percentiles, whose rule is quantiles.py's.
        "percentiles": percentiles(sketch.serialize(), levels(q), 1.0, 9.0),
    }
    other = {**row, "query_id": "gone"}
    redefined = {**row, "window_seconds": 60}
    [result] = to_results([row, other, redefined], {"q": q}, clock=lambda: 42.0)
    assert result.values == {
        "p99": float(np.percentile(values, 99)),
        "count": 7.0,
        "p12.5": float(np.percentile(values, 12.5)),
        "max": 9.0,
    }
    assert (result.window_start, result.samples, result.updated_at) == (1.7e9, 7, 42.0)


def test_lag_counts_unread_partitions_from_their_start():
    end = {("t1", 0): 100, ("t1", 1): 50, ("t2", 0): 30}
    start = {("t1", 0): 0, ("t1", 1): 0, ("t2", 0): 10}
    assert lag_per_topic(end, start, {("t1", 0): 90, ("t1", 1): 50}) == {"t1": 10, "t2": 20}
    assert parse_source_offsets('{"t1":{"0":5,"1":7}}') == {("t1", 0): 5, ("t1", 1): 7}


def test_checkpoint_offsets_take_the_newest_committed_batch(tmp_path):
    (tmp_path / "offsets").mkdir()
    (tmp_path / "commits").mkdir()
    for batch, off in ((0, 5), (1, 9), (2, 12)):
        (tmp_path / "offsets" / str(batch)).write_text(
            f'v1\n{{"batchWatermarkMs":0}}\n{{"t":{{"0":{off}}}}}\n'
        )
    for batch in (0, 1):  # batch 2 was planned but never committed (killed mid-batch)
        (tmp_path / "commits" / str(batch)).write_text("v1\n{}\n")
    assert checkpoint_offsets(tmp_path) == {("t", 0): 9}
    assert checkpoint_offsets(tmp_path / "missing") == {}


def test_server_selection_splits_into_names_prefixes_and_regex_equivalent_to_the_glob():
    import fnmatch
    import re

    from aggregator.plan import server_match

    assert server_match(parse("FROM * SELECT cpu WINDOW 1s COMPUTE min")) == (True, [], [], None)
    q = parse("FROM db-1, web-*, api-?, x[12]* SELECT cpu WINDOW 1s COMPUTE min")
    everyone, names, prefixes, regex = server_match(q)
    assert (everyone, names, prefixes) == (False, ["db-1"], ["web-"])
    assert regex is not None
    for server in (
        "db-1",
        "db-10",
        "web-",
        "web-7",
        "api-1",
        "api-12",
        "x1",
        "x2y",
        "x3",
        "web",
        "Db-1",
    ):
        split = (
            server in names
            or any(server.startswith(p) for p in prefixes)
            or re.fullmatch(regex[1:-1], server) is not None
        )
        # fnmatch, not q.matches: that is the same regex, so the check could never fail.
        assert split == any(fnmatch.fnmatchcase(server, g) for g in q.servers), server


def test_a_job_takes_the_active_queries_of_its_scope_only(tmp_path):
    from aggregator.job import Aggregator
    from tests.aggregator.conftest import FakeStore

    store = FakeStore()
    metrics = [f"m{i}" for i in range(40)]
    for m in metrics:
        store.add(f"FROM * SELECT {m} WINDOW 10s COMPUTE avg")
    paused = store.add("FROM * SELECT m1 WINDOW 1m COMPUTE max")
    paused.paused = True
    queries = store.list_queries()
    for shard in range(3):
        job = Aggregator(
            None,
            store,
            AggregatorSettings(  # type: ignore[arg-type]
                shard=f"{shard}/3", checkpoint_dir=tmp_path
            ),
        )
        assert {q.query.metric for q in job.mine(queries)} == {
            m for m in metrics if shard_of(m, 3) == shard
        }
        assert paused.id not in {q.id for q in job.mine(queries)}
    narrow = Aggregator(
        None,
        store,
        AggregatorSettings(  # type: ignore[arg-type]
            metrics="m1,m2,nothing", checkpoint_dir=tmp_path
        ),
    )
    assert sorted(q.query.metric for q in narrow.mine(queries)) == ["m1", "m2"]


def test_with_no_active_query_the_job_runs_no_stream_and_says_it_is_idle(tmp_path):
    from aggregator.job import Aggregator
    from tests.aggregator.conftest import FakeStore

    store = FakeStore()
    store.add("FROM * SELECT cpu WINDOW 10s COMPUTE avg").paused = True
    job = Aggregator(
        None,
        store,
        AggregatorSettings(  # type: ignore[arg-type]
            shard="0/2", checkpoint_dir=tmp_path
        ),
        clock=lambda: 1_700_000_000.0,
    )
    job.start()  # would need Spark to start a stream: None here, so it must start none
    assert (job.windows, job.reads, job.active) == (None, [], [])
    assert not job.refresh_queries()
    status = job.publish_status()
    assert status["idle"] is True and status["reads"] == [] and status["lag_total"] == 0
    assert status["scope"] == {"metrics": [], "shard": [0, 2]}
    assert store.status["aggregator-shard-0-of-2"]["checkpoint"] == str(job.settings.checkpoint)


def test_status_report_names_each_job_its_scope_reads_and_lag(tmp_path):
    import time

    from aggregator.status import _job, render

    now = time.time()
    settings = AggregatorSettings(checkpoint_dir=tmp_path)
    live = _job(
        "aggregator-shard-1-of-2",
        {
            "scope": {"metrics": [], "shard": [1, 2]},
            "reads": ["cpu.util", "load.1"],
            "lag": {"apm.metric.cpu.util": 3, "apm.metric.load.1": 0},
            "updated_at": now - 2,
            "active_queries": 4,
            "checkpoint": str(tmp_path / "x"),
        },
        settings,
        None,
        now,
    )
    assert live["live"] and live["lag_total"] == 3 and live["lag_from"] == "published"
    assert live["scope"] == "shard 1/2"
    # Stale, and its checkpoint is not on this machine: the last published figures stand.
    gone = _job(
        "aggregator",
        {"reads": ["mem.util"], "lag": {"apm.metric.mem.util": 7}, "updated_at": now - 600},
        settings,
        tmp_path / "none",
        now,
    )
    assert not gone["live"] and gone["lag_total"] == 7 and gone["scope"] == "every metric"
    text = render([live, gone])
    assert "aggregator-shard-1-of-2: live" in text and "scope: shard 1/2" in text
    assert "aggregator: NOT RUNNING" in text and "reads 2 metrics; lag 3 records" in text
    assert "cpu.util" in text and "mem.util" in text
    assert render([]) == "no aggregator job has published a status"


class _Older:
    def __init__(self, counts: dict[str, int] | None = None, fail: bool = False) -> None:
        self.counts, self.fail, self.asked = counts or {}, fail, []

    def records_before(self, since):
        self.asked.append(dict(since))
        if self.fail:
            raise OSError("broker away")
        return {t: self.counts.get(t, 0) for t in since}


def test_the_cap_is_raised_by_the_joining_topics_older_records_until_a_batch_read_them():
    from aggregator.joining import JoinCap

    now = [100.0]
    cap = JoinCap(5000, patience_s=60, clock=lambda: now[0])
    older = _Older({"apm.metric.new": 86_400, "apm.metric.empty": 0})
    admitted = [("new", 50.0), ("new", 40.0), ("kept", 10.0), ("empty", 5.0)]
    assert cap.cap(admitted, {"apm.metric.kept"}, older) == 5000 + 86_400
    assert older.asked == [{"apm.metric.new": 40.0, "apm.metric.empty": 5.0}]  # earliest since
    assert cap.raised and not cap.done({"apm.metric.kept"})
    assert cap.done({"apm.metric.kept", "apm.metric.new"})
    now[0] += 61
    assert cap.done(set())  # a joining topic that never shows up: patience runs out
    # Nothing joins, no broker, a broker error, no cap: the configured cap.
    assert (
        cap.cap(admitted, {"apm.metric.new", "apm.metric.kept", "apm.metric.empty"}, older) == 5000
        and not cap.raised
        and not cap.done(set())
    )
    assert cap.cap(admitted, set(), None) == 5000
    assert cap.cap(admitted, set(), _Older(fail=True)) == 5000 and not cap.raised
    assert JoinCap(0, 60).cap(admitted, set(), older) == 0


@pytest.mark.parametrize("total", [float("inf"), float("-inf"), float("nan")])
def test_an_overflowing_sum_leaves_sum_and_avg_out_with_a_counted_marker(total):
    # Fails before: sum and avg were inf (or NaN), which storage refuses, failing the batch
    # on every replay (issue 14 item 1).
    from datasketches import kll_doubles_sketch

    from aggregator.evaluate import OVERFLOW_KEY
    from aggregator.quantiles import levels, percentiles
    from storage.codec import result_error

    sketch = kll_doubles_sketch(10_000)
    for v in (1.7e308, 1.7e308):
        sketch.update(v)
    q = parse("FROM * SELECT cpu WINDOW 10s COMPUTE avg, sum, max, p50, count")
    row = {
        "query_id": "q",
        "server": "",  # the query's one series (evaluate splits the series column)
        "window_seconds": 10,
        "window_start": 1_700_000_000,
        "n": 2,
        "min": 1.7e308,
        "max": 1.7e308,
        "sum": total,
        "percentiles": percentiles(sketch.serialize(), levels(q), 1.7e308, 1.7e308),
    }
    seen: list[str] = []
    [result] = to_results([row], {"q": q}, clock=lambda: 42.0, overflowed=seen.append)
    assert result.values == {"max": 1.7e308, "p50": 1.7e308, "count": 2.0, OVERFLOW_KEY: 2.0}
    assert seen == ["avg", "sum"]
    assert result_error(result) is None
    finite = to_results([{**row, "sum": 3.0}], {"q": q}, clock=lambda: 42.0)[0]
    assert OVERFLOW_KEY not in finite.values and finite.values["avg"] == 1.5
