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

    values = [4.0, 1.0, 9.0, 3.0, 5.0, 6.0, 2.0]
    sketch = kll_doubles_sketch(10_000)
    for v in values:
        sketch.update(v)
    q = parse("FROM * SELECT cpu WINDOW 10s COMPUTE p99, count, percentile(12.5), max")
    row = {"query_id": "q", "window_seconds": 10, "window_start": 1_700_000_000, "n": 7,
           "min": 1.0, "max": 9.0, "sum": 30.0, "avg": 30 / 7, "sketch": sketch.serialize()}
    other = {**row, "query_id": "gone"}
    redefined = {**row, "window_seconds": 60}
    [result] = to_results([row, other, redefined], {"q": q}, clock=lambda: 42.0)
    assert result.values == {"p99": float(np.percentile(values, 99)), "count": 7.0,
                             "p12.5": float(np.percentile(values, 12.5)), "max": 9.0}
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
            f'v1\n{{"batchWatermarkMs":0}}\n{{"t":{{"0":{off}}}}}\n')
    for batch in (0, 1):  # batch 2 was planned but never committed (killed mid-batch)
        (tmp_path / "commits" / str(batch)).write_text("v1\n{}\n")
    assert checkpoint_offsets(tmp_path) == {("t", 0): 9}
    assert checkpoint_offsets(tmp_path / "missing") == {}


def test_server_selection_splits_into_names_prefixes_and_regex_equivalent_to_the_glob():
    import re

    from aggregator.plan import server_match

    assert server_match(parse("FROM * SELECT cpu WINDOW 1s COMPUTE min")) == (True, [], [], None)
    q = parse("FROM db-1, web-*, api-?, x[12]* SELECT cpu WINDOW 1s COMPUTE min")
    everyone, names, prefixes, regex = server_match(q)
    assert (everyone, names, prefixes) == (False, ["db-1"], ["web-"])
    assert regex is not None
    for server in ("db-1", "db-10", "web-", "web-7", "api-1", "api-12", "x1", "x2y", "x3",
                   "web", "Db-1"):
        split = (server in names or any(server.startswith(p) for p in prefixes)
                 or re.fullmatch(regex[1:-1], server) is not None)
        assert split == q.matches(server), server
