"""A bounded on-disk FIFO of snapshots that survives a restart or a reboot.

Records go into numbered segment files (``00000000000000000042.seg``), each record framed as
``length:u32 crc32:u32 payload`` and fsync'd before ``append`` returns, so a snapshot the agent
has collected is on disk before anything else happens to it. The read position lives in a small
``cursor`` file, replaced atomically on every ``ack``. When the spool is over its byte cap the
oldest segment goes, and its unread records are counted as dropped. A record torn by a crash
mid-write fails its CRC on the next start and is cut off (and counted), never sent.
"""

from __future__ import annotations

import json
import logging
import os
import struct
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Spool"]

log = logging.getLogger(__name__)
_HEADER = struct.Struct("<II")
_SUFFIX = ".seg"


@dataclass
class _Segment:
    seq: int
    path: Path
    size: int
    count: int


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _scan(path: Path) -> tuple[list[int], int]:
    """Offsets of the end of each intact record, and the length of the intact prefix."""
    data = path.read_bytes()
    ends: list[int] = []
    pos = 0
    while pos + _HEADER.size <= len(data):
        length, crc = _HEADER.unpack_from(data, pos)
        end = pos + _HEADER.size + length
        if end > len(data) or zlib.crc32(data[pos + _HEADER.size : end]) != crc:
            break
        ends.append(end)
        pos = end
    return ends, pos


class Spool:
    def __init__(
        self,
        directory: Path,
        max_bytes: int = 100 * 1024 * 1024,
        segment_bytes: int = 1024 * 1024,
        fsync: bool = True,
    ) -> None:
        self.directory = Path(directory)
        self.max_bytes = max_bytes
        self.segment_bytes = min(segment_bytes, max(4096, max_bytes // 4))
        self._fsync = fsync
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self.dropped = 0
        self._peeked: list[tuple[int, int]] = []
        self.directory.mkdir(parents=True, exist_ok=True)
        self._segments = self._recover()
        self._cursor_seq, self._cursor_offset, self._unread = self._load_cursor()
        self._head = open(self._segments[-1].path, "ab")  # noqa: SIM115 - lives with the spool

    # -- start-up -------------------------------------------------------------------------

    def _recover(self) -> list[_Segment]:
        segments = []
        for path in sorted(self.directory.glob("*" + _SUFFIX)):
            try:
                seq = int(path.stem)
            except ValueError:
                continue
            ends, intact = _scan(path)
            size = path.stat().st_size
            if intact < size:
                log.warning(
                    "spool segment %s: %d torn or corrupt bytes cut off", path, size - intact
                )
                self.dropped += 1
                with open(path, "r+b") as handle:
                    handle.truncate(intact)
            segments.append(_Segment(seq, path, intact, len(ends)))
        if not segments:
            segments.append(self._new_segment(0))
        return segments

    def _load_cursor(self) -> tuple[int, int, int]:
        seq, offset = self._segments[0].seq, 0
        try:
            saved = json.loads((self.directory / "cursor").read_text())
            seq, offset = int(saved["seq"]), int(saved["offset"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
        first = self._segments[0]
        if seq < first.seq or not any(s.seq == seq for s in self._segments):
            seq, offset = first.seq, 0
        unread = 0
        for segment in self._segments:
            if segment.seq == seq:
                ends, _ = _scan(segment.path)
                offset = max((e for e in ends if e <= offset), default=0)
                unread += sum(1 for e in ends if e > offset)
            elif segment.seq > seq:
                unread += segment.count
        return seq, offset, unread

    def _new_segment(self, seq: int) -> _Segment:
        path = self.directory / f"{seq:020d}{_SUFFIX}"
        path.touch()
        if self._fsync:
            _fsync_dir(self.directory)
        return _Segment(seq, path, 0, 0)

    # -- state ---------------------------------------------------------------------------

    @property
    def depth(self) -> int:
        """Records appended and not yet acknowledged."""
        return self._unread

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    # -- writing -------------------------------------------------------------------------

    def append(self, payload: bytes) -> None:
        record = _HEADER.pack(len(payload), zlib.crc32(payload)) + payload
        with self._lock:
            head = self._segments[-1]
            if head.size and head.size + len(record) > self.segment_bytes:
                self._head.close()
                head = self._new_segment(head.seq + 1)
                self._segments.append(head)
                self._head = open(head.path, "ab")  # noqa: SIM115
            self._head.write(record)
            self._head.flush()
            if self._fsync:
                os.fsync(self._head.fileno())
            head.size += len(record)
            head.count += 1
            self._unread += 1
            self._enforce_cap()
            self._ready.notify_all()

    def _enforce_cap(self) -> None:
        while self.size_bytes > self.max_bytes and len(self._segments) > 1:
            oldest = self._segments.pop(0)
            if oldest.seq == self._cursor_seq:
                lost = sum(1 for e in _scan(oldest.path)[0] if e > self._cursor_offset)
            elif oldest.seq > self._cursor_seq:
                lost = oldest.count
            else:
                lost = 0
            if oldest.seq >= self._cursor_seq:
                self._cursor_seq, self._cursor_offset = self._segments[0].seq, 0
                self._peeked = []  # the records being sent may be gone: re-read after this
            self._unread -= lost
            self.dropped += lost
            oldest.path.unlink(missing_ok=True)
            log.warning(
                "spool over %d bytes: dropped segment %d with %d unsent snapshots",
                self.max_bytes,
                oldest.seq,
                lost,
            )

    # -- reading -------------------------------------------------------------------------

    def wait(self, timeout: float) -> bool:
        """Waits until something is unread (or ``timeout`` passes); True when something is."""
        with self._ready:
            return self._ready.wait_for(lambda: self._unread > 0, timeout)

    def peek(self, max_records: int, max_bytes: int) -> list[bytes]:
        """The oldest unread records, at least one if any, without consuming them."""
        with self._lock:
            out: list[bytes] = []
            self._peeked = []
            total = 0
            seq, offset = self._cursor_seq, self._cursor_offset
            for segment in self._segments:
                if segment.seq < seq or len(out) >= max_records:
                    continue
                start = offset if segment.seq == seq else 0
                with open(segment.path, "rb") as handle:
                    handle.seek(start)
                    data = handle.read(segment.size - start)
                pos = 0
                while pos + _HEADER.size <= len(data) and len(out) < max_records:
                    length, _crc = _HEADER.unpack_from(data, pos)
                    if out and total + length > max_bytes:
                        return out
                    end = pos + _HEADER.size + length
                    out.append(data[pos + _HEADER.size : end])
                    total += length
                    pos = end
                    self._peeked.append((segment.seq, start + pos))
            return out

    def ack(self, count: int) -> None:
        """Consumes the first ``count`` records of the last peek."""
        with self._lock:
            if count <= 0 or count > len(self._peeked):
                return  # the peeked records were dropped in the meantime; nothing to consume
            self._cursor_seq, self._cursor_offset = self._peeked[count - 1]
            self._peeked = self._peeked[count:]
            self._unread -= count
            while len(self._segments) > 1 and (
                self._segments[0].seq < self._cursor_seq
                or (
                    self._segments[0].seq == self._cursor_seq
                    and self._cursor_offset >= self._segments[0].size
                )
            ):
                done = self._segments.pop(0)
                done.path.unlink(missing_ok=True)
                if done.seq == self._cursor_seq:
                    self._cursor_seq, self._cursor_offset = self._segments[0].seq, 0
            self._save_cursor()

    def _save_cursor(self) -> None:
        tmp = self.directory / "cursor.tmp"
        with open(tmp, "w") as handle:
            json.dump({"seq": self._cursor_seq, "offset": self._cursor_offset}, handle)
            handle.flush()
            if self._fsync:
                os.fsync(handle.fileno())
        os.replace(tmp, self.directory / "cursor")

    def close(self) -> None:
        with self._lock:
            self._head.close()
