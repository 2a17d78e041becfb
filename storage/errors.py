"""Which storage failures are worth retrying: the classifier that ``apm.retry.call_with_retry``
takes as ``transient`` wherever the platform retries a Cassandra call (docs/storage.md,
"Failures").

Transient: the request may succeed if sent again unchanged (a timeout, a replica or the
coordinator unavailable or overloaded, a node bootstrapping, no host reachable, a broken
connection). Everything else is deterministic: Cassandra refused the request itself
(``InvalidRequest``, a syntax or configuration error, unauthorized), or the repository refused
a value (``ValueError``); sending it again gives the same answer, so it is never retried.
"""

from __future__ import annotations

__all__ = ["is_transient"]


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
