"""StatsD/DogStatsD lines and the per-second aggregation rules, with a fake clock."""

from __future__ import annotations

import pytest

from agent.statsd import MalformedLine, StatsdAggregator, parse_line

pytestmark = pytest.mark.unit


@pytest.fixture
def make_aggregator(clock):
    def make(**kwargs) -> StatsdAggregator:
        return StatsdAggregator(clock, **kwargs)

    return make


def test_parse_every_type_rate_and_tags() -> None:
    line = parse_line("api.hits:3|c|@0.1|#env:prod,canary")
    assert line is not None
    assert (line.name, line.kind, line.values, line.rate, line.tags) == (
        "api.hits",
        "counter",
        ["3"],
        0.1,
        "env:prod,canary",
    )
    assert parse_line("lat:1:2:3|ms").values == ["1", "2", "3"]  # type: ignore[union-attr]
    assert parse_line("q:-4|g").relative  # type: ignore[union-attr]
    assert parse_line("u:alice|s").kind == "set"  # type: ignore[union-attr]
    assert parse_line("d:5|d|c:abc123|T1763800000").kind == "timer"  # type: ignore[union-attr]
    assert parse_line("_e{5,4}:title|text") is None
    assert parse_line("_sc|check|0") is None


@pytest.mark.parametrize(
    "bad",
    [
        "nocolon",
        "x:1",
        "x:1|zz",
        "x:abc|c",
        "x:1|c|@2",
        "x:1|c|@zero",
        ":1|c",
        "x:nan|g",
        "x:|s",
        "x:inf|ms",
    ],
)
def test_malformed_lines_are_refused_with_a_reason(bad: str) -> None:
    with pytest.raises(MalformedLine):
        parse_line(bad)


def test_counter_is_a_per_second_sum_scaled_by_sample_rate(make_aggregator, clock) -> None:
    agg = make_aggregator()
    agg.ingest(b"hits:1|c\nhits:2|c")
    agg.ingest(b"hits:1|c|@0.5")
    clock.advance(1)
    agg.ingest(b"hits:10|c")
    second = int(clock()) - 1
    assert agg.flush(clock()) == [(second + 1.0, {"hits": 5.0})]
    clock.advance(1)
    assert agg.flush(clock()) == [(second + 2.0, {"hits": 10.0})]
    clock.advance(1)
    assert agg.flush(clock()) == [(second + 3.0, {"hits": 0.0})]  # idle: a zero, not a gap


def test_gauge_keeps_its_last_value_and_adjusts_with_a_sign(make_aggregator, clock) -> None:
    agg = make_aggregator(idle_ttl_s=2)
    agg.ingest(b"queue:10|g\nqueue:7|g")
    agg.ingest(b"queue:+5|g")
    clock.advance(1)
    assert agg.flush(clock())[0][1] == {"queue": 12.0}
    agg.ingest(b"queue:-2|g")
    clock.advance(1)
    assert agg.flush(clock())[0][1] == {"queue": 10.0}
    clock.advance(2)
    assert [m for _t, m in agg.flush(clock())] == [{"queue": 10.0}, {"queue": 10.0}]
    clock.advance(1)
    assert agg.flush(clock()) == []  # past the idle TTL: no longer reported


def test_timer_is_the_max_of_the_second_with_optional_companions(make_aggregator, clock) -> None:
    agg = make_aggregator(timer_stats=["count", "avg", "p99"])
    agg.ingest(b"rpc.latency:84|ms|@0.5\nrpc.latency:12|ms")
    agg.ingest(b"rpc.latency:30:4|h")
    clock.advance(1)
    [(_ts, metrics)] = agg.flush(clock())
    assert metrics == {
        "rpc.latency.max": 84.0,
        "rpc.latency.count": 5.0,
        "rpc.latency.avg": pytest.approx(32.5),
        "rpc.latency.p99": 84.0,
    }
    plain = make_aggregator()
    plain.ingest(b"t:3|ms")
    clock.advance(1)
    assert plain.flush(clock())[0][1] == {"t.max": 3.0}


def test_set_counts_distinct_members(make_aggregator, clock) -> None:
    agg = make_aggregator()
    agg.ingest(b"users:alice|s\nusers:bob|s\nusers:alice|s")
    clock.advance(1)
    assert agg.flush(clock())[0][1] == {"users": 2.0}


def test_tags_become_name_parts_or_are_dropped(make_aggregator, clock) -> None:
    named = make_aggregator(prefix="app")
    dropped = make_aggregator(tags="drop")
    for agg in (named, dropped):
        agg.ingest(b"rpc/calls:1|c|#region:eu-west,env:prod\nrpc/calls:1|c|#env:dev")
    clock.advance(1)
    assert named.flush(clock())[0][1] == {
        "app.rpc_calls.env_prod.region_eu-west": 1.0,
        "app.rpc_calls.env_dev": 1.0,
    }
    assert dropped.flush(clock())[0][1] == {"rpc_calls": 2.0}


def test_malformed_lines_are_counted_and_the_rest_of_the_packet_kept(
    make_aggregator, clock
) -> None:
    reasons: list[str] = []
    agg = make_aggregator(on_malformed=reasons.append)
    agg.ingest(b"good:1|c\nbad:x|c\n:::\n\xff\xfe|c")
    agg.ingest(b"\xff\xfe\xfd")
    agg.ingest(b"9starts.with.digit:1|c")
    clock.advance(1)
    assert agg.flush(clock())[0][1] == {"good": 1.0}
    assert agg.malformed == 5 and len(reasons) == 5
    assert agg.packets == 3


def test_seconds_are_labelled_by_their_end_and_a_stall_loses_none(make_aggregator, clock) -> None:
    agg = make_aggregator()
    start = int(clock())
    for _ in range(4):
        agg.ingest(b"x:2|ms")
        clock.advance(1)
    assert [ts for ts, _m in agg.flush(clock())] == [
        start + 1.0,
        start + 2.0,
        start + 3.0,
        start + 4.0,
    ]
