"""What records a change for the audit log: one call after a change was stored, made by the
service that stored it (the dashboard's queries, dashboards and share links, alerting's
rulebook, the users and tokens). Who made it and from where is the recorder's to know; the
service says what changed. :data:`NO_AUDIT` records nothing (tests, tools without a store).
"""

from __future__ import annotations

from typing import Any, Final, Protocol

__all__ = ["KINDS", "NO_AUDIT", "Recorder"]

# Every kind of object whose changes are recorded (the filter of GET /api/audit names these).
KINDS: Final = (
    "query",
    "dashboard",
    "share_link",
    "alert_rule",
    "silence",
    "user",
    "token",
)


class Recorder(Protocol):
    def record(self, kind: str, object_id: str, action: str, before: Any, after: Any) -> None:
        """``object_id`` of ``kind`` went from ``before`` to ``after`` (JSON-able; None: it
        did not exist, or does not any more) by ``action``. Called only once the change is
        stored; never raises (a failure to record is the recorder's to log and count)."""
        ...


class _Nothing:
    def record(self, kind: str, object_id: str, action: str, before: Any, after: Any) -> None:
        return None


NO_AUDIT: Final[Recorder] = _Nothing()
