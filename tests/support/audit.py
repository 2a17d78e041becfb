"""An in-memory stand-in for storage.audit.AuditStore with the same edges (a day's rows
newest first, strictly below a time UUID, at most ``limit``), for unit tests of the audit
log's reads; tests/storage/test_audit.py holds both to the same contract."""

from __future__ import annotations

import uuid
from datetime import date

from storage.audit import DEFAULT_RETENTION_DAYS, AuditRow

__all__ = ["MemoryAudit"]


def _order(at: uuid.UUID) -> tuple[int, bytes]:
    # Cassandra orders time UUIDs by their time, then by their bytes.
    return at.time, at.bytes


class MemoryAudit:
    def __init__(self, retention_days: int = DEFAULT_RETENTION_DAYS) -> None:
        self.retention_days = retention_days
        self.rows: dict[date, list[AuditRow]] = {}
        self.reads = 0  # day slices read

    def add(self, row: AuditRow) -> None:
        self.rows.setdefault(row.day, []).append(row)

    def day(self, day: date, below: uuid.UUID | None, limit: int) -> list[AuditRow]:
        self.reads += 1
        rows = sorted(self.rows.get(day, []), key=lambda r: _order(r.at), reverse=True)
        if below is not None:
            rows = [r for r in rows if _order(r.at) < _order(below)]
        return rows[:limit]
