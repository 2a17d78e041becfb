"""Which exceptions from a storage call mean "storage unavailable" (a 503, a banner on the
pages) and which do not. Only the database being unreachable, timing out, overloaded or
starting up is a storage failure; a request the database refuses as invalid, or any other
exception, is a bug or bad input that got through, and must not pass for an outage."""

from __future__ import annotations

__all__ = ["is_storage_failure"]


def _driver_failures() -> tuple[type[BaseException], ...]:
    try:
        from cassandra import OperationTimedOut, RequestExecutionException
        from cassandra.cluster import NoHostAvailable
        from cassandra.connection import ConnectionException
        from cassandra.protocol import ServerError
    except ImportError:  # the driver is a dependency; without it only OSError counts
        return ()
    # RequestExecutionException: Unavailable, read/write timeouts and failures, Overloaded,
    # IsBootstrapping. Not RequestValidationException (InvalidRequest, SyntaxException...).
    return (
        OperationTimedOut,
        RequestExecutionException,
        NoHostAvailable,
        ConnectionException,
        ServerError,
    )


_FAILURES: tuple[type[BaseException], ...] = (OSError, *_driver_failures())


def is_storage_failure(exc: BaseException) -> bool:
    """True when ``exc`` says the database cannot serve now (worth a 503 and a retry)."""
    return isinstance(exc, _FAILURES)
