"""The on-disk spool: FIFO order, persistence across restarts, the byte cap, torn writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.spool import Spool

pytestmark = pytest.mark.unit


def _records(n: int, start: int = 0, size: int = 20) -> list[bytes]:
    return [f"{i:0{size}d}".encode() for i in range(start, start + n)]


def test_fifo_oldest_first_with_partial_acks(tmp_path: Path) -> None:
    spool = Spool(tmp_path, fsync=False)
    for record in _records(5):
        spool.append(record)
    assert spool.depth == 5
    assert spool.peek(3, 1 << 20) == _records(3)
    spool.ack(2)
    assert spool.depth == 3
    assert spool.peek(10, 1 << 20) == _records(3, start=2)


def test_peek_respects_the_byte_bound_but_returns_at_least_one(tmp_path: Path) -> None:
    spool = Spool(tmp_path, fsync=False)
    for record in _records(4, size=100):
        spool.append(record)
    assert len(spool.peek(10, 250)) == 2
    assert len(spool.peek(10, 10)) == 1


def test_survives_a_restart_across_segments(tmp_path: Path) -> None:
    spool = Spool(tmp_path, max_bytes=1 << 20, segment_bytes=4096)
    for record in _records(300):  # ~28 bytes each: several segments
        spool.append(record)
    assert len(list(tmp_path.glob("*.seg"))) > 1
    spool.peek(120, 1 << 20)
    spool.ack(120)
    spool.close()
    reopened = Spool(tmp_path, max_bytes=1 << 20, segment_bytes=4096)
    assert reopened.depth == 180
    got = []
    while batch := reopened.peek(50, 1 << 20):
        got += batch
        reopened.ack(len(batch))
    assert got == _records(180, start=120)
    assert reopened.depth == 0
    assert len(list(tmp_path.glob("*.seg"))) == 1  # consumed segments are deleted
    reopened.append(b"after")
    assert reopened.peek(5, 1 << 20) == [b"after"]


def test_full_spool_drops_the_oldest_and_counts_them(tmp_path: Path) -> None:
    spool = Spool(tmp_path, max_bytes=64 * 1024, segment_bytes=4096, fsync=False)
    records = _records(5000, size=40)
    for record in records:
        spool.append(record)
    assert spool.size_bytes <= 64 * 1024
    assert spool.dropped > 0
    assert spool.depth + spool.dropped == len(records)
    remaining = []
    while batch := spool.peek(500, 1 << 20):
        remaining += batch
        spool.ack(len(batch))
    assert remaining == records[spool.dropped :]  # the newest survive, in order


def test_a_torn_tail_is_cut_off_and_counted(tmp_path: Path) -> None:
    spool = Spool(tmp_path, fsync=False)
    for record in _records(3):
        spool.append(record)
    spool.close()
    segment = next(tmp_path.glob("*.seg"))
    with open(segment, "ab") as handle:  # a crash in the middle of the 4th append
        handle.write(b"\x30\x00\x00\x00\x01\x02")
    reopened = Spool(tmp_path, fsync=False)
    assert reopened.depth == 3
    assert reopened.dropped == 1
    assert reopened.peek(10, 1 << 20) == _records(3)
    reopened.append(b"next")
    reopened.close()
    assert Spool(tmp_path, fsync=False).peek(10, 1 << 20) == [*_records(3), b"next"]


def test_a_corrupt_cursor_file_means_reading_from_the_start(tmp_path: Path) -> None:
    spool = Spool(tmp_path, fsync=False)
    for record in _records(3):
        spool.append(record)
    spool.close()
    (tmp_path / "cursor").write_text("{not json")
    assert Spool(tmp_path, fsync=False).depth == 3
