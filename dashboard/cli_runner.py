"""What ``apm user``, ``apm token`` and ``apm audit`` share: connecting to the keyspace of
``APM_STORAGE_*``, running one action on it, and mapping what went wrong to one line on
stderr and an exit code. Each command checks its input first (:func:`refuse`), before and
without a connection.

Standard library only at top level: apm.cli imports the commands for every command.
Exit codes: 0 ok, 1 (:data:`EXIT_NOT_FOUND`) no such user or token, one that exists, or
Cassandra unreachable, 2 (:data:`EXIT_BAD_INPUT`) bad input or a bad setting."""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

__all__ = ["EXIT_BAD_INPUT", "EXIT_NOT_FOUND", "connect", "iso", "refuse", "run_on_storage"]

EXIT_NOT_FOUND, EXIT_BAD_INPUT = 1, 2


def iso(ts: float | None) -> str | None:
    """Epoch seconds as ISO 8601 in UTC, as the commands print times; None stays None."""
    return None if ts is None else datetime.fromtimestamp(ts, UTC).isoformat()


def refuse(prog: str, problem: str) -> int:
    """Bad input: one line naming ``prog`` on stderr, exit 2."""
    print(f"{prog}: {problem}", file=sys.stderr)
    return EXIT_BAD_INPUT


def connect() -> Any:
    """The repository over ``APM_STORAGE_*``; StorageUnavailable when unreachable."""
    from cassandra import DriverException
    from cassandra.cluster import NoHostAvailable

    from dashboard.guard import StorageUnavailable
    from storage.repository import Repository

    try:
        return Repository.connect()
    except (NoHostAvailable, DriverException) as exc:
        raise StorageUnavailable(f"storage unavailable: {exc}") from exc


def run_on_storage(prog: str, act: Callable[[Any], int]) -> int:
    """``act(repository)``'s exit code, the repository closed after; a refusal or an outage
    is one line on stderr and its exit code."""
    from pydantic import ValidationError

    from dashboard.guard import StorageUnavailable
    from dashboard.users import UserConflict, UserError

    try:
        with connect() as repo:
            return act(repo)
    except (UserConflict, StorageUnavailable) as exc:  # before UserError: it is one
        problem, code = str(exc), EXIT_NOT_FOUND
    except UserError as exc:
        problem, code = str(exc), EXIT_BAD_INPUT
    except ValidationError as exc:
        problem, code = f"bad APM_STORAGE_* setting: {exc}", EXIT_BAD_INPUT
    print(f"{prog}: {problem}", file=sys.stderr)
    return code
