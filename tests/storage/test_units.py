"""Storage logic without Cassandra: row checks, time and bucket arithmetic, the cross-bucket
reader's order and read-ahead (with a fake session), settings and CLI argument parsing."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import numpy as np
import pytest

from apm.query import WindowResult

pytestmark = pytest.mark.unit

DAY = 86_400


def _row(**changes) -> WindowResult:
    base = WindowResult("q1", 1_700_000_000.0, 10, {"min": 1.0, "p99": 2.0}, 5, 1_700_000_011.0)
    return base._replace(**changes)


def test_a_good_row_passes_including_numpy_scalars():
    from storage.codec import result_error

    assert result_error(_row()) is None
    assert (
        result_error(
            _row(window_start=np.float64(1e9), samples=np.int64(3), values={"avg": np.float32(2.5)})
        )
        is None
    )
    assert result_error(tuple(_row())) is None  # a plain tuple with the same fields


@pytest.mark.parametrize(
    "changes, fragment",
    [
        ({"window_start": math.nan}, "window_start"),
        ({"window_start": -1.0}, "window_start"),
        ({"window_seconds": 1.5}, "window_seconds"),
        ({"window_seconds": True}, "window_seconds"),
        ({"samples": -2}, "samples"),
        ({"samples": 2.0}, "samples"),
        ({"values": {"p99": math.nan}}, "p99"),
        ({"values": {"max": True}}, "max"),
        ({"values": [1.0]}, "mapping"),
        ({"query_id": None}, "query_id"),
        ({"updated_at": math.inf}, "updated_at"),
    ],
)
def test_bad_rows_are_named(changes, fragment):
    from storage.codec import result_error

    err = result_error(_row(**changes))
    assert err is not None and fragment in err
    assert "WindowResult" in (result_error("not a row") or "")


def test_time_conversions_keep_milliseconds():
    from storage.codec import epoch, from_ms, to_ms, to_us

    assert to_ms(1_700_000_000.123) == 1_700_000_000_123 and to_us(0.000002) == 2
    naive = datetime(2025, 11, 22, 10, 0, 0, 123000)  # the driver's naive UTC
    assert epoch(naive) == datetime(2025, 11, 22, 10, 0, 0, 123000, UTC).timestamp()
    assert epoch(from_ms(1_700_000_000_123)) == 1_700_000_000.123
    assert epoch(None) is None


def test_bucket_arithmetic_is_half_open():
    from storage.reader import bucket_span, ms_ceil
    from storage.schema import bucket_of

    assert bucket_of(DAY - 0.001) == 0 and bucket_of(DAY) == 1
    assert ms_ceil(0.3) == 300 and ms_ceil(1.0001) == 1001 and ms_ceil(5) == 5000
    # [day 1 00:00, day 3 00:00) touches days 1 and 2 only; one ms more touches day 3.
    assert bucket_span(DAY * 1000, 3 * DAY * 1000) == (1, 2)
    assert bucket_span(DAY * 1000, 3 * DAY * 1000 + 1) == (1, 3)


class _FakeStmt:
    def bind(self, params):
        return _Bound(params)


class _Bound:
    def __init__(self, params):
        self.params, self.fetch_size = params, None


class _FakeFuture:
    def __init__(self, rows):
        self.rows = rows

    def result(self):
        return self.rows


class _FakeSession:
    """Hands back one window per bucket and records how many requests were in flight."""

    def __init__(self):
        self.bound: list[_Bound] = []
        self.outstanding = self.max_outstanding = 0

    def execute_async(self, bound, execution_profile=None):
        self.bound.append(bound)
        self.outstanding += 1
        self.max_outstanding = max(self.max_outstanding, self.outstanding)
        _, bucket, _, _ = bound.params
        session = self

        class Future(_FakeFuture):
            def result(self):
                session.outstanding -= 1
                return self.rows

        return Future(
            [
                (
                    datetime(1970, 1, 1) + (bucket * DAY) * _SECOND,
                    10,
                    {"n": 1.0},
                    1,
                    datetime(2025, 1, 1),
                )
            ]
        )


_SECOND = datetime(1970, 1, 1, 0, 0, 1) - datetime(1970, 1, 1)


@pytest.mark.parametrize("ahead", [1, 3, 8])
def test_reader_walks_the_given_buckets_in_order_with_bounded_read_ahead(ahead):
    from storage.reader import read_range

    session, buckets = _FakeSession(), [3, 5, 6, 9, 10, 12]
    got = list(
        read_range(
            session, _FakeStmt(), "q", buckets, 100, 200, page_size=7, ahead=ahead, profile=None
        )
    )
    assert [r.window_start for r in got] == [b * DAY for b in buckets]
    assert [b.params for b in session.bound] == [("q", b, 100, 200) for b in buckets]
    assert {b.fetch_size for b in session.bound} == {7}
    assert session.max_outstanding == min(ahead, len(buckets))


def test_status_payload_must_be_plain_json():
    from storage.codec import dumps_payload

    assert dumps_payload("agg", {"b": 1, "a": [1.5]}) == '{"a": [1.5], "b": 1}'
    for component, payload, fragment in (
        ("", {}, "component"),
        ("agg", {"x": math.inf}, "JSON"),
        ("agg", {"x": {1, 2}}, "JSON"),
        ("agg", [1], "mapping"),
    ):
        with pytest.raises(ValueError, match=fragment):
            dumps_payload(component, payload)


def test_settings_come_from_the_env_and_explicit_arguments_win(monkeypatch):
    from pydantic import ValidationError

    from storage.settings import DEFAULT_REPLICATION, StorageSettings

    monkeypatch.setenv("APM_STORAGE_KEYSPACE", "from_env")
    monkeypatch.setenv("APM_STORAGE_RETENTION_DAYS", "7")
    monkeypatch.setenv("APM_STORAGE_HOSTS", "10.0.0.1, 10.0.0.2")
    settings = StorageSettings()
    assert (settings.keyspace, settings.retention_days) == ("from_env", 7)
    assert settings.host_list == ["10.0.0.1", "10.0.0.2"]
    assert settings.replication == DEFAULT_REPLICATION
    assert StorageSettings(keyspace="explicit").keyspace == "explicit"
    for bad in (
        {"keyspace": "no-dashes"},
        {"keyspace": "9starts_with_digit"},
        {"retention_days": 0},
        {"hosts": " , "},
        {"replication": "{'class': 'SimpleStrategy'}; DROP KEYSPACE apm"},
    ):
        with pytest.raises(ValidationError):
            StorageSettings(**bad)
    multi = "{'class': 'NetworkTopologyStrategy', 'dc1': 3, 'dc2': '2'}"
    assert StorageSettings(replication=multi).replication == multi


def test_parse_time_accepts_epoch_iso_and_now():
    from storage.cli import parse_time

    assert parse_time("1700000000.5") == 1_700_000_000.5
    assert parse_time("2025-11-22T10:00:00Z") == datetime(2025, 11, 22, 10, tzinfo=UTC).timestamp()
    assert parse_time("2025-11-22T10:00:00") == parse_time("2025-11-22T10:00:00+00:00")
    assert parse_time("2025-11-22T12:00:00+02:00") == parse_time("2025-11-22T10:00:00Z")
    assert parse_time(" now ", now=42.0) == 42.0
    for bad in ("yesterday", "-5", "nan", "2025-13-01"):
        with pytest.raises(ValueError, match="epoch seconds"):
            parse_time(bad)


def test_cli_rejects_bad_times_and_missing_arguments(capsys):
    from apm.cli import main

    for argv in (
        ["query", "results", "some-id", "--from", "soon"],
        ["query", "pause"],
        ["query", "add"],
        ["storage"],
    ):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2
    assert "'soon' is neither epoch seconds nor ISO-8601" in capsys.readouterr().err


def test_transient_driver_errors_are_told_from_deterministic_refusals():
    # Fails before (no classifier): every failure was retried as if it were transient.
    from cassandra import (
        ConsistencyLevel,
        InvalidRequest,
        OperationTimedOut,
        ReadTimeout,
        Unauthorized,
        Unavailable,
        WriteTimeout,
    )
    from cassandra.cluster import NoHostAvailable
    from cassandra.connection import ConnectionShutdown

    from storage.errors import is_transient

    transient = [
        OperationTimedOut("client timeout"),
        ReadTimeout("replicas"),
        WriteTimeout("replicas", write_type=0),
        Unavailable("replicas", consistency=ConsistencyLevel.LOCAL_QUORUM, required_replicas=1),
        NoHostAvailable("no host", {}),
        ConnectionShutdown("closed"),
        ConnectionRefusedError(),
    ]
    deterministic = [
        InvalidRequest("Error from server: code=2200 [Invalid query]"),
        Unauthorized("no"),
        ValueError("result row 0: values['avg'] must be a finite number, got inf"),
        TypeError("bad parameter"),
        KeyError("q"),
    ]
    assert [is_transient(e) for e in transient] == [True] * len(transient)
    assert [is_transient(e) for e in deterministic] == [False] * len(deterministic)
    # Every transient failure is also an outage to show; no deterministic refusal is.
    from storage.errors import is_unavailable

    assert [is_unavailable(e) for e in transient] == [True] * len(transient)
    assert [is_unavailable(e) for e in deterministic] == [False] * len(deterministic)
