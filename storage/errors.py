"""Which storage failures are worth retrying, and which mean the database is unavailable: the
one place that classifies Cassandra's exceptions.

:func:`is_transient` is what ``apm.retry.call_with_retry`` takes as ``transient`` wherever the
platform retries a Cassandra call (docs/storage.md, "Failures"). :func:`is_unavailable` is what
the dashboard answers with a 503 or a banner instead of a retry.

Transient: the request may succeed if sent again unchanged (a timeout, a replica or the
coordinator unavailable or overloaded, a node bootstrapping, no host reachable, a broken
connection). Everything else is deterministic: Cassandra refused the request itself
(``InvalidRequest``, a syntax or configuration error, unauthorized), or the repository refused
a value (``ValueError``); sending it again gives the same answer, so it is never retried.
"""

from __future__ import annotations

__all__ = ["is_transient", "is_unavailable"]


def _transient_types() -> tuple[type[BaseException], ...]:
    from cassandra import OperationTimedOut, Timeout, Unavailable
    from cassandra.cluster import NoHostAvailable
    from cassandra.connection import ConnectionException, ConnectionShutdown
    from cassandra.protocol import IsBootstrappingErrorMessage, OverloadedErrorMessage

    return (
        OperationTimedOut,  # the client's own request timeout
        Timeout,  # ReadTimeout, WriteTimeout: the replicas did not answer in time
        Unavailable,
        NoHostAvailable,
        ConnectionException,
        ConnectionShutdown,
        OverloadedErrorMessage,
        IsBootstrappingErrorMessage,
        ConnectionError,  # the socket level
        TimeoutError,
    )


_TYPES: tuple[type[BaseException], ...] | None = None


def is_transient(exc: BaseException) -> bool:
    """True if sending the same request again may succeed (see the module docstring)."""
    global _TYPES
    if _TYPES is None:
        _TYPES = _transient_types()
    return isinstance(exc, _TYPES)


def _unavailable_types() -> tuple[type[BaseException], ...]:
    from cassandra import OperationTimedOut, RequestExecutionException
    from cassandra.cluster import NoHostAvailable
    from cassandra.connection import ConnectionException
    from cassandra.protocol import ServerError

    # RequestExecutionException: Unavailable, read/write timeouts and failures, Overloaded,
    # IsBootstrapping. Not RequestValidationException (InvalidRequest, SyntaxException...).
    return (
        OSError,
        OperationTimedOut,
        RequestExecutionException,
        NoHostAvailable,
        ConnectionException,
        ServerError,
    )


_UNAVAILABLE: tuple[type[BaseException], ...] | None = None


def is_unavailable(exc: BaseException) -> bool:
    """True when ``exc`` says the database cannot serve now: unreachable, timed out,
    overloaded, starting up, or a read or write that failed on the replicas (worth a 503 and
    a later try). A request the database refuses as invalid, or any other exception, is a bug
    or bad input that got through, and must not pass for an outage."""
    global _UNAVAILABLE
    if _UNAVAILABLE is None:
        _UNAVAILABLE = _unavailable_types()
    return isinstance(exc, _UNAVAILABLE)
