"""One storage call, guarded: a failure of the database itself (``storage.errors.is_unavailable``)
becomes :class:`StorageUnavailable` (a banner on a page, a 503 from an API). Below ``api.py``
and ``states.py``, which both use it (they imported each other over it)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from dashboard.telemetry import DashboardTelemetry
from storage.errors import is_unavailable

__all__ = ["StorageUnavailable", "guarded"]

log = logging.getLogger(__name__)
T = TypeVar("T")


class StorageUnavailable(RuntimeError):
    pass


def guarded(telemetry: DashboardTelemetry, op: str, call: Callable[[], T]) -> T:
    """Runs one storage call; a failure of the database itself (unreachable, timed out,
    overloaded: ``storage.errors.is_unavailable``) becomes StorageUnavailable (a 503 / a banner).
    Anything else propagates: a bug or bad input is never reported as an outage."""
    try:
        return call()
    except Exception as exc:
        if not is_unavailable(exc):
            raise
        telemetry.storage_errors.labels(op).inc()
        log.warning("storage %s failed: %s", op, exc)
        raise StorageUnavailable(f"storage unavailable during {op}: {exc}") from exc
